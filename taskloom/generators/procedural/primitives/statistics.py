r"""Statistics primitives: summary statistics, a least-squares line and outliers of CSV columns.

They read the CSV tables the csv/sqlite/logs families write (so they end their paths) and
compute what a data scientist would: count, mean, median, sample standard deviation,
min, max and a percentile; a fitted line with R²; the rows far from the mean. What makes
every correct tool agree:
- a cell is a number only when it matches `-?[0-9]+(\.[0-9]+)?` (`MISSING_NOTE`); any other
  cell (empty, `n/a`, `-`) is skipped, never read as zero;
- expected values are exact (fractions; a standard deviation with 40 digits), and a
  result is rounded only where its exact value is not within 1e-6 of a tie at the stated
  decimals (`_safe` refuses the others), so awk's `printf "%.3f"`, Python's `round` and
  `Decimal.quantize` print the same digits;
- percentiles state their method exactly (linear interpolation as numpy's default, or
  nearest rank), and an outlier bound is never within 1e-9 of a value it judges.

At step 1 the table gets two measurement columns of the domain (`MEASURES`: a predictor
and a response with a linear relation and noise), with missing cells, a few numbers written
as float() reads them but the stated syntax does not (`+5`, `1.2e+03`, ` 12`, `12.`, `.5`,
`1_000`: missing values too) and, for the outlier step, a few outliers and a value between
the population and sample bounds; a grouped summary may get a group name in upper or
title case, so byte order differs from a case-insensitive one. So each stated rule
changes the answer. Reference solutions are gawk; alternatives python3's
`statistics` module with the csv module (`PY_TABLES`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import CsvTable, Report
from taskloom.generators.procedural.checks import FileText, JsonValue
from taskloom.generators.procedural.primitives._tables import PY_TABLES, csv_fields, csv_notes
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    differs,
    exercised,
    primitive,
)
from taskloom.generators.procedural.world import lines_text, q

NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?\Z")
AWK_NUMBER = "/^-?[0-9]+(\\.[0-9]+)?$/"
MISSING_NOTE = ("In the CSV data a cell is a number only when it is an optional minus sign "
                "and digits, optionally followed by a decimal point and digits (`12`, "
                "`-3.5`); any other cell (empty, `n/a`, `NA`, `-`, `err`) is a missing value: "
                "skip it (a skipped value is not counted and is not a zero).")
MISSING = ("", "n/a", "NA", "-", "err", "")
LOOSE = "1e3`, `+5`, `.5`, `12.`, ` 12`, `1_000"  # cells float() reads, the syntax rejects

# Per domain: predictor, response, predictor range, slope, intercept, noise (standard
# deviation), decimals of the predictor and of the response.
MEASURES: dict[str, tuple[str, str, float, float, float, float, float, int, int]] = {
    "web": ("payload_kb", "response_ms", 5, 400, 0.6, 120, 25, 0, 1),
    "ops": ("size_gb", "runtime_s", 10, 900, 2.4, 60, 90, 1, 0),
    "sales": ("ad_spend", "sales", 100, 5000, 3.2, 1500, 900, 2, 2),
    "ci": ("tests", "build_s", 50, 2000, 0.35, 90, 40, 0, 0),
    "payments": ("basket_items", "fee", 1, 40, 0.45, 0.3, 1.2, 0, 2),
    "software": ("lines_changed", "review_min", 5, 800, 0.08, 12, 9, 0, 1),
    "research": ("dose_mg", "response", 5, 200, 0.42, 18, 6, 1, 2),
    "media": ("length_s", "encode_s", 10, 3600, 0.31, 8, 30, 0, 1),
    "hr": ("tenure_years", "bonus", 0, 25, 310, 1200, 600, 0, 2),
    "iot": ("temp_c", "power_w", -5, 35, 3.1, 120, 8, 1, 1),
    "security": ("open_ports", "risk_score", 0, 60, 1.3, 20, 7, 0, 1),
    "retail": ("shelf_m", "weekly_units", 1, 12, 38, 40, 25, 1, 0),
    "docs": ("page_words", "read_s", 200, 4000, 0.24, 15, 40, 0, 0),
}


def parse(cell: str) -> Fraction | None:
    """The number a cell holds, or None for a missing value."""
    return Fraction(Decimal(cell)) if NUMBER.match(cell) else None


def parse_loose(cell: str) -> Fraction | None:
    """The number Python's float() reads in a cell (`1e3`, `+5`, ` 12`, `.5`, `1_000`).

    A common mistake: the stated syntax rejects these, so they are missing values.
    """
    try:
        value = float(cell)
    except ValueError:
        return None
    return Fraction(Decimal(cell.strip().replace("_", ""))) if math.isfinite(value) else None


AWK_PREFIX = re.compile(r"\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")


def awk_number(cell: str) -> Fraction:
    """What gawk's `$c + 0` reads in any cell: the number it starts with, else 0.

    How the `skip-missing` mutants read a missing cell: `n/a` as 0, but `+5` as 5, `1e3`
    as 1000 and `1_000` as 1.
    """
    found = AWK_PREFIX.match(cell)
    return Fraction(Decimal(found.group().strip())) if found else Fraction(0)


def _loose(rng, cell: str) -> str:
    """The number of `cell` written as float() reads it but the stated syntax does not."""
    sign = "-" if cell.startswith("-") else ""
    whole, _, part = cell.removeprefix("-").partition(".")
    forms = [f"{float(cell):e}", f" {cell}"]
    if not sign:
        forms.append(f"+{cell}")
    if not part:
        forms.append(f"{cell}.")
    if whole == "0" and part:
        forms.append(f"{sign}.{part}")
    if len(whole) > 3:
        forms.append(f"{sign}{whole[:-3]}_{whole[-3:]}" + (f".{part}" if part else ""))
    return rng.choice(forms)


# The number test of the python3 programs: the stated syntax, or (in the `number-syntax`
# mutant) whatever float() reads.
PY_NUMBER = "number = re.compile(r'-?[0-9]+(\\.[0-9]+)?').fullmatch"
PY_LOOSE = """def number(cell):
    try:
        return float(cell) is not None
    except ValueError:
        return False"""


def _table(source) -> CsvTable:
    if not isinstance(source, CsvTable) or len(source.rows) < 5 or len(source.header) < 2:
        raise NotApplicable("needs a CSV table with at least five rows")
    return source


def _numeric(table: CsvTable, *, least: int = 5) -> list[str]:
    """Columns declared numeric whose numbers (missing cells apart) vary."""
    found = []
    for name in table.numeric:
        if name not in table.header:
            continue
        index = table.column(name)
        values = [parse(row[index]) for row in table.rows]
        valid = [v for v in values if v is not None]
        if len(valid) >= least and len(set(valid)) >= 3 and len(valid) * 10 >= len(values) * 7:
            found.append(name)
    return found


def _decimal(value: Fraction | Decimal) -> Decimal:
    """An exact value as a Decimal (a fraction to 60 digits)."""
    if isinstance(value, Decimal):
        return value
    with localcontext() as context:
        context.prec = 60
        return Decimal(value.numerator) / Decimal(value.denominator)


def _text(value: Fraction | Decimal, decimals: int) -> str:
    """An exact value rounded to `decimals` places and written with exactly that many."""
    return str(_decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN))


def _safe(value: Fraction | Decimal, decimals: int) -> bool:
    """True when every tool rounds `value` alike: not within 1e-6 of a tie, not near 0."""
    scaled = abs(_decimal(value).scaleb(decimals))
    if value != 0 and scaled < 1:
        return False  # floats may print -0.000 or 0.000
    return abs(scaled - int(scaled) - Decimal("0.5")) > Decimal("1e-6")


def _sqrt(value: Fraction) -> Decimal:
    with localcontext() as context:
        context.prec = 50
        return (Decimal(value.numerator) / Decimal(value.denominator)).sqrt()


def _variance(values: list[Fraction], *, sample: bool = True) -> Fraction:
    mean = sum(values, Fraction(0)) / len(values)
    squares = sum(((v - mean) ** 2 for v in values), Fraction(0))
    return squares / (len(values) - 1 if sample else len(values))


def _percentile(ordered: list[Fraction], p: int, method: str) -> Fraction:
    """The p-th percentile of sorted values: `linear` (numpy's default) or `nearest`."""
    n = len(ordered)
    if method == "nearest":
        rank = max(1, math.ceil(Fraction(p * n, 100)))
        return ordered[rank - 1]
    h = Fraction((n - 1) * p, 100)
    low = math.floor(h)
    if low + 1 >= n:
        return ordered[-1]
    return ordered[low] + (h - low) * (ordered[low + 1] - ordered[low])


def _exclusive(ordered: list[Fraction], p: int) -> Fraction:
    """What `statistics.quantiles`' default (exclusive) method gives: a common mistake."""
    n = len(ordered)
    h = Fraction((n + 1) * p, 100)
    low = min(max(math.floor(h), 1), n - 1)
    return ordered[low - 1] + (h - low) * (ordered[low] - ordered[low - 1])


def _median(ordered: list[Fraction]) -> Fraction:
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _cell(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}" if decimals else str(round(value))


def _measured(ctx: StepContext, table: CsvTable, *,
              outliers: Fraction | None = None) -> tuple[CsvTable, str, str]:
    """The step-1 table with the domain's predictor and response columns (written out).

    Some cells of both are missing. With `outliers` (a number of standard deviations K) the
    predictor keeps to the middle third of its range (a steady response) and m responses
    lie far from the rest, above and below: at distance d from the others' mean, m such
    values among n make the standard deviation about sqrt(s² + m*d²/n), so
    d = (K + 0.8) * s / sqrt(1 - m(K + 0.8)²/n) puts them beyond K of it.
    """
    spec = MEASURES.get(ctx.domain.name, MEASURES["iot"])
    x_name, y_name, low, high, slope, intercept, noise, x_dec, y_dec = spec
    if outliers is not None:
        low, high = low + (high - low) / 3, high - (high - low) / 3
    taken = set(table.header)
    x_name, y_name = (name if name not in taken else f"{name}_2" for name in (x_name, y_name))
    rng = ctx.rng
    xs, ys = [], []
    for _ in table.rows:
        x = rng.uniform(low, high)
        y = slope * x + intercept + rng.gauss(0, noise)
        x, y = _cell(x, x_dec), _cell(max(y, 0.5 * intercept + 1), y_dec)
        xs.append(x)
        ys.append(y)
    count = len(ys)
    picked: list[int] = []
    if outliers is not None:
        values = [float(y) for y in ys]
        mean = sum(values) / count
        spread = (sum((v - mean) ** 2 for v in values) / (count - 1)) ** 0.5
        # One to three far above, none to two far below: never just the extremes.
        high = rng.randint(1, min(3, max(1, count // 12)))
        low = rng.randint(0 if high > 1 else 1, min(2, max(1, count // 15)))
        far = float(outliers) + 0.8
        distance = far * spread / max(0.2, 1 - (high + low) * far * far / count) ** 0.5
        picked = rng.sample(range(count), high + low)
        for number, index in enumerate(picked):
            below = mean - distance * rng.uniform(1, 1.1)
            ys[index] = _cell(below if number >= high and below > 0 else
                              mean + distance * rng.uniform(1, 1.4), y_dec)
    missing = max(1, (1, count // 16, count // 8)[ctx.difficulty.noise - 1])
    free = [i for i in range(count) if i not in picked]
    for column in (xs, ys):
        for index in rng.sample(free, min(missing, count // 4)):
            column[index] = rng.choice(MISSING)
    # Numbers float() reads but the stated syntax rejects (missing values too), where the
    # other column is a number: the first a response (for outliers one far from the rest).
    whole = [i for i in free if parse(xs[i]) is not None and parse(ys[i]) is not None]
    for number, index in enumerate(rng.sample(whole, min(len(whole) // 4, rng.randint(1, 2)
                                                          + (ctx.difficulty.noise == 3)))):
        column = ys if number == 0 or rng.random() < 0.5 else xs
        if column is ys and number == 0 and outliers is not None:
            ys[index] = _cell(mean + distance * rng.uniform(1, 1.4), y_dec)
        column[index] = _loose(rng, column[index])
    header = (*table.header, x_name, y_name)
    rows = tuple((*row, x, y) for row, x, y in zip(table.rows, xs, ys, strict=True))
    changed = dataclasses.replace(table, header=header, rows=rows,
                                  numeric=(*table.numeric, x_name, y_name))
    ctx.world.add(table.path, changed.text())
    return changed, x_name, y_name


def _values(table: CsvTable, name: str, *, zeros: bool = False) -> list[Fraction]:
    """The numbers of a column; with `zeros`, missing cells read as 0 (awk's `$c + 0`)."""
    index = table.column(name)
    found = [parse(row[index]) for row in table.rows]
    return [awk_number(row[index]) for row in table.rows] if zeros else \
        [v for v in found if v is not None]


def _groups(table: CsvTable, measure: str) -> list[str]:
    """Text columns whose every value has at least three numbers of `measure`."""
    index = table.column(measure)
    found = []
    for field in csv_fields(table):
        if field.name == measure or not field.categorical() or field.distinct() > 8:
            continue
        counts: dict[str, int] = {}
        for row, key in zip(table.rows, field.values, strict=True):
            if parse(row[index]) is not None:
                counts[key] = counts.get(key, 0) + 1
        if len(counts) >= 2 and min(counts.values()) >= 3:
            found.append(field.name)
    return found


def _fold(key: str) -> str:
    """A key as `LC_ALL=C sort -f` compares it: ASCII lowercase folded to uppercase."""
    return "".join(c.upper() if "a" <= c <= "z" else c for c in key)


def _cased(ctx: StepContext, table: CsvTable, column: int) -> CsvTable:
    """The table with one group value in upper or title case (written out), if one fits.

    Picked so that byte order (uppercase first) differs from a case-insensitive order.
    """
    keys = sorted({row[column] for row in table.rows})
    for key in ctx.rng.sample(keys, len(keys)):
        name = ctx.rng.choice((key.upper(), key.capitalize()))
        renamed = [name if k == key else k for k in keys]
        if name == key or len({_fold(k) for k in renamed}) < len(renamed) or \
                sorted(renamed, key=str.encode) == sorted(renamed, key=lambda k: _fold(k).encode()):
            continue
        rows = tuple((*row[:column], name, *row[column + 1:]) if row[column] == key else row
                     for row in table.rows)
        changed = dataclasses.replace(table, rows=rows)
        ctx.world.add(table.path, changed.text())
        return changed
    return table


# --- stats.describe_column --------------------------------------------------------------

STATS = ("count", "mean", "median", "stdev", "min", "max")


def _summary(values: list[Fraction], p: int, *, method: str, sample: bool = True,
             median: bool = True) -> list[Fraction | Decimal | int]:
    """count, mean, median, standard deviation, min, max, percentile (exact)."""
    ordered = sorted(values)
    middle = _median(ordered) if median else ordered[len(ordered) // 2]
    centile = _exclusive(ordered, p) if method == "exclusive" else \
        _percentile(ordered, p, method)
    return [len(values), sum(values, Fraction(0)) / len(values), middle,
            _sqrt(_variance(values, sample=sample)), ordered[0], ordered[-1], centile]


def _awk_print(value) -> str:
    """How awk's `print` writes a number (OFMT `%.6g`; whole numbers as integers)."""
    number = float(value)
    return str(int(number)) if number == int(number) and abs(number) < 1e16 else f"{number:.6g}"


def _describe_awk(col: int, group: int | None, p: int, method: str, decimals: int, *,
                  skip: bool = True, sample: bool = True, rounding: bool = True,
                  median: bool = True) -> str:
    """The gawk program printing the summary lines (without the header)."""
    select = f"NR > 1 && ${col} ~ {AWK_NUMBER}" if skip else "NR > 1"
    key = f"${group}" if group else '""'
    if method == "nearest":
        centile = f"r = int(({p} * m + 99) / 100); if (r < 1) r = 1; pv = a[r]"
    elif method == "exclusive":
        centile = (f"h = (m + 1) * {p} / 100; lo = int(h); if (lo < 1) lo = 1; "
                   f"if (lo > m - 1) lo = m - 1; pv = a[lo] + (h - lo) * (a[lo + 1] - a[lo])")
    else:
        centile = (f"h = (m - 1) * {p} / 100; lo = int(h); "
                   "pv = lo + 1 < m ? a[lo + 1] + (h - lo) * (a[lo + 2] - a[lo + 1]) : a[m]")
    middle = ("med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2" if median
              else "med = a[int(m / 2) + 1]")
    spread = "sqrt(ss / (m - 1))" if sample else "sqrt(ss / m)"
    prefix = 'k ","' if group else '""'
    if rounding:
        f = f"%.{decimals}f"
        out = (f'printf "%s%d,{f},{f},{f},{f},{f},{f}\\n", {prefix}, m, mean, med, sd, a[1], '
               "a[m], pv")
    else:
        out = 'print ' + prefix + ' m "," mean "," med "," sd "," a[1] "," a[m] "," pv'
    return (f"{select} {{ k = {key}; v[k][++n[k]] = ${col} + 0 }}\n"
            "END {\n"
            '  PROCINFO["sorted_in"] = "@ind_str_asc"\n'
            "  for (k in n) {\n"
            "    m = n[k]; asort(v[k], a); s = 0\n"
            "    for (i = 1; i <= m; i++) s += a[i]\n"
            "    mean = s / m; ss = 0\n"
            "    for (i = 1; i <= m; i++) ss += (a[i] - mean) ^ 2\n"
            f"    sd = {spread}; {middle}\n"
            f"    {centile}\n"
            f"    {out}\n"
            "  }\n"
            "}")


@primitive("stats.describe_column")
def describe_column(ctx: StepContext, source) -> StepResult:
    """Summary statistics of a numeric column (optionally per group) as CSV."""
    table = _table(source)
    if ctx.step == 1:
        table, _, measure = _measured(ctx, table)
    else:
        candidates = _numeric(table)
        if not candidates:
            raise NotApplicable("no numeric column with enough numbers")
        measure = ctx.rng.choice(candidates)
    index = table.column(measure)
    groups = _groups(table, measure)
    group = ctx.rng.choice(groups) if groups and ctx.rng.random() < 0.5 else None
    if group and ctx.step == 1 and ctx.rng.random() < 0.75:
        table = _cased(ctx, table, table.column(group))
    p = ctx.rng.choice((90, 95, 75, 10))
    method = ctx.rng.choice(("linear", "nearest"))

    def keyed(*, zeros: bool = False, loose: bool = False,
              folded: bool = False) -> dict[str, list[Fraction]]:
        """The numbers per group ("" for all rows), groups in byte order.

        Options: the mistakes of the rule mutants (missing cells read as awk's `$c + 0`
        reads them, float()'s idea of a number, groups sorted case-insensitively as
        `sort -f` does).
        """
        found: dict[str, list[Fraction]] = {}
        for row in table.rows:
            value = (parse_loose if loose else parse)(row[index])
            if value is None and zeros:
                value = awk_number(row[index])
            if value is not None:
                found.setdefault(row[table.column(group)] if group else "", []).append(value)
        order = (lambda k: _fold(k).encode()) if folded else (lambda k: k.encode())
        return {key: found[key] for key in sorted(found, key=order)}

    def rows_of(*, zeros: bool = False, loose: bool = False, folded: bool = False,
                **options) -> dict[str, list]:
        """Per group, the exact summary (options: the mistakes of the rule mutants)."""
        options.setdefault("method", method)
        return {key: _summary(values, p, **options)
                for key, values in keyed(zeros=zeros, loose=loose, folded=folded).items()}

    if min(len(values) for values in keyed().values()) < 2:
        raise NotApplicable("a group has fewer than two numbers")
    exact = rows_of()
    for decimals in [*ctx.rng.sample((3, 2), 2), 4]:
        if all(_safe(v, decimals) for stats in exact.values() for v in stats[1:]):
            break
    else:
        raise NotApplicable("a statistic lies on a rounding tie")

    def lines(summary: dict[str, list], *, rounding: bool = True) -> list[str]:
        write = (lambda v: _text(v, decimals)) if rounding else _awk_print
        return [",".join(([key] if group else []) + [str(stats[0])] +
                         [write(v) for v in stats[1:]]) for key, stats in summary.items()]

    name = f"p{p}"
    header = ([group] if group else []) + [*STATS, name]
    expected = lines(exact)
    out = ctx.output_path(f"{measure}-summary", "csv")
    centile_words = (
        f"the {p}th percentile by linear interpolation (numpy's default: position "
        f"(N-1)*{p}/100 in the sorted values counted from 0, interpolating between the two "
        "neighbours)" if method == "linear" else
        f"the {p}th percentile by the nearest-rank method (the value at 1-based position "
        f"ceil({p}*N/100) of the sorted values)")
    stats_words = (f"`count` (how many numbers), `mean`, `median` (the mean of the two "
                   f"middle values when the count is even), `stdev` (the sample standard "
                   f"deviation, dividing by N-1), `min`, `max` and `{name}`, {centile_words}")
    rounding_words = (f"every value except `count` rounded to {decimals} decimals and written "
                      f"with exactly {decimals} (as printf's `%.{decimals}f` writes it)")
    if group:
        scope = (f"for each `{group}` of {table.phrase}, one row per `{group}` value in byte "
                 f"order (as `LC_ALL=C sort` orders them)")
        columns = f"the columns `{group}`, " + ", ".join(f"`{h}`" for h in header[1:])
    else:
        scope = f"over all the rows of {table.phrase}, as one data row"
        columns = "the columns " + ", ".join(f"`{h}`" for h in header)
    sentence = ctx.phrase([
        f"Summarize the numeric column `{measure}` {scope}: write `{out}` as CSV with a "
        f"header row naming {columns}, where {stats_words}; {rounding_words}.",
        f"Compute descriptive statistics of `{measure}` {scope} and save them to `{out}`: a "
        f"CSV file whose header names {columns}. The statistics are {stats_words}, "
        f"{rounding_words}.",
        f"Write the CSV file `{out}` describing `{measure}` {scope}. Header first, naming "
        f"{columns}: {stats_words}; {rounding_words}.",
    ]) + ctx.hint("gawk with asort, or python3's statistics module")
    phrase = (f"the summary statistics of `{measure}` in {table.phrase} (a CSV with the "
              f"columns {', '.join(header)}"
              + (f", one row per `{group}` in byte order" if group else ", one row")
              + f"; values rounded to {decimals} decimals)")
    output = CsvTable(path=out, phrase=phrase, header=tuple(header),
                      rows=tuple(tuple(line.split(",")) for line in expected),
                      numeric=tuple(header[1:] if group else header))
    col, g = index + 1, (table.column(group) + 1 if group else None)
    echo = f"echo {q(','.join(header))}"

    def solve(*, folded: bool = False, **options) -> str:
        program = _describe_awk(col, g, p, options.pop("method", method), decimals, **options)
        fold = " | LC_ALL=C sort -f -t, -k1,1" if folded else ""
        return (f"{{ {echo}; LC_ALL=C gawk -F, {q(program)} {q(table.path)}{fold}; }} "
                f"> {q(out)}")

    compare = ctx.compare(order_matters=True)
    other = "nearest" if method == "linear" else "linear"
    rules = exercised(
        (differs(lines(rows_of(zeros=True)), expected, compare),
         Rule("skip-missing", "that missing values are skipped, not read as zeros",
              solve(skip=False))),
        (differs(lines(rows_of(sample=False)), expected, compare),
         Rule("sample-stdev", "that `stdev` is the sample standard deviation (N-1)",
              solve(sample=False))),
        (differs(lines(rows_of(method=other)), expected, compare),
         Rule("percentile-method", f"how `{name}` is computed", solve(method=other))),
        (differs(lines(rows_of(method="exclusive")), expected, compare),
         Rule("percentile-exclusive", f"how `{name}` is computed (not the (N+1) method)",
              solve(method="exclusive"))),
        (differs(lines(rows_of(median=False)), expected, compare),
         Rule("median", "that the median of an even count is the mean of the middle two",
              solve(median=False))),
        (differs(lines(exact, rounding=False), expected, compare),
         Rule("rounding", f"that values are written with exactly {decimals} decimals",
              solve(rounding=False))))
    centile_py = (f"statistics.quantiles(vals, n=100, method='inclusive')[{p - 1}]"
                  if method == "linear" else
                  f"sorted(vals)[max(1, -(-{p} * len(vals) // 100)) - 1]")

    def python(*, loose: bool = False) -> str:
        return ctx.python([table.path, out], f"""
import re, statistics
header, rows = read_csv(sys.argv[1])
i = header.index({measure!r})
g = header.index({group!r}) if {group!r} else None
{PY_LOOSE if loose else PY_NUMBER}
groups = {{}}
for row in rows:
    if number(row[i]):
        groups.setdefault(row[g] if g is not None else '', []).append(float(row[i]))
out = [{header!r}]
for key in sorted(groups, key=lambda k: k.encode()):
    vals = groups[key]
    stats = [statistics.mean(vals), statistics.median(vals), statistics.stdev(vals),
             min(vals), max(vals), {centile_py}]
    out.append(([key] if g is not None else []) + [str(len(vals))] +
               [format(round(v, {decimals}), '.{decimals}f') for v in stats])
write_csv(sys.argv[2], out)
""", prelude=PY_TABLES)

    rules += exercised(
        (differs(lines(rows_of(loose=True)), expected, compare),
         Rule("number-syntax", f"that a cell is a number only in the stated syntax (`{LOOSE}` "
              "are missing values)", python(loose=True))),
        (differs(lines(rows_of(folded=True)), expected, compare),
         Rule("byte-order", f"that the `{group}` rows are in byte order (uppercase before "
              "lowercase), not case-insensitive", solve(folded=True))))
    return StepResult(
        output=output, instruction=sentence, solution=solve(), alternative=python(),
        notes=(MISSING_NOTE, *csv_notes(ctx)), rules=rules,
        checks=[FileText(f"`{out}` holds the summary of {measure}", path=out,
                         expected=output.text(), compare=compare, form="csv")],
        tools=("awk",))


# --- stats.fit_line ---------------------------------------------------------------------

def _fit(pairs: list[tuple[Fraction, Fraction]]) -> tuple[Fraction, Fraction, Fraction]:
    """Slope, intercept and R² of the least-squares line y = slope * x + intercept."""
    n = len(pairs)
    mx = sum((x for x, _ in pairs), Fraction(0)) / n
    my = sum((y for _, y in pairs), Fraction(0)) / n
    sxx = sum(((x - mx) ** 2 for x, _ in pairs), Fraction(0))
    syy = sum(((y - my) ** 2 for _, y in pairs), Fraction(0))
    sxy = sum(((x - mx) * (y - my) for x, y in pairs), Fraction(0))
    if not sxx or not syy:
        raise NotApplicable("a column is constant")
    slope = sxy / sxx
    return slope, my - slope * mx, sxy * sxy / (sxx * syy)


FIT_AWK = """NR > 1 && ({skip}) {{ n++; x[n] = ${x} + 0; y[n] = ${y} + 0; sx += x[n]; sy += y[n] }}
END {{
  mx = sx / n; my = sy / n
  for (i = 1; i <= n; i++) {{
    sxx += (x[i] - mx) ^ 2; syy += (y[i] - my) ^ 2; sxy += (x[i] - mx) * (y[i] - my)
  }}
  a = sxy / sxx; b = my - a * mx; r2 = {r2}
  printf "{{\\"slope\\": {f}, \\"intercept\\": {f}, \\"r_squared\\": {f}, ", a, b, r2
  printf "\\"n\\": %d{extra_format}}}\\n", n{extra_args}
}}"""


@primitive("stats.fit_line")
def fit_line(ctx: StepContext, source) -> StepResult:
    """Ordinary least squares y = a*x + b of two columns: slope, intercept, R² as JSON."""
    table = _table(source)
    if not ctx.final:
        raise NotApplicable("the fit is a report for a person: a last step")
    if ctx.step == 1:
        table, x_name, y_name = _measured(ctx, table)
    else:
        candidates = _numeric(table)
        if len(candidates) < 2:
            raise NotApplicable("needs two numeric columns")
        x_name, y_name = ctx.rng.sample(candidates, 2)
    xi, yi = table.column(x_name), table.column(y_name)

    def pairs(*, zeros: bool = False, swap: bool = False,
              loose: bool = False) -> list[tuple[Fraction, Fraction]]:
        found = []
        for row in table.rows:
            read = parse_loose if loose else parse
            x, y = read(row[xi]), read(row[yi])
            if zeros:
                x, y = awk_number(row[xi]), awk_number(row[yi])
            if x is not None and y is not None:
                found.append((y, x) if swap else (x, y))
        return found

    used = pairs()
    if len(used) < 4:
        raise NotApplicable("too few rows with both numbers")
    slope, intercept, r2 = _fit(used)
    xs = sorted(x for x, _ in used)
    at = None
    if ctx.rng.random() < 0.5:
        span = xs[-1] - xs[0]
        at = Fraction(round(xs[0] + span * Fraction(ctx.rng.randint(20, 80), 100)))
    values = [slope, intercept, r2] + ([slope * at + intercept] if at is not None else [])
    for decimals in ctx.rng.sample((3, 4), 2):
        if all(_safe(v, decimals) for v in values):
            break
    else:
        raise NotApplicable("a fitted value lies on a rounding tie")
    keys = ["slope", "intercept", "r_squared"] + (["predicted"] if at is not None else [])

    def report(fitted: list, count: int, *, rounding: bool = True) -> dict:
        result = {key: float(_text(v, decimals)) if rounding else float(f"{float(v):.10g}")
                  for key, v in zip(keys, fitted, strict=True)}
        result["n"] = count
        return result

    expected = report(values, len(used))
    at_text = str(int(at)) if at is not None else ""
    out = ctx.output_path(f"{y_name}-fit", "json")
    predicted = (f", and `predicted`, the fitted `{y_name}` at `{x_name}` = {at_text}"
                 if at is not None else "")
    what = (f"a JSON object with the keys `slope` and `intercept` (of the line "
            f"`{y_name}` = slope * `{x_name}` + intercept, `{y_name}` being the dependent "
            f"variable), `r_squared` (the coefficient of determination R², the square of "
            f"Pearson's correlation){predicted}, all JSON numbers rounded to {decimals} "
            f"decimals, and `n`, the number of rows used")
    rows_words = f"use only the rows where both `{x_name}` and `{y_name}` are numbers"
    sentence = ctx.phrase([
        f"Fit an ordinary least squares line predicting `{y_name}` from `{x_name}` in "
        f"{table.phrase} ({rows_words}) and write `{out}`: {what}.",
        f"Regress `{y_name}` on `{x_name}` over {table.phrase} (simple linear regression by "
        f"least squares; {rows_words}). Save the result to `{out}` as {what}.",
        f"Using {table.phrase}, compute the least-squares fit of `{y_name}` against "
        f"`{x_name}` ({rows_words}) and store it in `{out}`: {what}.",
    ]) + ctx.hint("gawk sums, or python3's statistics.linear_regression")
    f = f"%.{decimals}f"
    col_x, col_y = xi + 1, yi + 1
    both = f"${col_x} ~ {AWK_NUMBER} && ${col_y} ~ {AWK_NUMBER}"

    def solve(*, skip: bool = True, swap: bool = False, r_squared: bool = True,
              rounding: bool = True) -> str:
        fmt = f if rounding else "%.10g"
        program = FIT_AWK.format(
            skip=both if skip else "1", x=col_y if swap else col_x, y=col_x if swap else col_y,
            r2="sxy * sxy / (sxx * syy)" if r_squared else "sxy / sqrt(sxx * syy)",
            f=fmt, extra_format=f', \\"predicted\\": {fmt}' if at is not None else "",
            extra_args=f", a * {at_text} + b" if at is not None else "")
        return f"gawk -F, {q(program)} {q(table.path)} > {q(out)}"

    def mutant(used_pairs, *, r_squared: bool = True) -> dict:
        a, b, r = _fit(used_pairs)
        if not r_squared:
            r = Fraction(_sqrt(r)) * (1 if a > 0 else -1)
        fitted = [a, b, r] + ([a * at + b] if at is not None else [])
        if not all(_safe(v, decimals) for v in fitted):
            return expected  # not told apart reliably: no rule
        return report(fitted, len(used_pairs))

    rules = exercised(
        (mutant(pairs(zeros=True)) != expected,
         Rule("skip-missing", "that only the rows where both columns are numbers are used",
              solve(skip=False))),
        (mutant(pairs(swap=True)) != expected,
         Rule("direction", f"that `{y_name}` is the dependent variable", solve(swap=True))),
        (mutant(used, r_squared=False) != expected,
         Rule("r-squared", "that `r_squared` is the square of the correlation",
              solve(r_squared=False))),
        (report(values, len(used), rounding=False) != expected,
         Rule("rounding", f"that the numbers are rounded to {decimals} decimals",
              solve(rounding=False))))

    def python(*, loose: bool = False) -> str:
        return ctx.python([table.path, out], f"""
import re, statistics
header, rows = read_csv(sys.argv[1])
i, j = header.index({x_name!r}), header.index({y_name!r})
{PY_LOOSE if loose else PY_NUMBER}
pairs = [(float(r[i]), float(r[j])) for r in rows if number(r[i]) and number(r[j])]
xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
fit = statistics.linear_regression(xs, ys)
result = {{'slope': round(fit.slope, {decimals}), 'intercept': round(fit.intercept, {decimals}),
          'r_squared': round(statistics.correlation(xs, ys) ** 2, {decimals}), 'n': len(pairs)}}
if {at_text!r}:
    result['predicted'] = round(fit.slope * {at_text or 0} + fit.intercept, {decimals})
write_json(sys.argv[2], result)
""", prelude=PY_TABLES)

    rules += exercised(
        (len(pairs(loose=True)) != len(used) or mutant(pairs(loose=True)) != expected,
         Rule("number-syntax", f"that a cell is a number only in the stated syntax (`{LOOSE}` "
              "are missing values)", python(loose=True))))
    alternative = python()
    return StepResult(
        output=Report(path=out, phrase=f"the least-squares fit of `{y_name}` on `{x_name}` "
                      f"over {table.phrase} (JSON)", lines=(json.dumps(expected),)),
        instruction=sentence, solution=solve(), alternative=alternative,
        notes=(MISSING_NOTE,), rules=rules,
        checks=[JsonValue(f"`{out}` holds the fitted line", path=out, expected=expected)],
        tools=("awk",))


# --- stats.flag_outliers ----------------------------------------------------------------

OUTLIER_Z = """function num(s) {{ return {test} }}
NR == FNR {{ if (FNR > 1 && num(${c})) v[++n] = ${c} + 0; next }}
FNR == 1 {{
  for (i = 1; i <= n; i++) s += v[i]
  m = s / n
  for (i = 1; i <= n; i++) ss += (v[i] - m) ^ 2
  sd = sqrt(ss / {div}); print; next
}}
num(${c}) && ({sides})"""

OUTLIER_IQR = """function num(s) {{ return {test} }}
function q(p,   h, lo) {{ {quantile} }}
NR == FNR {{ if (FNR > 1 && num(${c})) v[++n] = ${c} + 0; next }}
FNR == 1 {{ asort(v, a); q1 = q(25); q3 = q(75); lo = q1 - 1.5 * (q3 - q1); \
hi = q3 + 1.5 * (q3 - q1); print; next }}
num(${c}) && ({sides})"""

LINEAR_Q = ("h = (n - 1) * p / 100; lo = int(h); "
            "return a[lo + 1] + (h - lo) * (a[lo + 2] - a[lo + 1])")
EXCLUSIVE_Q = ("h = (n + 1) * p / 100; lo = int(h); if (lo < 1) lo = 1; if (lo > n - 1) "
               "lo = n - 1; return a[lo] + (h - lo) * (a[lo + 1] - a[lo])")


def _borderline(ctx: StepContext, table: CsvTable, index: int, k: Fraction) -> CsvTable:
    """The table with one value between the population and the sample bound, if one fits.

    Then a population standard deviation flags a row the sample one does not. A value at
    distance d from the mean of the other n-1 numbers (squared deviations S) lies
    (n-1)/n*d from the new mean, whose squared deviations are S + (n-1)/n*d²: solved for
    d at either bound, the middle of the two is rounded to the column's decimals.
    """
    cells = [row[index] for row in table.rows]
    decimals = max((len(c.split(".")[1]) for c in cells if parse(c) is not None and "." in c),
                   default=0)
    positions = [i for i, c in enumerate(cells) if parse(c) is not None]
    position = ctx.rng.choice(positions)
    others = [parse(c) for i, c in enumerate(cells) if i in positions and i != position]
    n = len(others) + 1
    mean = sum(others, Fraction(0)) / len(others)
    squares = float(sum(((v - mean) ** 2 for v in others), Fraction(0)))
    kk, ratio = float(k * k), ((n - 1) / n) ** 2
    population, sample = ratio - kk * (n - 1) / n ** 2, ratio - kk / n
    if population <= 0 or sample <= 0:
        return table
    low, high = (kk * squares / n / population) ** 0.5, \
        (kk * squares / (n - 1) / sample) ** 0.5
    middle = float(mean) + (low + high) / 2
    for shift in (0, 1, -1, 2, -2):
        text = f"{middle + shift / 10 ** decimals:.{decimals}f}"
        rows = list(table.rows)
        rows[position] = (*rows[position][:index], text, *rows[position][index + 1:])
        changed = dataclasses.replace(table, rows=tuple(rows))
        if _flagged(changed, index, "z", k, sample=False) != _flagged(changed, index, "z", k):
            ctx.world.add(table.path, changed.text())
            return changed
    return table


@primitive("stats.flag_outliers")
def flag_outliers(ctx: StepContext, source) -> StepResult:
    """The rows whose value lies far from the rest (z-score or Tukey's fences)."""
    table = _table(source)
    method = ctx.rng.choice(("z", "z", "iqr"))
    count = len(table.rows)
    first = Fraction(3) if count >= 60 else Fraction(5, 2) if count >= 30 else Fraction(2)
    if ctx.step == 1:
        table, _, measure = _measured(ctx, table, outliers=first)
    else:
        candidates = _numeric(table, least=8)
        if not candidates:
            raise NotApplicable("no numeric column with enough numbers")
        measure = ctx.rng.choice(candidates)
    index = table.column(measure)
    k = Fraction(0)
    if method == "z":
        options = [first] + [o for o in (Fraction(3), Fraction(5, 2), Fraction(2),
                                         Fraction(3, 2)) if o != first]
        for k in options:
            if ctx.step == 1:
                table = _borderline(ctx, table, index, k)
            if _flags_ok(table, index, method, k):
                break
        else:
            method = "iqr"
    if method == "iqr" and not _flags_ok(table, index, method, k):
        raise NotApplicable("no outlier rule flags part of the rows")
    flagged = _flagged(table, index, method, k)
    expected = [",".join(table.header)] + [",".join(row) for row in flagged]
    compare = ctx.compare(order_matters=True)
    out = ctx.output_path(f"{measure}-outliers", "csv")
    k_text = f"{float(k):g}"
    if method == "z":
        rule_words = (f"whose `{measure}` lies more than {k_text} standard deviations from "
                      f"the mean of `{measure}` (above or below it; the mean and the sample "
                      "standard deviation, dividing by N-1, taken over all the numbers of the "
                      "column)")
        brief = f"more than {k_text} sample standard deviations from the mean"
    else:
        rule_words = (f"whose `{measure}` lies outside Tukey's fences: below Q1 - 1.5*IQR or "
                      f"above Q3 + 1.5*IQR (IQR = Q3 - Q1), the quartiles Q1 and Q3 of all "
                      f"the numbers of `{measure}` computed by linear interpolation (numpy's "
                      "default: position (N-1)*p in the sorted values counted from 0, "
                      "interpolating between the two neighbours)")
        brief = "outside Tukey's fences (1.5*IQR beyond the quartiles)"
    sentence = ctx.phrase([
        f"Find the outliers of {table.phrase}: the rows {rule_words}. Write them to `{out}` "
        "as CSV: the header row, then each such row unchanged, in their original order.",
        f"Write to `{out}` the rows of {table.phrase} {rule_words}; keep the header row "
        "first and the rows exactly as they are, in file order.",
        f"Flag anomalous readings in {table.phrase}: save to `{out}` (CSV, header row "
        f"included, rows unchanged and in their original order) every row {rule_words}.",
    ]) + ctx.hint("awk reading the file twice: statistics first, then the rows")
    phrase = (f"the rows of {table.phrase} whose `{measure}` lies {brief} (header kept, "
              "original order)")
    output = CsvTable(path=out, phrase=phrase, header=table.header, rows=tuple(flagged),
                      numeric=table.numeric)
    c = index + 1
    test = f"s ~ {AWK_NUMBER}"

    def solve(*, skip: bool = True, sample: bool = True, both: bool = True,
              strict: bool = True, exclusive: bool = False) -> str:
        if method == "z":
            gt = ">" if strict else ">="
            sides = f"${c} - m {gt} {k_text} * sd" + (f" || m - ${c} {gt} {k_text} * sd"
                                                      if both else "")
            program = OUTLIER_Z.format(test=test if skip else "1", c=c,
                                       div="(n - 1)" if sample else "n", sides=sides)
        else:
            sides = (f"${c} > hi" if strict else f"${c} >= hi") + (
                (f" || ${c} < lo" if strict else f" || ${c} <= lo") if both else "")
            program = OUTLIER_IQR.format(test=test if skip else "1", c=c, sides=sides,
                                         quantile=EXCLUSIVE_Q if exclusive else LINEAR_Q)
        return f"gawk -F, {q(program)} {q(table.path)} {q(table.path)} > {q(out)}"

    def seen(**options) -> bool:
        rows = _flagged(table, index, method, k, **options)
        return differs([",".join(table.header)] + [",".join(r) for r in rows], expected,
                       compare)

    candidates = [
        (seen(zeros=True), Rule("skip-missing", "that missing values are skipped, not read "
                                "as zeros", solve(skip=False))),
        (seen(both=False), Rule("both-sides", "that rows far below are outliers too",
                                solve(both=False)))]
    if method == "z":
        candidates.append((seen(sample=False), Rule(
            "sample-stdev", "that the sample standard deviation (N-1) is used",
            solve(sample=False))))
    else:
        candidates += [
            (seen(exclusive=True), Rule("quartile-method", "how the quartiles are computed",
                                        solve(exclusive=True))),
            (seen(strict=False), Rule("strict-bound", "that a value exactly on a fence is "
                                      "not an outlier", solve(strict=False)))]
    if method == "z":
        flag = f"abs(value - mean) > {k_text} * statistics.stdev(vals)"
        prep = "mean = statistics.mean(vals)"
    else:
        flag = "value < q1 - 1.5 * (q3 - q1) or value > q3 + 1.5 * (q3 - q1)"
        prep = "q1, _, q3 = statistics.quantiles(vals, n=4, method='inclusive')"

    def python(*, loose: bool = False) -> str:
        return ctx.python([table.path, out], f"""
import re, statistics
header, rows = read_csv(sys.argv[1])
i = header.index({measure!r})
{PY_LOOSE if loose else PY_NUMBER}
vals = [float(row[i]) for row in rows if number(row[i])]
{prep}
kept = []
for row in rows:
    if number(row[i]):
        value = float(row[i])
        if {flag}:
            kept.append(row)
write_csv(sys.argv[2], [header, *kept])
""", prelude=PY_TABLES)

    candidates.append((seen(loose=True), Rule(
        "number-syntax", f"that a cell is a number only in the stated syntax (`{LOOSE}` are "
        "missing values)", python(loose=True))))
    rules = exercised(*candidates)
    alternative = python()
    return StepResult(
        output=output, instruction=sentence, solution=solve(), alternative=alternative,
        notes=(MISSING_NOTE, *csv_notes(ctx)), rules=rules,
        checks=[FileText(f"`{out}` holds the outlier rows of {measure}", path=out,
                         expected=lines_text(expected), compare=compare, form="csv")],
        tools=("awk",))


def _bounds(values: list[Fraction], method: str, k: Fraction, *, sample: bool = True,
            exclusive: bool = False) -> tuple[Fraction, Fraction, Fraction]:
    """(center, low bound, high bound); for z the bounds are squared distances."""
    if method == "z":
        mean = sum(values, Fraction(0)) / len(values)
        return mean, k * k * _variance(values, sample=sample), Fraction(0)
    ordered = sorted(values)
    q1, q3 = (_exclusive(ordered, p) if exclusive else _percentile(ordered, p, "linear")
              for p in (25, 75))
    return Fraction(0), q1 - Fraction(3, 2) * (q3 - q1), q3 + Fraction(3, 2) * (q3 - q1)


def _flagged(table: CsvTable, index: int, method: str, k: Fraction, *, zeros: bool = False,
             sample: bool = True, both: bool = True, strict: bool = True,
             exclusive: bool = False, loose: bool = False) -> list[tuple[str, ...]]:
    """The rows an outlier rule flags (options: the mistakes of the rule mutants)."""
    cells = [(parse_loose if loose else parse)(row[index]) for row in table.rows]
    if zeros:
        cells = [awk_number(row[index]) for row in table.rows]
    values = [v for v in cells if v is not None]
    center, low, high = _bounds(values, method, k, sample=sample, exclusive=exclusive)
    found = []
    for row, v in zip(table.rows, cells, strict=True):
        if v is None:
            continue
        if method == "z":
            gap = (v - center) ** 2
            hit = (gap > low or (not strict and gap == low)) and (both or v > center)
        else:
            hit = v > high or (not strict and v == high) or (
                both and (v < low or (not strict and v == low)))
        if hit:
            found.append(row)
    return found


def _flags_ok(table: CsvTable, index: int, method: str, k: Fraction) -> bool:
    """The rule flags some rows, not most, and no value is within 1e-9 of a bound.

    Only exactly representable bounds (IQR fences of whole numbers) may meet a value.
    """
    values = [v for v in (parse(row[index]) for row in table.rows) if v is not None]
    flagged = _flagged(table, index, method, k)
    if not 1 <= len(flagged) <= max(1, len(values) // 4):
        return False
    center, low, high = _bounds(values, method, k)
    tolerance = Fraction(1, 10 ** 9)
    whole = all(v.denominator == 1 for v in values)
    for v in values:
        if method == "z":
            gap = (v - center) ** 2
            if low and abs(gap - low) <= tolerance * low:
                return False
        else:
            for bound in (low, high):
                near = abs(v - bound) <= tolerance * max(1, abs(bound))
                if near and not (whole and v == bound):
                    return False
    return True
