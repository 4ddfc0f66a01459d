"""Log sources: an application log, a web access log, a directory of service logs.

Malformed lines (stack traces, markers, bad requests) come with the noise level.
"""

from __future__ import annotations

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
    moment = start
    for _ in range(count):
        moment += ctx.rng.randint(1, 90)
        level, template = ctx.rng.choice(ctx.domain.messages)
        if ctx.rng.random() < 0.25:
            level = ctx.rng.choice(LEVELS)
            template = ctx.rng.choice([m for lv, m in ctx.domain.messages if lv == level] or
                                      [template])
        message = template.format(id=f"{ctx.rng.choice('abcdef')}{ctx.rng.randint(1000, 9999)}",
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


def with_noise(ctx: StepContext, lines: list[str], pool: tuple[str, ...]) -> list[str]:
    """Insert malformed lines at random places."""
    lines = list(lines)
    for _ in range(noisy(ctx)):
        lines.insert(ctx.rng.randint(0, len(lines)), ctx.rng.choice(pool))
    return lines


@source("app_log")
def app_log(ctx: StepContext) -> AppLog:
    """One service's application log."""
    service = ctx.rng.choice(ctx.domain.services)
    records = app_records(ctx, ctx.count((12, 20), (60, 150), (400, 900)),
                          EPOCH_NOW - 2 * DAY)
    lines = with_noise(ctx, [r.line() for r in records], APP_LOG_NOISE)
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
    lines = with_noise(ctx, [r.line() for r in records], ACCESS_LOG_NOISE)
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
    logs, mtimes = [], []
    for position, service in enumerate(sorted(services)):
        records = app_records(ctx, ctx.count((6, 12), (30, 80), (200, 500)),
                              EPOCH_NOW - 3 * DAY)
        lines = with_noise(ctx, [r.line() for r in records], APP_LOG_NOISE)
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


def _distractors(ctx: StepContext, directory: str, ext: str) -> None:
    for index in range(noisy(ctx) // 2):
        name = f"{ctx.rng.choice(ctx.domain.services)}.{ext}.{index + 1}"
        path = f"{directory}/{name}"
        if not ctx.world.exists(path):
            ctx.world.add(path, f"{iso(EPOCH_NOW - 9 * DAY)} INFO [old] archived entry\n")
