"""Log sources: an application log, a web access log, a directory of service logs.

Malformed lines (stack traces, markers, bad requests, records cut off mid-line) come with
the noise level. The cut-off records keep a real record's start (timestamp, level, or a
client's IP), so a solution that does not check a record's shape picks them up; an
identifier is sometimes logged again at the same level (a retried job).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable

from taskloom.generators.procedural.artifacts import (
    AccessLog,
    AccessRecord,
    AppLog,
    AppRecord,
    LogDir,
)
from taskloom.generators.procedural.primitives.base import StepContext, source
from taskloom.generators.procedural.sources.common import clf_time, iso, noisy, spaced
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, lines_text

LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR")
AGENTS = ("curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64)", "python-requests/2.32",
          "Googlebot/2.1", "k6/0.52", "Wget/1.21")
APP_LOG_NOISE = ("### log rotated by logrotate ###", "Traceback (most recent call last):",
                 "    at com.example.Worker.run(Worker.java:42)", "", "--- restart ---",
                 "2025-11-2", "  caused by: connection reset by peer")
ACCESS_LOG_NOISE = ('bad request line: "\\x16\\x03\\x01"', "-", "GET / HTTP/1.1",
                    "10.0.0.1 - - [truncated")


def app_records(ctx: StepContext, count: int, start: int) -> list[AppRecord]:
    """Application log records in time order."""
    records = []
    seen: dict[str, list[str]] = {}  # the identifiers logged at each level so far
    moment = start
    for _ in range(count):
        moment += ctx.rng.randint(1, 90)
        level, template = ctx.rng.choice(ctx.domain.messages)
        if ctx.rng.random() < 0.25:
            level = ctx.rng.choice(LEVELS)
            template = ctx.rng.choice([m for lv, m in ctx.domain.messages if lv == level] or
                                      [template])
        ident = f"{ctx.rng.choice('abcdef')}{ctx.rng.randint(1000, 9999)}"
        if seen.get(level) and ctx.rng.random() < 0.3:  # the same job, retried
            ident = ctx.rng.choice(seen[level])
        elif "{id}" in template:
            seen.setdefault(level, []).append(ident)
        message = template.format(id=ident,
                                  n=ctx.rng.randint(2, 900),
                                  user=ctx.rng.choice(ctx.domain.people),
                                  svc=ctx.rng.choice(ctx.domain.services))
        records.append(AppRecord(iso(moment), level, ctx.rng.choice(ctx.domain.services),
                                 message))
    for level in ("ERROR", "WARN", "INFO"):  # every level a primitive may ask for is present
        if sum(r.level == level for r in records) < 2:
            for index in ctx.rng.sample(range(len(records)), 2):
                old = records[index]
                records[index] = AppRecord(old.timestamp, level, old.component, old.message)
    return records


def with_noise(ctx: StepContext, lines: list[str], pool: tuple[str, ...],
               count: int | None = None) -> list[str]:
    """Insert `count` (default: by the noise level) malformed lines at random places."""
    lines = list(lines)
    for _ in range(noisy(ctx) if count is None else count):
        lines.insert(ctx.rng.randint(0, len(lines)), ctx.rng.choice(pool))
    return lines


def _cut_off(ctx: StepContext, lines: list[str], picks: list[int],
             cut: Callable[[int], str]) -> list[str]:
    """Insert before each picked record a copy of it cut off mid-line.

    As a write interrupted by a crash or a full disk, then written again, leaves it.
    """
    lines = list(lines)
    for index in sorted(set(picks), reverse=True):  # records are lines[index] (no noise yet)
        lines.insert(index, cut(index))
    return lines


def app_noisy_lines(ctx: StepContext, records: list[AppRecord]) -> list[str]:
    """The log's lines: records, records cut off in the component, and pool noise.

    The first cut-off record is an ERROR one (when there is one), the others any level but
    DEBUG.
    """
    count = noisy(ctx)
    cuts = max(1, count // 2) if count else 0
    picks = []
    for number in range(cuts):
        wanted = [i for i, r in enumerate(records)
                  if (r.level == "ERROR" if number == 0 else r.level != "DEBUG")]
        picks.append(ctx.rng.choice(wanted or range(len(records))))

    def cut(index: int) -> str:
        record = records[index]
        kept = ctx.rng.randint(0, len(record.component) - 1)
        return f"{record.timestamp} {record.level} [{record.component[:kept]}".rstrip(" [")

    lines = _cut_off(ctx, [r.line() for r in records], picks, cut)
    return with_noise(ctx, lines, APP_LOG_NOISE, count - len(set(picks)))


def access_noisy_lines(ctx: StepContext, records: list[AccessRecord]) -> list[str]:
    """The log's lines: requests, requests cut off in the request line, and pool noise.

    The first cut-off request is one of the busiest client's.
    """
    count = noisy(ctx)
    cuts = max(1, count // 2) if count else 0
    busiest = Counter(r.ip for r in records).most_common(1)[0][0] if records else ""
    picks = []
    for number in range(cuts):
        wanted = [i for i, r in enumerate(records) if number or r.ip == busiest]
        picks.append(ctx.rng.choice(wanted or range(len(records))))

    def cut(index: int) -> str:
        record = records[index]
        request = f"{record.method} {record.path} HTTP/1.1"
        kept = ctx.rng.choice([k for k in range(1, len(request)) if request[k - 1] != " "])
        return f'{record.ip} - - [{record.time}] "{request[:kept]}'

    lines = _cut_off(ctx, [r.line() for r in records], picks, cut)
    return with_noise(ctx, lines, ACCESS_LOG_NOISE, count - len(set(picks)))


@source("app_log")
def app_log(ctx: StepContext) -> AppLog:
    """One service's application log."""
    service = ctx.rng.choice(ctx.domain.services)
    records = app_records(ctx, ctx.count((12, 20), (60, 150), (400, 900)),
                          EPOCH_NOW - 2 * DAY)
    lines = app_noisy_lines(ctx, records)
    path = f"/var/log/{ctx.domain.name}/{spaced(ctx, service + '.log')}"
    ctx.world.add(path, lines_text(lines))
    _distractors(ctx, f"/var/log/{ctx.domain.name}", "log")
    return AppLog(path=path, phrase=f"the {service} log `{path}`", lines=tuple(lines),
                  records=tuple(records))


@source("access_log")
def access_log(ctx: StepContext) -> AccessLog:
    """A web server access log in nginx combined format."""
    ips = [f"10.{ctx.rng.randint(0, 3)}.{ctx.rng.randint(0, 40)}.{ctx.rng.randint(2, 250)}"
           for _ in range(ctx.count((4, 6), (10, 20), (30, 60)))]
    moment = EPOCH_NOW - DAY
    records = []
    for _ in range(ctx.count((15, 25), (80, 200), (500, 1200))):
        moment += ctx.rng.randint(1, 40)
        status = ctx.rng.choice((200, 200, 200, 200, 301, 304, 404, 404, 500, 502, 503))
        records.append(AccessRecord(
            ip=ctx.rng.choice(ips[:3]) if ctx.rng.random() < 0.4 else ctx.rng.choice(ips),
            time=clf_time(moment), method=ctx.rng.choice(("GET", "GET", "GET", "POST")),
            path=ctx.rng.choice(ctx.domain.url_paths), status=status,
            size=ctx.rng.randint(120, 40_000), agent=ctx.rng.choice(AGENTS)))
    for status in (500, 404):
        if not any(r.status == status for r in records):
            index = ctx.rng.randrange(len(records))
            old = records[index]
            records[index] = AccessRecord(old.ip, old.time, old.method, old.path, status,
                                          old.size, old.agent)
    lines = access_noisy_lines(ctx, records)
    path = f"/var/log/nginx/{spaced(ctx, 'access.log')}"
    ctx.world.add(path, lines_text(lines))
    _distractors(ctx, "/var/log/nginx", "log")
    return AccessLog(path=path, phrase=f"the web access log `{path}`", lines=tuple(lines),
                     records=tuple(records))


@source("log_dir")
def log_dir(ctx: StepContext) -> LogDir:
    """A directory with one application log per service."""
    directory = f"/var/log/{ctx.domain.name}"
    services = ctx.rng.sample(ctx.domain.services, min(len(ctx.domain.services),
                                                       ctx.rng.randint(3, 4)))
    services = sorted(services)
    quiet = ctx.rng.randrange(len(services))  # a healthy service: not one ERROR record
    timelines = []
    for position in range(len(services)):
        records = app_records(ctx, ctx.count((6, 12), (30, 80), (200, 500)),
                              EPOCH_NOW - 3 * DAY)
        if position == quiet:
            records = [AppRecord(r.timestamp, "WARN", r.component, r.message)
                       if r.level == "ERROR" else r for r in records]
        timelines.append(records)
    _same_second(ctx, timelines)
    logs, mtimes = [], []
    for position, (service, records) in enumerate(zip(services, timelines, strict=True)):
        lines = app_noisy_lines(ctx, records)
        path = f"{directory}/{service}.log"
        # Half the logs are recent, half went quiet days ago (retention skills need both).
        age = ctx.rng.randint(1, 20) * 3600 if position % 2 else ctx.rng.randint(3, 12) * DAY
        ctx.world.add(path, lines_text(lines), mtime=EPOCH_NOW - age)
        logs.append(AppLog(path=path, phrase=f"`{path}`", lines=tuple(lines),
                           records=tuple(records)))
        mtimes.append(EPOCH_NOW - age)
    for index in range(noisy(ctx)):
        ctx.world.add(f"{directory}/README.{index}.txt", "Logs of the services; do not edit.\n")
    return LogDir(path=directory, phrase=f"the *.log files in `{directory}`", logs=tuple(logs),
                  mtimes=tuple(mtimes))


def _same_second(ctx: StepContext, timelines: list[list[AppRecord]]) -> None:
    """Let records of two services share a second (one event that both logged).

    In each such pair the record of the earlier file (by name) sorts after the other as
    text, so only a stable merge by timestamp keeps them in file order. Each log stays in
    time order.
    """
    for _ in range(2):
        first, second = sorted(ctx.rng.sample(range(len(timelines)), 2))
        later = timelines[second]
        stamps = [other.timestamp for other in timelines[first]]  # in time order
        rests = [other.line()[len(other.timestamp):].encode() for other in timelines[first]]
        pairs = []
        for index, record in enumerate(later):
            low = later[index - 1].timestamp if index else ""
            high = later[index + 1].timestamp if index + 1 < len(later) else "~"
            rest = record.line()[len(record.timestamp):].encode()
            pairs += [(index, stamps[j]) for j in range(bisect.bisect_left(stamps, low),
                                                        bisect.bisect_right(stamps, high))
                      if rests[j] > rest]
        if pairs:
            index, stamp = ctx.rng.choice(pairs)
            old = later[index]
            later[index] = AppRecord(stamp, old.level, old.component, old.message)


def _distractors(ctx: StepContext, directory: str, ext: str) -> None:
    for index in range(noisy(ctx) // 2):
        name = f"{ctx.rng.choice(ctx.domain.services)}.{ext}.{index + 1}"
        path = f"{directory}/{name}"
        if not ctx.world.exists(path):
            ctx.world.add(path, f"{iso(EPOCH_NOW - 9 * DAY)} INFO [old] archived entry\n")
