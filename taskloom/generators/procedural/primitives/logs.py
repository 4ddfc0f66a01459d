"""Log analysis and rotation primitives: application logs, access logs, log directories.

Application log records are `TIMESTAMP LEVEL [component] message`; access logs use nginx's
combined format. Inputs may hold malformed lines (noise): every solution selects records by
their shape (`VALID_APP` / the status field), and the instruction says to skip the rest.

One module, though long, because it is one family (the graph's `logs.*` skills): its
thirteen primitives share those record shapes and skip notes.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from datetime import UTC, datetime

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import (
    AccessLog,
    AppLog,
    CsvTable,
    LogDir,
    Report,
    TextFile,
)
from taskloom.generators.procedural.checks import FileText, GzipContents, TreeListing
from taskloom.generators.procedural.primitives.base import StepContext, StepResult, primitive
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, lines_text, q

VALID_APP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z [A-Z]+ \[[^]]+\] "
APP_AWK = '$0 ~ /' + VALID_APP.replace("/", "\\/") + '/'
ACCESS_AWK = "$9 ~ /^[0-9][0-9][0-9]$/"
ID_PATTERN = r"\b[a-f][0-9]{4}\b"
SKIP_APP = "Lines that are not log records (stack traces, markers, blank lines) are ignored."
SKIP_ACCESS = "Malformed lines that are not requests are ignored."


def _app_input(source) -> AppLog:
    if not isinstance(source, AppLog) or not source.records:
        raise NotApplicable("needs an application log with records")
    return source


def _access_input(source) -> AccessLog:
    if not isinstance(source, AccessLog) or not source.records:
        raise NotApplicable("needs an access log with requests")
    return source


def _notes(ctx: StepContext, source, note: str) -> tuple[str, ...]:
    return (note,) if len(source.lines) != len(source.records) else ()


def _count_report(ctx: StepContext, log, counts: Counter, *, out: str, sentence: str,
                  phrase: str, label: str, select: str, field: int, note: str,
                  ranked: bool = False, top: int | None = None,
                  numeric: bool = False) -> StepResult:
    """A step that writes `KEY COUNT` lines: how many records share each value of a field.

    The caller keeps its own phrasings, output path, report phrase and check label; this
    builds the lines and the `awk | sort | uniq -c` solution. `select` is the awk condition
    on the records counted and `field` the awk field of the key. Lines are in key order
    (`numeric`: keys sorted as numbers), or `ranked`: most records first, ties by key, cut
    to the first `top`.
    """
    if ranked:
        items = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
    else:
        items = [(key, counts[key]) for key in sorted(counts)]
    lines = tuple(f"{key} {count}" for key, count in items)
    rank = " | sort -k2,2nr -k1,1" if ranked else ""
    head = f" | head -n {top}" if top else ""
    return StepResult(
        output=Report(path=out, phrase=phrase, lines=lines),
        instruction=sentence,
        solution=(f"awk '{select} {{print ${field}}}' {q(log.path)} | "
                  f"{'sort -n' if numeric else 'sort'} | uniq -c | "
                  f"awk '{{print $2, $1}}'{rank}{head} > {q(out)}"),
        checks=[FileText(label, path=out, expected=lines_text(lines),
                         compare=ctx.compare(order_matters=ranked))],
        tools=("awk", "sort", "uniq", "head") if top else ("awk", "sort", "uniq"),
        notes=_notes(ctx, log, note))


@primitive("logs.filter_level")
def filter_level(ctx: StepContext, source) -> StepResult:
    """Keep the records of one level."""
    log = _app_input(source)
    levels = sorted({r.level for r in log.records} - {"DEBUG"})
    level = ctx.rng.choice(levels)
    lines = tuple(r.line() for r in log.records if r.level == level)
    if len(lines) == len(log.records):
        raise NotApplicable("every record has the same level")
    out = ctx.output_path(f"{level.lower()}-lines", "txt")
    sentence = ctx.phrase([
        f"Extract every {level} record of {log.phrase} into `{out}`, keeping their order and "
        "their exact text.",
        f"Save the {level} lines of {log.phrase} to `{out}`, in the order they appear.",
        f"Write all log records with level {level} from {log.phrase} to `{out}`, one per line, "
        "unchanged and in their original order.",
    ]) + ctx.hint("grep or awk on the second field")
    return StepResult(
        output=TextFile(path=out, phrase=f"the {level} records of {log.phrase}", lines=lines),
        instruction=sentence,
        solution=f"awk '{APP_AWK} && $2 == \"{level}\"' {q(log.path)} > {q(out)}",
        checks=[FileText(f"`{out}` holds the {level} records", path=out,
                         expected=lines_text(lines),
                         compare=ctx.compare(order_matters=True))],
        tools=("awk",), notes=_notes(ctx, log, SKIP_APP))


@primitive("logs.count_by_level")
def count_by_level(ctx: StepContext, source) -> StepResult:
    """Count records per level."""
    log = _app_input(source)
    counts = Counter(r.level for r in log.records)
    out = ctx.output_path("level-counts", "txt")
    sentence = ctx.phrase([
        f"Count the records of each log level in {log.phrase} and write `LEVEL COUNT` lines "
        f"to `{out}`, sorted by level name.",
        f"Write to `{out}` how many records {log.phrase} has per level: one `LEVEL COUNT` line "
        "per level, levels in alphabetical order.",
        f"Produce `{out}` with a line `LEVEL COUNT` for every level present in {log.phrase}, "
        "ordered alphabetically by level.",
    ]) + ctx.hint("awk and sort | uniq -c")
    return _count_report(
        ctx, log, counts, out=out, sentence=sentence,
        phrase=(f"the record count per level of {log.phrase} (`LEVEL COUNT` lines, levels in "
                "alphabetical order)"),
        label=f"`{out}` counts records per level", select=APP_AWK, field=2, note=SKIP_APP)


@primitive("logs.time_window")
def time_window(ctx: StepContext, source) -> StepResult:
    """Keep the records in a time window."""
    log = _app_input(source)
    if len(log.records) < 6:
        raise NotApplicable("too few records for a window")
    stamps = sorted(r.timestamp for r in log.records)
    first = ctx.rng.randint(1, len(stamps) // 3)
    last = ctx.rng.randint(2 * len(stamps) // 3, len(stamps) - 1)
    start, end = stamps[first], stamps[last]
    records = tuple(r for r in log.records if start <= r.timestamp < end)
    if len(records) < 3 or start == end:
        raise NotApplicable("window too narrow")
    out = ctx.output_path("window", "log")
    sentence = ctx.phrase([
        f"Copy the records of {log.phrase} with a timestamp from {start} (inclusive) to {end} "
        f"(exclusive) into `{out}`, unchanged and in order.",
        f"Cut {log.phrase} down to the window [{start}, {end}) and save those records to "
        f"`{out}`; keep each record's line exactly as it is.",
        f"Write to `{out}` every record of {log.phrase} logged at or after {start} and before "
        f"{end}, in their original order.",
    ]) + ctx.hint("ISO timestamps compare as strings in awk")
    lines = tuple(r.line() for r in records)
    return StepResult(
        output=AppLog(path=out, phrase=f"the records of {log.phrase} between {start} and {end}",
                      lines=lines, records=records),
        instruction=sentence,
        solution=(f"awk -v a={q(start)} -v b={q(end)} '{APP_AWK} && $1 >= a && $1 < b' "
                  f"{q(log.path)} > {q(out)}"),
        checks=[FileText(f"`{out}` holds the records of the window", path=out,
                         expected=lines_text(lines),
                         compare=ctx.compare(order_matters=True))],
        tools=("awk",), notes=_notes(ctx, log, SKIP_APP))


@primitive("logs.extract_ids")
def extract_ids(ctx: StepContext, source) -> StepResult:
    """Pull the identifiers out of the messages of one level."""
    log = _app_input(source)
    levels = [lv for lv in ("ERROR", "WARN", "INFO")
              if any(re.search(ID_PATTERN, r.line()) for r in log.records if r.level == lv)]
    if not levels:
        raise NotApplicable("no identifiers in the messages")
    level = ctx.rng.choice(levels)
    ids = tuple(found for r in log.records if r.level == level
                for found in re.findall(ID_PATTERN, r.line()))
    out = ctx.output_path(f"{level.lower()}-ids", "txt")
    sentence = ctx.phrase([
        f"Identifiers in {log.phrase} look like `a1234` (a letter a-f then four digits). "
        f"Write every identifier that appears in a {level} record to `{out}`, one per line, "
        "in order of appearance (repeats included).",
        f"List the ids (one letter a-f followed by four digits, e.g. `c0420`) mentioned by the "
        f"{level} records of {log.phrase} in `{out}`: one per line, in the order they occur, "
        "keeping repeats.",
        f"From the {level} records of {log.phrase}, extract each identifier of the form "
        f"letter a-f + four digits (like `e9051`) into `{out}`, one per line, in log order "
        "with duplicates kept.",
    ]) + ctx.hint("grep -oE")
    return StepResult(
        output=TextFile(
            path=out, phrase=f"the identifiers in the {level} records of {log.phrase}",
            lines=ids),
        instruction=sentence,
        solution=(f"awk '{APP_AWK} && $2 == \"{level}\"' {q(log.path)} | "
                  f"grep -oE '{ID_PATTERN}' > {q(out)}"),
        checks=[FileText(f"`{out}` lists the {level} identifiers", path=out,
                         expected=lines_text(ids),
                         compare=ctx.compare(order_matters=True))],
        tools=("awk", "grep"), notes=_notes(ctx, log, SKIP_APP))


@primitive("logs.to_csv")
def to_csv(ctx: StepContext, source) -> StepResult:
    """Parse records into CSV columns."""
    log = _app_input(source)
    if any("," in r.message for r in log.records):
        raise NotApplicable("messages contain commas")
    header = ("timestamp", "level", "component", "message")
    rows = tuple((r.timestamp, r.level, r.component, r.message) for r in log.records)
    out = ctx.output_path("records", "csv")
    sentence = ctx.phrase([
        f"Convert {log.phrase} into the CSV file `{out}` with the header "
        "`timestamp,level,component,message` and one row per record (component without "
        "brackets), in log order.",
        f"Write `{out}`: a CSV with columns timestamp, level, component, message (header "
        f"first), one row per record of {log.phrase}, same order; drop the brackets around "
        "the component.",
        f"Turn every record of {log.phrase} into a row of `{out}` (header "
        "`timestamp,level,component,message`; the component without its square brackets), "
        "keeping the order of the log.",
    ]) + ctx.hint("gawk's match() with capture groups")
    expected = CsvTable(path=out, phrase="", header=header, rows=rows).text()
    return StepResult(
        output=CsvTable(path=out, phrase=f"the records of {log.phrase} as CSV", header=header,
                        rows=rows),
        instruction=sentence,
        solution=(f"{{ echo 'timestamp,level,component,message'; awk 'match($0, "
                  f"/^([^ ]+) ([A-Z]+) \\[([^]]+)\\] (.*)$/, m) && {APP_AWK} "
                  f"{{print m[1] \",\" m[2] \",\" m[3] \",\" m[4]}}' {q(log.path)}; }} "
                  f"> {q(out)}"),
        checks=[FileText(f"`{out}` holds the records as CSV", path=out, expected=expected,
                         compare=ctx.compare(order_matters=True))],
        tools=("awk",), notes=_notes(ctx, log, SKIP_APP))


@primitive("logs.top_clients")
def top_clients(ctx: StepContext, source) -> StepResult:
    """Rank client IPs by requests."""
    log = _access_input(source)
    counts = Counter(r.ip for r in log.records)
    if len(counts) < 3:
        raise NotApplicable("too few clients")
    top = min(len(counts) - 1, ctx.pick_number(3, 5, allowed=(1, len(counts) - 1)))
    out = ctx.output_path("top-clients", "txt")
    sentence = ctx.phrase([
        f"Find the {top} client IPs that sent the most requests in {log.phrase} and write "
        f"them to `{out}` as `IP COUNT` lines, busiest first (ties: IP in ascending string "
        "order).",
        f"Write the top {top} clients of {log.phrase} to `{out}`: one `IP COUNT` line each, "
        "sorted by count descending, ties broken by the IP as a string ascending.",
        f"Rank the clients of {log.phrase} by number of requests and save the first {top} to "
        f"`{out}` as `IP COUNT` (highest count first; equal counts ordered by IP string).",
    ]) + ctx.hint("awk '{print $1}' | sort | uniq -c | sort")
    return _count_report(
        ctx, log, counts, out=out, sentence=sentence,
        phrase=f"the {top} busiest clients of {log.phrase} (`IP COUNT` lines, busiest first)",
        label=f"`{out}` ranks the top clients", select=ACCESS_AWK, field=1, note=SKIP_ACCESS,
        ranked=True, top=top)


@primitive("logs.status_summary")
def status_summary(ctx: StepContext, source) -> StepResult:
    """Requests per HTTP status."""
    log = _access_input(source)
    counts = Counter(r.status for r in log.records)
    out = ctx.output_path("status-counts", "txt")
    sentence = ctx.phrase([
        f"Count the requests per HTTP status code in {log.phrase} and write `STATUS COUNT` "
        f"lines to `{out}`, status codes ascending.",
        f"Summarize {log.phrase} by response status into `{out}`: one `STATUS COUNT` line per "
        "status code, in ascending numeric order.",
        f"Write to `{out}` how many requests of {log.phrase} ended with each HTTP status, as "
        "`STATUS COUNT`, ordered by status code.",
    ]) + ctx.hint("the status is field 9")
    return _count_report(
        ctx, log, counts, out=out, sentence=sentence,
        phrase=(f"the request count per HTTP status in {log.phrase} (`STATUS COUNT` lines, by "
                "status code)"),
        label=f"`{out}` counts requests per status", select=ACCESS_AWK, field=9,
        note=SKIP_ACCESS, numeric=True)


@primitive("logs.failing_paths")
def failing_paths(ctx: StepContext, source) -> StepResult:
    """Rank paths by server errors."""
    log = _access_input(source)
    counts = Counter(r.path for r in log.records if r.status >= 500)
    if not counts:
        raise NotApplicable("no server errors")
    out = ctx.output_path("failing-paths", "txt")
    sentence = ctx.phrase([
        f"For every request path in {log.phrase} that got at least one 5xx response, write "
        f"`PATH COUNT` (number of 5xx responses) to `{out}`, most failures first, ties by "
        "path ascending.",
        f"List in `{out}` the paths of {log.phrase} that failed with a server error (status "
        "500-599) as `PATH COUNT`, sorted by count descending then path ascending.",
        f"Which paths of {log.phrase} return server errors? Write one `PATH COUNT` line per "
        f"path with 5xx responses to `{out}`, highest count first (equal counts: path order).",
    ]) + ctx.hint("awk '$9 >= 500'")
    return _count_report(
        ctx, log, counts, out=out, sentence=sentence,
        phrase=(f"the paths with server errors in {log.phrase} (`PATH COUNT` lines, most "
                "errors first)"),
        label=f"`{out}` ranks paths by server errors", select=f"{ACCESS_AWK} && $9 >= 500",
        field=7, note=SKIP_ACCESS, ranked=True)


@primitive("logs.access_to_csv")
def access_to_csv(ctx: StepContext, source) -> StepResult:
    """Turn requests into CSV rows."""
    log = _access_input(source)
    header = ("ip", "time", "method", "path", "status", "bytes")
    rows = tuple((r.ip, r.time.split(" ")[0], r.method, r.path, str(r.status), str(r.size))
                 for r in log.records)
    out = ctx.output_path("requests", "csv")
    sentence = ctx.phrase([
        f"Convert {log.phrase} to the CSV file `{out}` with header "
        "`ip,time,method,path,status,bytes`, one row per request in log order; `time` is the "
        "bracketed timestamp without brackets and without the `+0000` offset.",
        f"Write `{out}`: header `ip,time,method,path,status,bytes`, then one row per request of "
        f"{log.phrase} (same order); take the time from inside the brackets, dropping the "
        "`+0000` zone.",
        f"Build a CSV `{out}` from {log.phrase} with the columns ip, time (e.g. "
        "`29/Nov/2025:10:00:00`, no brackets, no zone), method, path, status and bytes, "
        "header first, requests in their original order.",
    ]) + ctx.hint("awk with gsub on the bracket")
    expected = CsvTable(path=out, phrase="", header=header, rows=rows).text()
    return StepResult(
        output=CsvTable(path=out, phrase=f"the requests of {log.phrase} as CSV", header=header,
                        rows=rows, numeric=("status", "bytes")),
        instruction=sentence,
        solution=(f"{{ echo 'ip,time,method,path,status,bytes'; awk '{ACCESS_AWK} "
                  f"{{t=$4; sub(/^\\[/, \"\", t); m=$6; sub(/^\"/, \"\", m); "
                  f"print $1 \",\" t \",\" m \",\" $7 \",\" $9 \",\" $10}}' {q(log.path)}; }} "
                  f"> {q(out)}"),
        checks=[FileText(f"`{out}` holds the requests as CSV", path=out, expected=expected,
                         compare=ctx.compare(order_matters=True))],
        tools=("awk",), notes=_notes(ctx, log, SKIP_ACCESS))


def _dir_input(source) -> LogDir:
    if not isinstance(source, LogDir) or len(source.logs) < 2:
        raise NotApplicable("needs a directory with several logs")
    return source


def _service(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".log")


@primitive("logs.merge_sorted")
def merge_sorted(ctx: StepContext, source) -> StepResult:
    """Merge the logs of a directory by timestamp."""
    logs = _dir_input(source)
    ordered = sorted(logs.logs, key=lambda log: log.path)
    merged = sorted((r for log in ordered for r in log.records), key=lambda r: r.timestamp)
    if not merged:
        raise NotApplicable("the logs hold no records")
    out = ctx.output_path("merged", "log")
    sentence = ctx.phrase([
        f"Merge the records of {logs.phrase} into `{out}`, ordered by timestamp; records with "
        "the same timestamp keep the order of the file names (alphabetical) and of their "
        "file.",
        f"Write `{out}`: every record of {logs.phrase} in one stream sorted by time (a stable "
        "sort: equal timestamps stay in file-name order, then line order).",
        f"Combine {logs.phrase} into a single time-ordered log `{out}` (stable on ties: "
        "alphabetical file order, then original line order), records unchanged.",
    ]) + ctx.hint("sort -s -k1,1")
    lines = tuple(r.line() for r in merged)
    return StepResult(
        output=AppLog(path=out, phrase=f"all records of {logs.phrase} merged by time",
                      lines=lines, records=tuple(merged)),
        instruction=sentence,
        solution=(f"for f in {q(logs.path)}/*.log; do awk '{APP_AWK}' \"$f\"; done | "
                  f"sort -s -k1,1 > {q(out)}"),
        checks=[FileText(f"`{out}` is the time-ordered merge", path=out,
                         expected=lines_text(lines),
                         compare=ctx.compare(order_matters=True))],
        tools=("awk", "sort"), notes=(SKIP_APP,))


@primitive("logs.error_summary_per_service")
def error_summary(ctx: StepContext, source) -> StepResult:
    """Count ERROR records per service log."""
    logs = _dir_input(source)
    ordered = sorted(logs.logs, key=lambda log: log.path)
    lines = tuple(f"{_service(log.path)} {sum(r.level == 'ERROR' for r in log.records)}"
                  for log in ordered)
    if all(line.endswith(" 0") for line in lines):
        raise NotApplicable("no errors anywhere")
    out = ctx.output_path("errors-per-service", "txt")
    sentence = ctx.phrase([
        f"For each log in {logs.phrase}, count its ERROR records and write `SERVICE COUNT` "
        f"to `{out}` (SERVICE is the file name without `.log`), services in alphabetical "
        "order, zero counts included.",
        f"Write `{out}` with one `SERVICE COUNT` line per *.log file of `{logs.path}`: the service "
        "is the file name minus `.log`, COUNT its number of ERROR records; alphabetical "
        "order, include services with 0.",
        f"Report how many ERROR records each service logged: `SERVICE COUNT` lines in `{out}` "
        f"for every .log file in `{logs.path}`, sorted by service name, zeros included.",
    ]) + ctx.hint("a for loop with awk | wc -l")
    return StepResult(
        output=Report(
            path=out, phrase=(f"the ERROR count of each service in {logs.phrase} (`SERVICE COUNT` "
                               "lines, by service name)"),
            lines=lines),
        instruction=sentence,
        solution=(f"for f in {q(logs.path)}/*.log; do printf '%s %s\\n' "
                  f"\"$(basename \"$f\" .log)\" \"$(awk '{APP_AWK} && $2 == \"ERROR\"' \"$f\" "
                  f"| wc -l)\"; done > {q(out)}"),
        checks=[FileText(f"`{out}` counts errors per service", path=out,
                         expected=lines_text(lines),
                         compare=ctx.compare())],
        tools=("awk", "wc"), notes=(SKIP_APP,))


def _stamp(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


@primitive("logs.rotate_keep")
def rotate_keep(ctx: StepContext, source) -> StepResult:
    """Rotate every log, keeping N compressed generations."""
    logs = _dir_input(source)
    if None in logs.mtimes or len(logs.mtimes) != len(logs.logs):
        raise NotApplicable("rotation needs the logs as shipped, not a processed directory")
    keep = ctx.pick_number(2, 4, allowed=(1, 9))
    expected_files: dict[str, bytes] = {}
    listing = [p.rsplit("/", 1)[-1] for p in ctx.world.files
               if p.startswith(logs.path + "/") and "/" not in p[len(logs.path) + 1:]
               and not p.endswith(".log")]
    rotated = []
    for log in sorted(logs.logs, key=lambda item: item.path):
        name = log.path.rsplit("/", 1)[-1]
        existing = ctx.rng.randint(0, keep)
        generations = {}
        for number in range(1, existing + 1):
            content = f"{name} generation {number}\n".encode()
            generations[number] = content
            ctx.world.add(f"{log.path}.{number}.gz", gzip.compress(content, mtime=0),
                          mtime=EPOCH_NOW - number * DAY)
        expected_files[f"{log.path}.1.gz"] = log.text().encode()
        for number, content in generations.items():
            if number + 1 <= keep:
                expected_files[f"{log.path}.{number + 1}.gz"] = content
        rotated.append(AppLog(path=log.path, phrase=log.path, lines=(), records=()))
    names = sorted([p.rsplit("/", 1)[-1] for p in expected_files] +
                   [log.path.rsplit("/", 1)[-1] for log in logs.logs] + listing)
    sentence = ctx.phrase([
        f"Rotate every `*.log` file in `{logs.path}` the way logrotate does with `rotate {keep}` "
        "and `compress`: `X.log.N.gz` becomes `X.log.(N+1).gz`, generations above "
        f"{keep} are deleted, `X.log` is gzip-compressed to `X.log.1.gz` and then emptied "
        "(keep the empty file). Leave other files alone.",
        f"Apply a log rotation to `{logs.path}`: for each `X.log`, shift the compressed "
        f"generations up by one (`.1.gz`→`.2.gz`...), drop any generation beyond {keep}, "
        "gzip the current log into `X.log.1.gz`, and truncate `X.log` to zero bytes. Do not "
        "touch other files.",
        f"The logs in `{logs.path}` must be rotated keeping {keep} compressed generations: "
        "move `X.log.N.gz` to `X.log.(N+1).gz` (deleting what would exceed "
        f"`.{keep}.gz`), compress `X.log` into `X.log.1.gz` and leave `X.log` empty. Other "
        "files stay as they are.",
    ]) + ctx.hint("a loop with mv and gzip -c")
    solution = (
        f"cd {q(logs.path)}\n"
        "for f in *.log; do\n"
        f"  rm -f \"$f.{keep}.gz\"\n"
        f"  for n in $(seq {keep - 1} -1 1); do\n"
        "    if [ -e \"$f.$n.gz\" ]; then mv \"$f.$n.gz\" \"$f.$((n + 1)).gz\"; fi\n"
        "  done\n"
        "  gzip -c \"$f\" > \"$f.1.gz\"\n"
        "  : > \"$f\"\n"
        "done\n"
        "cd - >/dev/null")
    return StepResult(
        output=LogDir(path=logs.path, phrase=f"the rotated logs in `{logs.path}`",
                      logs=tuple(rotated), mtimes=tuple(None for _ in rotated)),
        instruction=sentence, solution=solution,
        checks=[TreeListing(f"`{logs.path}` holds the rotated generations", root=logs.path,
                            expected=tuple(names)),
                GzipContents.of("the generations hold the right logs", expected_files),
                *[FileText(f"{log.path} is empty", path=log.path, expected="", compare="exact")
                  for log in rotated]],
        tools=("gzip", "mv"), side_effect=True)


@primitive("logs.compress_old")
def compress_old(ctx: StepContext, source) -> StepResult:
    """Gzip the logs untouched since a cutoff."""
    logs = _dir_input(source)
    known = [(log, mtime) for log, mtime in zip(logs.logs, logs.mtimes, strict=False)
             if mtime is not None]
    old = [log for log, mtime in known if mtime < EPOCH_NOW - 2 * DAY]
    recent = [log for log, mtime in known if mtime >= EPOCH_NOW - DAY]
    if not old or not recent:
        raise NotApplicable("needs both old and recent logs")
    cutoff = EPOCH_NOW - 2 * DAY
    expected = {f"{log.path}.gz": log.text().encode() for log in old}
    absent = [log.path for log in old]
    sentence = ctx.phrase([
        f"Compress with gzip every `*.log` file in `{logs.path}` last modified before "
        f"{_stamp(cutoff)}, replacing it by `NAME.log.gz`; newer logs stay uncompressed.",
        f"Logs in `{logs.path}` not modified since {_stamp(cutoff)} must be gzip-compressed in "
        "place (`X.log` becomes `X.log.gz`); leave more recent logs untouched.",
        f"Apply the retention policy to `{logs.path}`: each `*.log` whose modification time is "
        f"older than {_stamp(cutoff)} gets gzipped to `X.log.gz` (the original removed); the "
        "others are kept as they are.",
    ]) + ctx.hint("find -newermt")
    kept = [log for log in logs.logs if log not in old]
    return StepResult(
        output=LogDir(path=logs.path, phrase=f"the recent logs in `{logs.path}`",
                      logs=tuple(kept), mtimes=tuple(None for _ in kept)),
        instruction=sentence,
        solution=(f"find {q(logs.path)} -maxdepth 1 -name '*.log' ! -newermt @{cutoff} "
                  "-exec gzip {} +"),
        checks=[GzipContents.of("old logs are compressed", expected),
                *[FileText(f"{log.path} is kept", path=log.path, expected=log.text(),
                           compare="exact") for log in recent[:2]],
                *[_absent(path) for path in absent[:3]]],
        tools=("find", "gzip"), side_effect=True)


def _absent(path: str):
    from taskloom.generators.procedural.checks import PathState

    return PathState(f"{path} no longer exists", path=path, state="absent")
