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
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    differs,
    exercised,
    primitive,
)
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, lines_text, q

VALID_APP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z [A-Z]+ \[[^]]+\] "
APP_AWK = '$0 ~ /' + VALID_APP.replace("/", "\\/") + '/'
ACCESS_AWK = "$9 ~ /^[0-9][0-9][0-9]$/"
ID_PATTERN = r"\b[a-f][0-9]{4}\b"
SKIP_APP = ("Lines that are not complete log records (stack traces, markers, cut-off lines, "
            "blank lines) are ignored.")
SKIP_ACCESS = "Malformed lines that are not requests are ignored."

# The alternatives (other tools than the reference's awk/sort/gzip loop) recognise records
# as a reader of the files would: a record is `TIMESTAMP LEVEL [component] message`, a
# request a line in nginx's combined format. Perl and Python regexes, not VALID_APP.
PERL_RECORD = r"/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (\S+) \[[^\]]*\] /"
# Groups: timestamp, level, component, message.
PY_RECORD = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) (\S+) \[([^\]]*)\] (.*)"
# Groups: ip, time, method, path, status, bytes.
PY_REQUEST = r'(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+|-) .*'


def _fields(line: str) -> list[str]:
    """A line's fields as awk splits them (runs of blanks)."""
    return line.replace("\t", " ").split()


def _field(line: str, number: int) -> str:
    """The awk field `$number` of a line: "" past the last field."""
    fields = _fields(line)
    return fields[number - 1] if number <= len(fields) else ""


def _ranked(counts: Counter, top: int | None = None, *,
            ties_reversed: bool = False) -> tuple[str, ...]:
    """`KEY COUNT` lines, most first, ties by key (descending: `ties_reversed`), cut to `top`."""
    items = sorted(counts.items(), key=lambda item: item[0], reverse=ties_reversed)
    items = sorted(items, key=lambda item: -item[1])[:top]
    return tuple(f"{name} {count}" for name, count in items)


def _csv_check(ctx: StepContext, label: str, table: CsvTable) -> FileText:
    """The CSV output holds these rows.

    Below strictness 3 as RFC 4180 reads them (any quoting, CRLF or LF), at 3 the exact
    bytes.
    """
    return FileText(label, path=table.path, expected=table.text(),
                    compare=ctx.compare(order_matters=True), form="csv")


def _csv_alternative(ctx: StepContext, source: str, table: CsvTable, pattern: str,
                     row: str) -> str:
    """Python's csv module writes the header and a row for each line `pattern` matches.

    `row` is Python code on the regex `match` of the line. Below strictness 3 every field
    is quoted (RFC 4180 reads it as the same rows); at 3 the instruction asks for exact
    bytes: quotes only where needed.
    """
    quoting = "csv.QUOTE_MINIMAL" if ctx.difficulty.strictness == 3 else "csv.QUOTE_ALL"
    style = f"csv.writer(dst, lineterminator='\\n', quoting={quoting})"
    return ctx.python([source, table.path], f"""
import csv, re, sys
pattern = re.compile(r'{pattern}')
with open(sys.argv[1], encoding='utf-8', newline='\\n') as src, \\
        open(sys.argv[2], 'w', encoding='utf-8', newline='') as dst:
    writer = {style}
    writer.writerow({list(table.header)!r})
    for line in src:
        match = pattern.fullmatch(line.rstrip('\\n'))
        if match:
            writer.writerow({row})
""")


def _app_input(source) -> AppLog:
    if not isinstance(source, AppLog) or not source.records:
        raise NotApplicable("needs an application log with records")
    return source


def _access_input(source) -> AccessLog:
    if not isinstance(source, AccessLog) or not source.records:
        raise NotApplicable("needs an access log with requests")
    return source


def _notes(ctx: StepContext, source, note: str) -> tuple[str, ...]:
    return (note,) if _malformed(source) else ()


def _malformed(source) -> bool:
    """Whether a log holds lines that are not records."""
    return len(source.lines) != len(source.records)


def _count_solution(path: str, out: str, select: str, field: int, *, numeric: bool = False,
                    rank: str = "", top: int | None = None) -> str:
    """`awk | sort | uniq -c` writing `KEY COUNT` lines; `rank` re-sorts, `top` cuts."""
    head = f" | head -n {top}" if top else ""
    return (f"awk '{select} {{print ${field}}}' {q(path)} | "
            f"{'sort -n' if numeric else 'sort'} | uniq -c | "
            f"awk '{{print $2, $1}}'{rank}{head} > {q(out)}")


RANK = " | sort -k2,2nr -k1,1"


def _count_report(ctx: StepContext, log, counts: Counter, *, out: str, sentence: str,
                  phrase: str, label: str, select: str, field: int, note: str,
                  alternative: str, ranked: bool = False, top: int | None = None,
                  numeric: bool = False, rules: tuple[Rule, ...] = ()) -> StepResult:
    """A step that writes `KEY COUNT` lines: how many records share each value of a field.

    The caller keeps its own phrasings, output path, report phrase and check label; this
    builds the lines and the `awk | sort | uniq -c` solution. `select` is the awk condition
    on the records counted and `field` the awk field of the key. Lines are in key order
    (`numeric`: keys sorted as numbers), or `ranked`: most records first, ties by key, cut
    to the first `top`. `alternative` is the step's other solution, `rules` its rules.
    """
    if ranked:
        lines = _ranked(counts, top)
    else:
        lines = tuple(f"{key} {counts[key]}" for key in sorted(counts))
    return StepResult(
        output=Report(path=out, phrase=phrase, lines=lines),
        instruction=sentence,
        solution=_count_solution(log.path, out, select, field, numeric=numeric,
                                 rank=RANK if ranked else "", top=top),
        alternative=alternative, rules=rules,
        checks=[FileText(label, path=out, expected=lines_text(lines),
                         compare=ctx.compare(order_matters=ranked))],
        tools=("awk", "sort", "uniq", "head") if top else ("awk", "sort", "uniq"),
        notes=_notes(ctx, log, note))


def _skip_rule(log, out: str, field: int, counts: Counter, *, select: str = "",
               keep=None, numeric: bool = False, rank: str = "", top: int | None = None,
               what: str = "log records") -> tuple[bool, Rule]:
    """Malformed lines skipped, in a count report.

    The mutant counts field `field` of every line (that `select`, an awk condition that
    does not check the shape, keeps; `keep` is that condition in Python).
    """
    loose = Counter(_field(line, field) for line in log.lines if keep is None or keep(line))
    exercised = _ranked(loose, top) != _ranked(counts, top) if rank else loose != counts
    return exercised, Rule(
        "skip-malformed", f"that lines which are not {what} are skipped",
        _count_solution(log.path, out, select, field, numeric=numeric, rank=rank, top=top))


def _awk_ge_500(line: str) -> bool:
    """The awk test `$9 >= 500`: numerically for a numeric field, else as strings."""
    value = _field(line, 9)
    if re.fullmatch(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", value):
        return float(value) >= 500
    return value >= "500"


@primitive("logs.filter_level")
def filter_level(ctx: StepContext, source) -> StepResult:
    """Keep the records of one level."""
    log = _app_input(source)
    levels = sorted({r.level for r in log.records} - {"DEBUG"})
    compare = ctx.compare(order_matters=True)

    def loose(level: str) -> tuple[str, ...]:  # `awk '$2 == LEVEL'`: cut-off lines too
        return tuple(line for line in log.lines if _field(line, 2) == level)

    def kept(level: str) -> tuple[str, ...]:
        return tuple(r.line() for r in log.records if r.level == level)

    # A level whose cut-off lines a filter on the second field alone would keep, if any.
    level = ctx.rng.choice([lv for lv in levels if differs(loose(lv), kept(lv), compare)]
                           or levels)
    lines = kept(level)
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
        alternative=(f"LEVEL={q(level)} perl -ne 'print if {PERL_RECORD} && $1 eq $ENV{{LEVEL}}' "
                     f"< {q(log.path)} > {q(out)}"),
        checks=[FileText(f"`{out}` holds the {level} records", path=out,
                         expected=lines_text(lines),
                         compare=compare)],
        tools=("awk",), notes=_notes(ctx, log, SKIP_APP),
        rules=exercised(
            (True, Rule("level", f"that only the {level} records are kept",
                        f"awk '{APP_AWK}' {q(log.path)} > {q(out)}")),
            (differs(loose(level), lines, compare),
             Rule("skip-malformed", "that lines which are not complete log records are skipped",
                  f"awk '$2 == \"{level}\"' {q(log.path)} > {q(out)}"))))


def _order_rule(ctx: StepContext, log, out: str, select: str, field: int, counts: Counter,
                by: str) -> tuple[bool, Rule]:
    """Key order, in a count report whose checks see the order: the mutant ranks by count."""
    naive = _ranked(counts)
    expected = tuple(f"{key} {counts[key]}" for key in sorted(counts))
    return (differs(naive, expected, ctx.compare()),
            Rule("order", f"that the lines are sorted by {by}",
                 _count_solution(log.path, out, select, field, rank=" | sort -k2,2nr")))


@primitive("logs.count_by_level")
def count_by_level(ctx: StepContext, source) -> StepResult:
    """Count records per level."""
    log = _app_input(source)
    counts = Counter(r.level for r in log.records)
    out = ctx.output_path("level-counts", "txt")
    sentence = ctx.phrase([
        f"Count the records of each log level in {log.phrase} and write `LEVEL COUNT` lines "
        f"to `{out}`, {ctx.order('sorted by level name')}.",
        f"Write to `{out}` how many records {log.phrase} has per level: one `LEVEL COUNT` line "
        f"per level, {ctx.order('levels in alphabetical order')}.",
        f"Produce `{out}` with a line `LEVEL COUNT` for every level present in {log.phrase}, "
        f"{ctx.order('ordered alphabetically by level')}.",
    ]) + ctx.hint("awk and sort | uniq -c")
    return _count_report(
        ctx, log, counts, out=out, sentence=sentence,
        phrase=(f"the record count per level of {log.phrase} (`LEVEL COUNT` lines, levels in "
                "alphabetical order)"),
        label=f"`{out}` counts records per level", select=APP_AWK, field=2, note=SKIP_APP,
        rules=exercised(_skip_rule(log, out, 2, counts, what="complete log records"),
                     _order_rule(ctx, log, out, APP_AWK, 2, counts, "level name")),
        alternative=ctx.python([log.path, out], f"""
import collections, re, sys
record = re.compile(rb'{PY_RECORD}')
with open(sys.argv[1], 'rb') as handle:
    counts = collections.Counter(match.group(2).decode() for match in map(
        record.fullmatch, handle.read().split(b'\\n')) if match)
with open(sys.argv[2], 'w', encoding='utf-8') as out:
    out.writelines(f'{{level}} {{counts[level]}}\\n' for level in sorted(counts))
"""))


@primitive("logs.time_window")
def time_window(ctx: StepContext, source) -> StepResult:
    """Keep the records in a time window."""
    log = _app_input(source)
    if len(log.records) < 6:
        raise NotApplicable("too few records for a window")
    stamps = sorted(r.timestamp for r in log.records)
    compare = ctx.compare(order_matters=True)

    def kept(start: str, end: str, *, inclusive=(True, False)) -> tuple[str, ...]:
        return tuple(r.line() for r in log.records
                     if (start <= r.timestamp if inclusive[0] else start < r.timestamp)
                     and (r.timestamp <= end if inclusive[1] else r.timestamp < end))

    def loose(start: str, end: str) -> tuple[str, ...]:  # every line, records or not
        return tuple(line for line in log.lines if start <= _field(line, 1) < end)

    # Both bounds are records' timestamps, so each bound's rule matters. Of a few drawn
    # windows, the first holding a cut-off line (if any) makes skipping malformed lines
    # matter too.
    windows = [(stamps[ctx.rng.randint(1, len(stamps) // 3)],
                stamps[ctx.rng.randint(2 * len(stamps) // 3, len(stamps) - 1)])
               for _ in range(4)]
    start, end = next((w for w in windows if differs(loose(*w), kept(*w), compare)),
                      windows[0])
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

    def wrong(test: str, select: str = f"{APP_AWK} && ") -> str:
        return (f"awk -v a={q(start)} -v b={q(end)} '{select}{test}' {q(log.path)} "
                f"> {q(out)}")

    return StepResult(
        output=AppLog(path=out, phrase=f"the records of {log.phrase} between {start} and {end}",
                      lines=lines, records=records),
        instruction=sentence,
        solution=(f"awk -v a={q(start)} -v b={q(end)} '{APP_AWK} && $1 >= a && $1 < b' "
                  f"{q(log.path)} > {q(out)}"),
        alternative=ctx.python([log.path, out, start, end], f"""
import re, sys
from datetime import datetime
record = re.compile(rb'{PY_RECORD}')
def moment(text):
    return datetime.strptime(text, '%Y-%m-%dT%H:%M:%SZ')
start, end = moment(sys.argv[3]), moment(sys.argv[4])
with open(sys.argv[1], 'rb') as src, open(sys.argv[2], 'wb') as dst:
    for line in src.read().split(b'\\n'):
        match = record.fullmatch(line)
        if match and start <= moment(match.group(1).decode()) < end:
            dst.write(line + b'\\n')
"""),
        checks=[FileText(f"`{out}` holds the records of the window", path=out,
                         expected=lines_text(lines),
                         compare=compare)],
        tools=("awk",), notes=_notes(ctx, log, SKIP_APP),
        rules=exercised(
            (differs(kept(start, end, inclusive=(False, False)), lines, compare),
             Rule("start-inclusive", f"that records at exactly {start} are kept",
                  wrong("$1 > a && $1 < b"))),
            (differs(kept(start, end, inclusive=(True, True)), lines, compare),
             Rule("end-exclusive", f"that records at exactly {end} are left out",
                  wrong("$1 >= a && $1 <= b"))),
            (differs(loose(start, end), lines, compare),
             Rule("skip-malformed", "that lines which are not complete log records are skipped",
                  wrong("$1 >= a && $1 < b", select="")))))


@primitive("logs.extract_ids")
def extract_ids(ctx: StepContext, source) -> StepResult:
    """Pull the identifiers out of the messages of one level."""
    log = _app_input(source)
    levels = [lv for lv in ("ERROR", "WARN", "INFO")
              if any(re.search(ID_PATTERN, r.line()) for r in log.records if r.level == lv)]
    if not levels:
        raise NotApplicable("no identifiers in the messages")
    compare = ctx.compare(order_matters=True)

    def found(lines) -> tuple[str, ...]:
        return tuple(ident for line in lines for ident in re.findall(ID_PATTERN, line))

    def telling(level: str) -> set[str]:
        """The rules whose mutants find other identifiers than the level's own."""
        own = found(r.line() for r in log.records if r.level == level)
        naive = {"level": found(r.line() for r in log.records),
                 "keep-repeats": tuple(dict.fromkeys(own)),
                 "skip-malformed": found(line for line in log.lines
                                         if _field(line, 2) == level)}
        return {name for name, ids in naive.items() if differs(ids, own, compare)}

    # A level where the most rules matter (other levels' ids, repeated ids).
    most = max(len(telling(lv)) for lv in levels)
    level = ctx.rng.choice([lv for lv in levels if len(telling(lv)) == most])
    ids = found(r.line() for r in log.records if r.level == level)
    matter = telling(level)
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
        alternative=(f"LEVEL={q(level)} perl -ne 'next unless {PERL_RECORD} && "
                     "$1 eq $ENV{LEVEL}; print \"$_\\n\" for /\\b[a-f]\\d{4}\\b/g' "
                     f"< {q(log.path)} > {q(out)}"),
        checks=[FileText(f"`{out}` lists the {level} identifiers", path=out,
                         expected=lines_text(ids),
                         compare=compare)],
        tools=("awk", "grep"), notes=_notes(ctx, log, SKIP_APP),
        rules=exercised(
            ("level" in matter,
             Rule("level", f"that only the {level} records' identifiers are listed",
                  f"awk '{APP_AWK}' {q(log.path)} | grep -oE '{ID_PATTERN}' > {q(out)}")),
            ("keep-repeats" in matter,
             Rule("keep-repeats", "that repeated identifiers are listed each time",
                  f"awk '{APP_AWK} && $2 == \"{level}\"' {q(log.path)} | "
                  f"grep -oE '{ID_PATTERN}' | awk '!seen[$0]++' > {q(out)}")),
            ("skip-malformed" in matter,
             Rule("skip-malformed", "that lines which are not complete log records are skipped",
                  f"awk '$2 == \"{level}\"' {q(log.path)} | grep -oE '{ID_PATTERN}' "
                  f"> {q(out)}"))))


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
    table = CsvTable(path=out, phrase=f"the records of {log.phrase} as CSV", header=header,
                     rows=rows)

    def rows_awk(select: str, program: str) -> str:
        return (f"{{ echo 'timestamp,level,component,message'; awk '{select}{{{program}}}' "
                f"{q(log.path)}; }} > {q(out)}")

    parsed = f"match($0, /^([^ ]+) ([A-Z]+) \\[([^]]+)\\] (.*)$/, m) && {APP_AWK} "
    return StepResult(
        output=table,
        instruction=sentence,
        solution=rows_awk(parsed, 'print m[1] "," m[2] "," m[3] "," m[4]'),
        alternative=_csv_alternative(ctx, log.path, table, PY_RECORD, "match.groups()"),
        checks=[_csv_check(ctx, f"`{out}` holds the records as CSV", table)],
        tools=("awk",), notes=_notes(ctx, log, SKIP_APP),
        rules=exercised(
            (True, Rule("bare-component", "that the component is written without its brackets",
                        rows_awk(parsed, 'print m[1] "," m[2] ",[" m[3] "]," m[4]'))),
            # Every line split into fields: a line that is no record still makes a row.
            (_malformed(log),
             Rule("skip-malformed", "that lines which are not complete log records are skipped",
                  rows_awk("", 'c=$3; gsub(/^\\[|\\]$/, "", c); msg=$0; '
                               'sub(/^[^ ]* [^ ]* [^ ]* /, "", msg); '
                               'print $1 "," $2 "," c "," msg')))))


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
        ranked=True, top=top, rules=exercised(
            (True, Rule("top-n", f"that only the {top} busiest clients are listed",
                        _count_solution(log.path, out, ACCESS_AWK, 1, rank=RANK))),
            _rank_rule(ctx, log, out, ACCESS_AWK, 1, counts, top, "busiest"),
            _tie_rule(log, out, ACCESS_AWK, 1, counts, top, "IP"),
            _skip_rule(log, out, 1, counts, rank=RANK, top=top, what="requests")),
        alternative=ctx.python([log.path, out, str(top)], f"""
import collections, re, sys
request = re.compile(r'{PY_REQUEST}')
with open(sys.argv[1], encoding='utf-8', newline='\\n') as handle:
    counts = collections.Counter(match[1] for match in (
        request.fullmatch(line.rstrip('\\n')) for line in handle) if match)
ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
with open(sys.argv[2], 'w', encoding='utf-8') as out:
    for ip, count in ranked[:int(sys.argv[3])]:
        print(ip, count, file=out)
"""))


def _rank_rule(ctx: StepContext, log, out: str, select: str, field: int, counts: Counter,
               top: int | None, most: str) -> tuple[bool, Rule]:
    """Most first, in a ranked count report: the mutant sorts the counts ascending."""
    naive = tuple(f"{key} {count}" for key, count in
                  sorted(counts.items(), key=lambda item: (item[1], item[0]))[:top])
    return (differs(naive, _ranked(counts, top), ctx.compare(order_matters=True)),
            Rule("rank-order", f"that the {most} come first",
                 _count_solution(log.path, out, select, field, rank=" | sort -k2,2n -k1,1",
                                 top=top)))


def _tie_rule(log, out: str, select: str, field: int, counts: Counter, top: int | None,
              key: str) -> tuple[bool, Rule]:
    """Ties by key ascending, in a ranked count report.

    The mutant is `sort -rn` on the counts, which breaks ties by the key descending.
    """
    return (_ranked(counts, top, ties_reversed=True) != _ranked(counts, top),
            Rule("tie-order", f"that equal counts are ordered by {key} ascending",
                 _count_solution(log.path, out, select, field, rank=" | sort -k2,2nr -k1,1r",
                                 top=top)))


@primitive("logs.status_summary")
def status_summary(ctx: StepContext, source) -> StepResult:
    """Requests per HTTP status."""
    log = _access_input(source)
    counts = Counter(r.status for r in log.records)
    out = ctx.output_path("status-counts", "txt")
    sentence = ctx.phrase([
        f"Count the requests per HTTP status code in {log.phrase} and write `STATUS COUNT` "
        f"lines to `{out}`, {ctx.order('status codes ascending')}.",
        f"Summarize {log.phrase} by response status into `{out}`: one `STATUS COUNT` line per "
        f"status code, {ctx.order('in ascending numeric order')}.",
        f"Write to `{out}` how many requests of {log.phrase} ended with each HTTP status, as "
        f"`STATUS COUNT`, {ctx.order('ordered by status code')}.",
    ]) + ctx.hint("the status is field 9")
    return _count_report(
        ctx, log, counts, out=out, sentence=sentence,
        phrase=(f"the request count per HTTP status in {log.phrase} (`STATUS COUNT` lines, by "
                "status code)"),
        label=f"`{out}` counts requests per status", select=ACCESS_AWK, field=9,
        note=SKIP_ACCESS, numeric=True,
        rules=exercised(_skip_rule(log, out, 9, Counter({str(k): n for k, n in counts.items()}),
                                numeric=True, what="requests"),
                     _order_rule(ctx, log, out, ACCESS_AWK, 9,
                                 Counter({str(k): n for k, n in counts.items()}),
                                 "status code")),
        alternative=("perl -ne '$n{$1}++ if /^\\S+ \\S+ \\S+ \\[[^\\]]+\\] \"[^\"]*\" "
                     "(\\d{3}) (\\d+|-) /; END { print \"$_ $n{$_}\\n\" for sort "
                     f"{{ $a <=> $b }} keys %n }}' < {q(log.path)} > {q(out)}"))


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
        field=7, note=SKIP_ACCESS, ranked=True, rules=exercised(
            (_ranked(Counter(r.path for r in log.records)) != _ranked(counts),
             Rule("server-errors", "that only 5xx responses are counted",
                  _count_solution(log.path, out, ACCESS_AWK, 7, rank=RANK))),
            _rank_rule(ctx, log, out, f"{ACCESS_AWK} && $9 >= 500", 7, counts, None,
                       "paths with the most failures"),
            _tie_rule(log, out, f"{ACCESS_AWK} && $9 >= 500", 7, counts, None, "path"),
            _skip_rule(log, out, 7, counts, select="$9 >= 500", keep=_awk_ge_500, rank=RANK,
                       what="requests")),
        alternative=ctx.python([log.path, out], f"""
import re, sys
request = re.compile(r'{PY_REQUEST}')
failures = {{}}
with open(sys.argv[1], encoding='utf-8', newline='\\n') as handle:
    for line in handle:
        match = request.fullmatch(line.rstrip('\\n'))
        if match and 500 <= int(match[5]) <= 599:
            failures[match[4]] = failures.get(match[4], 0) + 1
with open(sys.argv[2], 'w', encoding='utf-8') as out:
    for path in sorted(failures, key=lambda path: (-failures[path], path)):
        out.write(f'{{path}} {{failures[path]}}\\n')
"""))


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
    table = CsvTable(path=out, phrase=f"the requests of {log.phrase} as CSV", header=header,
                     rows=rows, numeric=("status", "bytes"))

    def rows_awk(select: str, time: str = 't=$4; sub(/^\\[/, "", t)') -> str:
        return (f"{{ echo 'ip,time,method,path,status,bytes'; awk '{select}{{{time}; m=$6; "
                f"sub(/^\"/, \"\", m); print $1 \",\" t \",\" m \",\" $7 \",\" $9 \",\" $10}}' "
                f"{q(log.path)}; }} > {q(out)}")

    return StepResult(
        output=table,
        instruction=sentence,
        solution=rows_awk(f"{ACCESS_AWK} "),
        rules=exercised(
            (True, Rule("bare-time", "that the time is written without the `+0000` offset",
                        rows_awk(f"{ACCESS_AWK} ",
                                 't=$4 " " $5; sub(/^\\[/, "", t); sub(/\\]$/, "", t)'))),
            (_malformed(log),
             Rule("skip-malformed", "that malformed lines which are not requests are skipped",
                  rows_awk("")))),
        alternative=_csv_alternative(
            ctx, log.path, table, PY_REQUEST,
            "[match[1], match[2].split(' ')[0], match[3], match[4], match[5], match[6]]"),
        checks=[_csv_check(ctx, f"`{out}` holds the requests as CSV", table)],
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
    compare = ctx.compare(order_matters=True)
    each = f"for f in {q(logs.path)}/*.log; do awk '{APP_AWK}' \"$f\"; done"
    concatenated = tuple(r.line() for log in ordered for r in log.records)
    # `sort` without -s breaks ties by the whole line (bytes, in the C locale).
    unstable = tuple(sorted(concatenated, key=lambda line: (line.split(" ", 1)[0],
                                                            line.encode())))
    return StepResult(
        output=AppLog(path=out, phrase=f"all records of {logs.phrase} merged by time",
                      lines=lines, records=tuple(merged)),
        instruction=sentence,
        solution=f"{each} | sort -s -k1,1 > {q(out)}",
        rules=exercised(
            (differs(concatenated, lines, compare),
             Rule("time-order", "that the records are ordered by timestamp",
                  f"{each} > {q(out)}")),
            (differs(unstable, lines, compare),
             Rule("stable", "that records with the same timestamp keep file-name and line "
                            "order", f"{each} | LC_ALL=C sort -k1,1 > {q(out)}")),
            (any(_malformed(log) for log in ordered),
             Rule("skip-malformed", "that lines which are not complete log records are skipped",
                  f"for f in {q(logs.path)}/*.log; do cat \"$f\"; done | sort -s -k1,1 "
                  f"> {q(out)}"))),
        alternative=ctx.python([logs.path, out], f"""
import os, re, sys
from datetime import datetime
record = re.compile(rb'{PY_RECORD}')
merged = []
names = sorted(os.fsencode(name) for name in os.listdir(sys.argv[1]))
for name in names:
    path = os.path.join(os.fsencode(sys.argv[1]), name)
    if not name.endswith(b'.log') or not os.path.isfile(path):
        continue
    with open(path, 'rb') as handle:
        for line in handle.read().split(b'\\n'):
            match = record.fullmatch(line)
            if match:
                when = datetime.strptime(match[1].decode(), '%Y-%m-%dT%H:%M:%SZ')
                merged.append((when, line))
merged.sort(key=lambda item: item[0])  # stable: ties keep file, then line order
with open(sys.argv[2], 'wb') as out:
    out.writelines(line + b'\\n' for _, line in merged)
"""),
        checks=[FileText(f"`{out}` is the time-ordered merge", path=out,
                         expected=lines_text(lines),
                         compare=compare)],
        tools=("awk", "sort"), notes=(SKIP_APP,))


@primitive("logs.error_summary_per_service")
def error_summary(ctx: StepContext, source) -> StepResult:
    """Count ERROR records per service log."""
    logs = _dir_input(source)
    ordered = sorted(logs.logs, key=lambda log: log.path)
    lines = tuple(f"{_service(log.path)} {sum(r.level == 'ERROR' for r in log.records)}"
                  for log in ordered)
    loose = tuple(f"{_service(log.path)} {sum(_field(line, 2) == 'ERROR' for line in log.lines)}"
                  for log in ordered)
    compare = ctx.compare()
    if all(line.endswith(" 0") for line in lines):
        raise NotApplicable("no errors anywhere")
    out = ctx.output_path("errors-per-service", "txt")
    sentence = ctx.phrase([
        f"For each log in {logs.phrase}, count its ERROR records and write `SERVICE COUNT` "
        f"to `{out}` (SERVICE is the file name without `.log`), "
        f"{ctx.order('services in alphabetical order')}, zero counts included.",
        f"Write `{out}` with one `SERVICE COUNT` line per *.log file of `{logs.path}`: the service "
        "is the file name minus `.log`, COUNT its number of ERROR records; "
        f"{ctx.order('alphabetical order')}, include services with 0.",
        f"Report how many ERROR records each service logged: `SERVICE COUNT` lines in `{out}` "
        f"for every .log file in `{logs.path}` (SERVICE: the file name without `.log`), "
        f"{ctx.order('sorted by service name')}, zeros included.",
    ]) + ctx.hint("a for loop with awk | wc -l")

    def counted(select: str, after: str = "") -> str:
        return (f"for f in {q(logs.path)}/*.log; do printf '%s %s\\n' "
                f"\"$(basename \"$f\" .log)\" \"$(awk '{select}$2 == \"ERROR\"' \"$f\" "
                f"| wc -l)\"; done{after} > {q(out)}")

    return StepResult(
        output=Report(
            path=out, phrase=(f"the ERROR count of each service in {logs.phrase} (`SERVICE COUNT` "
                               "lines, by service name)"),
            lines=lines),
        instruction=sentence,
        solution=counted(APP_AWK + " && "),
        rules=exercised(
            (differs(tuple(line for line in lines if not line.endswith(" 0")), lines, compare),
             Rule("zero-counts", "that services without errors are listed with 0",
                  counted(APP_AWK + " && ", " | awk '$2 != 0'"))),
            (differs(loose, lines, compare),
             Rule("skip-malformed", "that lines which are not complete log records are skipped",
                  counted(""))),
            (differs(_ranked(Counter({service: int(count) for service, count in
                                                map(str.split, lines)})), lines, compare),
             Rule("order", "that the services are in alphabetical order",
                  counted(APP_AWK + " && ", " | sort -k2,2nr")))),
        alternative=(f"find {q(logs.path)} -maxdepth 1 -type f -name '*.log' -exec perl -e '"
                     "my %errors; for my $file (@ARGV) { "
                     "(my $name = $file) =~ s!^.*/|\\.log$!!g; $errors{$name} = 0; "
                     "open(my $in, \"<\", $file) or die \"$file: $!\"; while (<$in>) { "
                     f"$errors{{$name}}++ if {PERL_RECORD} && $1 eq \"ERROR\" }} }} "
                     "print \"$_ $errors{$_}\\n\" for sort keys %errors' {} + "
                     f"> {q(out)}"),
        checks=[FileText(f"`{out}` counts errors per service", path=out,
                         expected=lines_text(lines),
                         compare=compare)],
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
    ordered = sorted(logs.logs, key=lambda item: item.path)
    full = ctx.rng.randrange(len(ordered))  # one log has all its generations: one is dropped
    shifted = False  # whether some generation moves up (to a number within the limit)
    for position, log in enumerate(ordered):
        name = log.path.rsplit("/", 1)[-1]
        existing = keep if position == full else ctx.rng.randint(0, keep)
        shifted = shifted or (existing >= 1 and keep >= 2)
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

    def rotation(*, limit: bool = True, shift: bool = True, truncate: bool = True) -> str:
        lines = [f"cd {q(logs.path)}", "for f in *.log; do"]
        if limit:
            lines.append(f"  rm -f \"$f.{keep}.gz\"")
        if shift:
            lines += [f"  for n in $(seq {keep - 1 if limit else keep} -1 1); do",
                      "    if [ -e \"$f.$n.gz\" ]; then mv \"$f.$n.gz\" \"$f.$((n + 1)).gz\"; fi",
                      "  done"]
        lines.append("  gzip -c \"$f\" > \"$f.1.gz\"")
        if truncate:
            lines.append("  : > \"$f\"")
        return "\n".join([*lines, "done", "cd - >/dev/null"])

    solution = rotation()
    # logrotate itself, forced, with `copytruncate` (copy to X.log.1, compress, truncate).
    config = [f'"{logs.path}/*.log" {{', f"    rotate {keep}", "    compress",
              "    copytruncate", "}"]
    alternative = ("conf=$(mktemp -d)\n"
                   f"printf '%s\\n' {' '.join(q(line) for line in config)} > \"$conf/rotate\"\n"
                   "logrotate --force --state \"$conf/state\" \"$conf/rotate\"\n"
                   "rm -rf \"$conf\"")
    return StepResult(
        output=LogDir(path=logs.path, phrase=f"the rotated logs in `{logs.path}`",
                      logs=tuple(rotated), mtimes=tuple(None for _ in rotated)),
        instruction=sentence, solution=solution, alternative=alternative,
        rules=exercised(
            (True, Rule("keep-limit", f"that generations above {keep} are deleted",
                        rotation(limit=False))),
            (shifted, Rule("shift", "that the older generations move up by one",
                           rotation(limit=False, shift=False))),
            (any(log.lines for log in ordered),
             Rule("truncate", "that each log is emptied after it is compressed",
                  rotation(truncate=False)))),
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
        rules=(Rule("cutoff", f"that only logs older than {_stamp(cutoff)} are compressed",
                    f"find {q(logs.path)} -maxdepth 1 -name '*.log' -exec gzip {{}} +"),
               Rule("replace", "that each compressed log replaces its original",
                    f"find {q(logs.path)} -maxdepth 1 -name '*.log' ! -newermt @{cutoff} "
                    "-exec gzip -k {} +")),
        alternative=ctx.python([logs.path, _stamp(cutoff)], """
import gzip, os, shutil, sys
from datetime import datetime, timezone
cutoff = datetime.strptime(sys.argv[2], '%Y-%m-%d %H:%M UTC').replace(tzinfo=timezone.utc)
for entry in sorted(os.scandir(sys.argv[1]), key=lambda entry: entry.name):
    if not entry.name.endswith('.log') or not entry.is_file(follow_symlinks=False):
        continue
    if entry.stat().st_mtime < cutoff.timestamp():
        with open(entry.path, 'rb') as src, gzip.open(entry.path + '.gz', 'wb') as dst:
            shutil.copyfileobj(src, dst)
        shutil.copystat(entry.path, entry.path + '.gz')
        os.remove(entry.path)
"""),
        checks=[GzipContents.of("old logs are compressed", expected),
                *[FileText(f"{log.path} is kept", path=log.path, expected=log.text(),
                           compare="exact") for log in recent[:2]],
                *[_absent(path) for path in absent[:3]]],
        tools=("find", "gzip"), side_effect=True)


def _absent(path: str):
    from taskloom.generators.procedural.checks import PathState

    return PathState(f"{path} no longer exists", path=path, state="absent")
