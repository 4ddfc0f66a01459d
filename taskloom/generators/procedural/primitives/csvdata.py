"""CSV primitives: filter, project, aggregate, sort, dedupe, rank and convert CSV tables.

Tables have a header row and never quote values (sources guarantee no commas or quotes,
reference solutions write none), so `awk -F,` and `cut -d,` read them exactly. What makes
bash and Python agree:
- numbers: a column is numeric when its table declares it and every value parses; decimal
  columns have at most two decimals, sums are computed in integer cents and written with
  exactly two decimals (awk `printf "%.2f"` gives the same digits);
- text order is byte order (`LC_ALL=C sort`, Python's `str` order on UTF-8 text);
- every ordering states its tie-break, or is a stable sort that keeps the input order.

Columns, conditions and number formats come from `_tables`, shared with the JSON and
SQLite primitives. CSV checks read the rows as RFC 4180 does (`form="csv"`), so quoting
and line ends are free except at strictness 3, where `CSV_NOTE` states them.
Alternatives read CSV with python3's csv module and compute with `Decimal`
(`ctx.python` with `PY_TABLES`); csv.to_json's, whose reference is Python, uses jq.
"""

from __future__ import annotations

import dataclasses
import json
import re
from decimal import Decimal
from functools import cmp_to_key

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import CsvTable, JsonDoc, Report
from taskloom.generators.procedural.checks import FileText, JsonValue
from taskloom.generators.procedural.primitives._tables import (
    PY_TABLES,
    cents,
    csv_fields,
    csv_notes,
    derive,
    money,
    names,
    number,
    pick_condition,
    sort_options,
)
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    primitive,
)
from taskloom.generators.procedural.world import lines_text, q


def _table(source) -> CsvTable:
    if not isinstance(source, CsvTable) or len(source.rows) < 3 or len(source.header) < 2:
        raise NotApplicable("needs a CSV table with at least three rows and two columns")
    return source


def _csv(table: CsvTable, out: str, phrase: str, header, rows) -> CsvTable:
    numeric = tuple(name for name in table.numeric if name in header)
    return CsvTable(path=out, phrase=phrase, header=tuple(header), rows=tuple(rows),
                    numeric=numeric)


SORT_NUMBER = re.compile(r"\s*(-?)([0-9]*)(?:\.([0-9]*))?")


def _sort_number(text: str) -> Decimal:
    """The number `sort -n` reads at the start of a field (0 where none is)."""
    sign, whole, part = SORT_NUMBER.match(text).groups()
    if not whole and not part:
        return Decimal(0)
    return Decimal(f"{sign}{whole or 0}.{part or 0}")


def gnu_sort(rows, keys: tuple[tuple[int, bool, bool], ...], *, stable: bool = False) -> list:
    """What `LC_ALL=C sort [-s] -t, -kI,I[n][r] ...` prints, as rows (to foresee mutants).

    `keys` are (field index, numeric, reversed); without `stable` (`-s`) rows equal on
    every key are ordered by the whole line in byte order, as GNU sort's last resort.
    """
    def compare(a, b) -> int:
        for index, numeric, reverse in keys:
            x, y = ((_sort_number(a[index]), _sort_number(b[index])) if numeric
                    else (a[index].encode(), b[index].encode()))
            if x != y:
                return (1 if x > y else -1) * (-1 if reverse else 1)
        if stable:
            return 0
        x, y = ",".join(a).encode(), ",".join(b).encode()
        return (x > y) - (x < y)
    return sorted(rows, key=cmp_to_key(compare))


@primitive("csv.filter_rows")
def filter_rows(ctx: StepContext, source) -> StepResult:
    """Keep the rows whose column meets a condition."""
    table = _table(source)
    condition, chosen = pick_condition(ctx, csv_fields(table))
    rows = tuple(table.rows[i] for i in chosen)
    index = table.column(condition.column)
    out = ctx.output_path("filtered-rows", "csv")
    sentence = ctx.phrase([
        f"Write the rows of {table.phrase} whose {condition.words()} to `{out}`, as CSV with "
        "the same header and columns, rows in their original order.",
        f"Filter {table.phrase} down to the rows where {condition.words()} and save them as "
        f"`{out}`: header row first, columns unchanged, original row order kept.",
        f"Save to `{out}` a copy of {table.phrase} (header included) that holds only the rows "
        f"whose {condition.words()}, in the order they appear.",
    ]) + ctx.hint("awk -F, with NR == 1 to keep the header")
    phrase = derive(table.phrase, f"the rows of {table.phrase} whose {condition.words()}",
                    f"{table.phrase}, keeping only the rows whose {condition.words()}")
    output = _csv(table, out, phrase, table.header, rows)
    rules = [Rule("condition", f"that only the rows whose {condition.words()} are kept",
                  f"cat {q(table.path)} > {q(out)}")]
    if condition.on_bound(row[index] for row in table.rows):
        rules.append(Rule(
            "strict-bound", f"that a row whose `{condition.column}` is exactly "
            f"{condition.value} is not kept",
            f"awk -F, 'NR == 1 || {condition.inclusive().awk(index)}' {q(table.path)} "
            f"> {q(out)}"))
    return StepResult(
        output=output, instruction=sentence, rules=tuple(rules),
        solution=f"awk -F, 'NR == 1 || {condition.awk(index)}' {q(table.path)} > {q(out)}",
        alternative=ctx.python([table.path, out], f"""
header, rows = read_csv(sys.argv[1])
i = header.index({condition.column!r})
write_csv(sys.argv[2], [header] + [row for row in rows if {condition.python('row[i]')}])
""", prelude=PY_TABLES),
        notes=csv_notes(ctx),
        checks=[FileText(f"`{out}` holds the rows whose {condition.words()}", path=out,
                         expected=output.text(), compare=ctx.compare(order_matters=True),
                         form="csv")],
        tools=("awk",))


@primitive("csv.select_columns")
def select_columns(ctx: StepContext, source) -> StepResult:
    """Keep some columns, in their order in the file."""
    table = _table(source)
    if len(table.header) < 3:
        raise NotApplicable("too few columns to leave some out")
    keep = sorted(ctx.rng.sample(range(len(table.header)),
                                 ctx.rng.randint(2, len(table.header) - 1)))
    header = tuple(table.header[i] for i in keep)
    rows = tuple(tuple(row[i] for i in keep) for row in table.rows)
    out = ctx.output_path("columns", "csv")
    listed = names(header)
    sentence = ctx.phrase([
        f"Write to `{out}` only the columns {listed} of {table.phrase}, in that order (their "
        "order in the file), header row included; keep every row, in the original order.",
        f"Cut {table.phrase} down to the columns {listed} and save the result as the CSV "
        f"file `{out}`: header first, comma-separated, all rows in their original order.",
        f"Produce `{out}` from {table.phrase} keeping just the columns {listed} (same column "
        "order as the source), with the header row and every data row in order.",
    ]) + ctx.hint("cut -d, -f")
    phrase = derive(table.phrase, f"the columns {listed} of {table.phrase}",
                    f"{table.phrase}, cut down to the columns {listed}")
    output = _csv(table, out, phrase, header, rows)
    fields = ",".join(str(i + 1) for i in keep)
    return StepResult(
        output=output, instruction=sentence,
        solution=f"cut -d, -f{fields} {q(table.path)} > {q(out)}",
        rules=(Rule("columns", f"that only the columns {listed} are kept",
                    f"cat {q(table.path)} > {q(out)}"),
               Rule("header", "that the header row is included",
                    f"tail -n +2 {q(table.path)} | cut -d, -f{fields} > {q(out)}")),
        alternative=ctx.python([table.path, out], f"""
header, rows = read_csv(sys.argv[1])
wanted = [header.index(name) for name in {list(header)!r}]
write_csv(sys.argv[2], [[row[i] for i in wanted] for row in [header, *rows]])
""", prelude=PY_TABLES),
        notes=csv_notes(ctx),
        checks=[FileText(f"`{out}` holds the selected columns", path=out,
                         expected=output.text(), compare=ctx.compare(order_matters=True),
                         form="csv")],
        tools=("cut",))


def _awk_number(value: float) -> str:
    """How awk's `print` writes a number: whole ones as integers, others with %.6g."""
    return str(int(value)) if value == int(value) else f"{value:.6g}"


@primitive("csv.group_sum")
def group_sum(ctx: StepContext, source) -> StepResult:
    """Sum a numeric column per value of another column."""
    table = _table(source)
    fields = csv_fields(table)
    groups = [f for f in fields if f.categorical()]
    numeric = [f for f in fields if f.numeric]
    if not groups or not numeric:
        raise NotApplicable("needs a grouping column and a numeric column")
    group, value = ctx.rng.choice(groups), ctx.rng.choice(numeric)
    totals: dict[str, int] = {}
    for key, amount in zip(group.values, value.values, strict=True):
        totals[key] = totals.get(key, 0) + (cents(amount) if value.kind == "decimal"
                                            else int(amount))
    write = money if value.kind == "decimal" else str
    total = f"total_{value.name}"
    rows = tuple((key, write(totals[key])) for key in sorted(totals))
    out = ctx.output_path("totals", "csv")
    number_format = ("written with exactly two decimals" if value.kind == "decimal"
                     else "written as a whole number")
    sentence = ctx.phrase([
        f"Compute the total `{value.name}` per `{group.name}` in {table.phrase} and write "
        f"it to `{out}` as CSV with the two columns `{group.name}` and `{total}` (header row "
        f"first), one row per `{group.name}` value sorted in byte order (as `LC_ALL=C sort` "
        f"orders them), each total {number_format}.",
        f"Sum `{value.name}` over {table.phrase} for each distinct "
        f"`{group.name}` and save the result as `{out}`: a header row naming the columns "
        f"`{group.name}` and `{total}`, then one row per group ordered by `{group.name}` "
        f"(C locale byte order), totals {number_format}.",
        f"Write `{out}`, a CSV summary of {table.phrase} with the columns `{group.name}` and "
        f"`{total}` (the sum of `{value.name}` for that `{group.name}`; {number_format}): "
        f"header first, groups sorted by `{group.name}` in byte order.",
    ]) + ctx.hint("awk with an associative array, then LC_ALL=C sort")
    output = CsvTable(path=out, phrase=f"the total `{value.name}` per `{group.name}` of "
                      f"{table.phrase} (a CSV with the columns `{group.name}` and `{total}`, "
                      f"one row per `{group.name}` in byte order, totals {number_format})",
                      header=(group.name, total), rows=rows, numeric=(total,))
    fmt = "%.2f" if value.kind == "decimal" else "%d"
    g, v = table.column(group.name) + 1, table.column(value.name) + 1
    solution = (f"{{ echo {q(group.name + ',' + total)}; awk -F, 'NR > 1 {{s[${g}] += ${v}}} "
                f"END {{for (k in s) printf \"%s,{fmt}\\n\", k, s[k]}}' {q(table.path)} | "
                f"LC_ALL=C sort -t, -k1,1; }} > {q(out)}")
    rules = []
    appearance = tuple(dict.fromkeys(group.values))
    if appearance != tuple(key for key, _ in rows):  # no sort: groups as first seen
        rules.append(Rule(
            "byte-order", f"that the groups are sorted by `{group.name}` in byte order",
            f"{{ echo {q(group.name + ',' + total)}; awk -F, 'NR > 1 {{if (!(${g} in s)) "
            f"o[++n] = ${g}; s[${g}] += ${v}}} END {{for (i = 1; i <= n; i++) "
            f"printf \"%s,{fmt}\\n\", o[i], s[o[i]]}}' {q(table.path)}; }} > {q(out)}"))
    if value.kind == "decimal":  # awk's own number format (%.6g) instead of two decimals
        floats: dict[str, float] = {}
        for key, amount in zip(group.values, value.values, strict=True):
            floats[key] = floats.get(key, 0.0) + float(amount)
        if any(_awk_number(floats[key]) != text for key, text in rows):
            rules.append(Rule(
                "two-decimals", "that every total is written with exactly two decimals",
                f"{{ echo {q(group.name + ',' + total)}; awk -F, 'NR > 1 {{s[${g}] += ${v}}} "
                f"END {{for (k in s) print k \",\" s[k]}}' {q(table.path)} | "
                f"LC_ALL=C sort -t, -k1,1; }} > {q(out)}"))
    written = "f'{total:.2f}'" if value.kind == "decimal" else "str(int(total))"
    alternative = ctx.python([table.path, out], f"""
header, rows = read_csv(sys.argv[1])
g, v = header.index({group.name!r}), header.index({value.name!r})
totals = {{}}
for row in rows:
    totals[row[g]] = totals.get(row[g], Decimal(0)) + Decimal(row[v])
lines = [[{group.name!r}, {total!r}]]
for key in sorted(totals, key=lambda k: k.encode()):
    total = totals[key]
    lines.append([key, {written}])
write_csv(sys.argv[2], lines)
""", prelude=PY_TABLES)
    return StepResult(
        output=output, instruction=sentence, solution=solution, alternative=alternative,
        notes=csv_notes(ctx), rules=tuple(rules),
        checks=[FileText(f"`{out}` holds the totals per {group.name}", path=out,
                         expected=output.text(), compare=ctx.compare(order_matters=True),
                         form="csv")],
        tools=("awk", "sort"))


@primitive("csv.sort_rows")
def sort_rows(ctx: StepContext, source) -> StepResult:
    """Order rows by a column, keeping the header first (a stable sort)."""
    table = _table(source)
    for field, descending in sort_options(ctx, csv_fields(table)):
        index = table.column(field.name)
        if field.numeric:
            rows = tuple(sorted(table.rows, key=lambda r, i=index: number(r[i]),
                                reverse=descending))
        else:
            rows = tuple(sorted(table.rows, key=lambda r, i=index: r[i]))
        if rows != table.rows:
            break
    else:
        raise NotApplicable("the rows are already in every order this step could ask for")
    if field.numeric:
        order = "numerically, largest first" if descending else "numerically, smallest first"
        brief = "largest first" if descending else "smallest first"
        flags = "nr" if descending else "n"
    else:
        order = "as text in byte order (like `LC_ALL=C sort`)"
        brief = "byte order"
        flags = ""
    out = ctx.output_path("sorted", "csv")
    sentence = ctx.phrase([
        f"Sort the rows of {table.phrase} by `{field.name}` {order} and write the result to "
        f"`{out}`: the header row stays first, and rows with equal `{field.name}` keep their "
        "original relative order.",
        f"Write `{out}`: {table.phrase} with its data rows ordered by `{field.name}` {order}, "
        "in a stable sort (ties stay in their original order), header row first and "
        "unchanged.",
        f"Reorder {table.phrase} by the column `{field.name}`, {order}, with equal values "
        f"keeping the order they had, and save it as `{out}` with the header on the first "
        "line.",
    ]) + ctx.hint("head -n 1, then tail -n +2 | sort -s -t, -k")
    phrase = derive(table.phrase, f"the rows of {table.phrase} sorted by `{field.name}` "
                    f"({brief})", f"{table.phrase}, sorted by `{field.name}` ({brief})")
    output = _csv(table, out, phrase, table.header, rows)
    key = f"-k{index + 1},{index + 1}{flags}"
    rules = []

    def wrong(name: str, stated: str, key_flags: str, sorted_rows, *, stable: str = "-s ",
              header: bool = True) -> None:
        """A rule whose mutant sorts with other `sort` options, if that gives other rows.

        `header`: the mutant keeps the header first (else it sorts the whole file).
        """
        if list(sorted_rows) != (list(rows) if header else [table.header, *rows]):
            body = f"LC_ALL=C sort {stable}-t, -k{index + 1},{index + 1}{key_flags}"
            rules.append(Rule(name, stated, (
                f"{{ head -n 1 {q(table.path)}; tail -n +2 {q(table.path)} | {body}; }} "
                if header else f"{body} {q(table.path)} ") + f"> {q(out)}"))

    this = (index, field.numeric, descending)
    if field.numeric:
        wrong("direction", f"that the rows go {brief}", "n" if descending else "nr",
              gnu_sort(table.rows, ((index, True, not descending),), stable=True))
        wrong("numeric", f"that `{field.name}` is compared as a number, not as text",
              "r" if descending else "", gnu_sort(table.rows, ((index, False, descending),),
                                                  stable=True))
    wrong("stable", f"that rows with equal `{field.name}` keep their original order", flags,
          gnu_sort(table.rows, (this,)), stable="")
    wrong("header", "that the header row stays first", flags,
          gnu_sort((table.header, *table.rows), (this,), stable=True), header=False)
    return StepResult(
        output=output, instruction=sentence, rules=tuple(rules),
        solution=(f"{{ head -n 1 {q(table.path)}; tail -n +2 {q(table.path)} | "
                  f"LC_ALL=C sort -s -t, {key}; }} > {q(out)}"),
        alternative=ctx.python([table.path, out], f"""
header, rows = read_csv(sys.argv[1])
i = header.index({field.name!r})
rows.sort(key=lambda row: {'Decimal(row[i])' if field.numeric else 'row[i].encode()'}\
{', reverse=True' if descending and field.numeric else ''})
write_csv(sys.argv[2], [header, *rows])
""", prelude=PY_TABLES),
        notes=csv_notes(ctx),
        checks=[FileText(f"`{out}` is sorted by {field.name}", path=out,
                         expected=output.text(), compare=ctx.compare(order_matters=True),
                         form="csv")],
        tools=("sort", "head", "tail"))


def _with_duplicates(ctx: StepContext, table: CsvTable) -> CsvTable:
    """The step-1 input with some rows repeated later in the file (written to the world)."""
    rows = list(table.rows)
    for row in ctx.rng.sample(table.rows, max(2, len(rows) // 6)):
        position = rows.index(row) + 1
        rows.insert(ctx.rng.randint(position, len(rows)), row)
    changed = dataclasses.replace(table, rows=tuple(rows))
    ctx.world.add(table.path, changed.text())
    return changed


@primitive("csv.dedupe_rows")
def dedupe_rows(ctx: StepContext, source) -> StepResult:
    """Drop repeated rows (or rows repeating a key), keeping the first occurrence."""
    table = _table(source)
    whole = len(set(table.rows)) < len(table.rows)
    if not whole and ctx.step == 1 and ctx.rng.random() < 0.6:
        table, whole = _with_duplicates(ctx, table), True
    out = ctx.output_path("deduplicated", "csv")
    if whole:
        rows = tuple(dict.fromkeys(table.rows))
        sentence = ctx.phrase([
            f"Remove the duplicate rows (rows identical in every column) of {table.phrase}: "
            f"write to `{out}` the header and each distinct row once, at the position of its "
            "first occurrence.",
            f"{table.phrase[0].upper()}{table.phrase[1:]} contains rows that appear more than "
            f"once. Save a copy without the repeats to `{out}`: header first, then every row "
            "the first time it occurs, in the original order.",
            f"Deduplicate {table.phrase} into `{out}`, keeping the first occurrence of each "
            "identical row (and the header) and the original row order.",
        ]) + ctx.hint("awk '!seen[$0]++'")
        phrase = derive(table.phrase, f"the distinct rows of {table.phrase}",
                        f"{table.phrase}, without duplicate rows")
        solution = f"awk '!seen[$0]++' {q(table.path)} > {q(out)}"
        alternative = ctx.python([table.path, out], """
header, rows = read_csv(sys.argv[1])
distinct = dict.fromkeys(tuple(row) for row in rows)
write_csv(sys.argv[2], [header, *distinct])
""", prelude=PY_TABLES)
        label = f"`{out}` holds each distinct row once"
        ordered = sorted(set(table.rows), key=lambda row: ",".join(row).encode())
        rules = [Rule("dedupe", "that each repeated row is written only once",
                      f"cat {q(table.path)} > {q(out)}")]
        if ordered != list(rows):
            rules.append(Rule(
                "order", "that the rows keep the order of their first occurrence",
                f"{{ head -n 1 {q(table.path)}; tail -n +2 {q(table.path)} | "
                f"LC_ALL=C sort -u; }} > {q(out)}"))
    else:
        keys = [f for f in csv_fields(table) if f.categorical() and f.name not in f.values]
        if not keys:
            raise NotApplicable("no repeated rows and no column with repeated values")
        key = ctx.rng.choice(keys)
        index = table.column(key.name)
        first: dict[str, tuple[str, ...]] = {}
        for row in table.rows:
            first.setdefault(row[index], row)
        rows = tuple(first.values())
        sentence = ctx.phrase([
            f"Keep only the first row for each `{key.name}` of {table.phrase}: write to "
            f"`{out}` the header and, for every `{key.name}` value, the first row that has it, "
            "in the original row order.",
            f"Deduplicate {table.phrase} on the column `{key.name}`: `{out}` must hold the "
            f"header and the first row of each `{key.name}` value (later rows with the same "
            f"`{key.name}` are dropped), order unchanged.",
            f"Save to `{out}` the rows of {table.phrase} whose `{key.name}` has not appeared "
            "in an earlier row (so one row per value, the first one), header included, in "
            "their original order.",
        ]) + ctx.hint(f"awk -F, '!seen[${index + 1}]++'")
        phrase = derive(table.phrase, f"the first row per `{key.name}` of {table.phrase}",
                        f"{table.phrase}, keeping only the first row per `{key.name}`")
        solution = f"awk -F, '!seen[${index + 1}]++' {q(table.path)} > {q(out)}"
        alternative = ctx.python([table.path, out], f"""
header, rows = read_csv(sys.argv[1])
i = header.index({key.name!r})
first = {{}}
for row in rows:
    first.setdefault(row[i], row)
write_csv(sys.argv[2], [header, *first.values()])
""", prelude=PY_TABLES)
        label = f"`{out}` holds the first row per {key.name}"
        ordered = sorted(rows, key=lambda row: row[index].encode())
        rules = [Rule("dedupe", f"that only the first row of each `{key.name}` is kept",
                      f"cat {q(table.path)} > {q(out)}")]
        if ordered != list(rows):
            rules.append(Rule(
                "order", "that the rows keep their original order",
                f"{{ head -n 1 {q(table.path)}; tail -n +2 {q(table.path)} | "
                f"LC_ALL=C sort -s -u -t, -k{index + 1},{index + 1}; }} > {q(out)}"))
    output = _csv(table, out, phrase, table.header, rows)
    return StepResult(
        output=output, instruction=sentence, solution=solution, alternative=alternative,
        notes=csv_notes(ctx), rules=tuple(rules),
        checks=[FileText(label, path=out, expected=output.text(),
                         compare=ctx.compare(order_matters=True), form="csv")],
        tools=("awk",))


@primitive("csv.top_n")
def top_n(ctx: StepContext, source) -> StepResult:
    """Report the rows with the largest values of a numeric column."""
    table = _table(source)
    numeric = [f for f in csv_fields(table) if f.numeric and f.distinct() >= 2]
    if not numeric or len(table.rows) < 4:
        raise NotApplicable("needs a numeric column and a few rows")
    field = ctx.rng.choice(numeric)
    index = table.column(field.name)
    count = ctx.pick_number(3, min(10, len(table.rows) - 1),
                            allowed=(1, len(table.rows) - 1))
    ranked = sorted(table.rows, key=lambda r: (-number(r[index]), r[0], ",".join(r)))
    lines = tuple(",".join(row) for row in ranked[:count])
    first = table.header[0]
    tie = (f"ties ordered by `{first}` in byte order, then by the whole line" if index
           else "ties ordered by the whole line in byte order")
    out = ctx.output_path(f"top-{count}", "txt")
    # The rows' own spelling, not the input's: an earlier step's CSV may quote its values
    # (the agent's choice there), and this text file's lines may feed a text step.
    shape = ("each row written as its values joined by commas, without quotes (the header "
             "left out)")
    sentence = ctx.phrase([
        f"Write the {count} rows of {table.phrase} with the largest `{field.name}` to `{out}`, "
        f"largest first ({tie}): {shape}.",
        f"Find the top {count} rows of {table.phrase} by `{field.name}` (numerically, "
        f"highest first; {tie}) and save them to `{out}`, {shape}.",
        f"Rank the data rows of {table.phrase} by `{field.name}`, descending ({tie}), and "
        f"write the first {count} of them to `{out}`, {shape}.",
    ]) + ctx.hint("tail -n +2 | sort -t, -k...nr | head")
    keys = f"-k{index + 1},{index + 1}nr" + (" -k1,1" if index else "")
    tiebreak = ((0, False, False),) if index else ()
    rules = []
    for name, stated, options, ranking in (
            ("largest", f"that the rows with the largest `{field.name}` are taken, largest "
             "first", f"-k{index + 1},{index + 1}n" + (" -k1,1" if index else ""),
             gnu_sort(table.rows, ((index, True, False), *tiebreak))),
            ("numeric", f"that `{field.name}` is compared as a number, not as text",
             f"-k{index + 1},{index + 1}r" + (" -k1,1" if index else ""),
             gnu_sort(table.rows, ((index, False, True), *tiebreak))),
            ("ties", f"that ties are ordered {tie.removeprefix('ties ordered ')}",
             f"-s -k{index + 1},{index + 1}nr",
             gnu_sort(table.rows, ((index, True, True),), stable=True))):
        if tuple(",".join(row) for row in ranking[:count]) != lines:
            rules.append(Rule(name, stated, f"tail -n +2 {q(table.path)} | LC_ALL=C sort -t, "
                                            f"{options} | head -n {count} > {q(out)}"))
    rules.append(Rule("top-n", f"that only the first {count} rows are written",
                      f"tail -n +2 {q(table.path)} | LC_ALL=C sort -t, {keys} > {q(out)}"))
    return StepResult(
        rules=tuple(rules),
        output=Report(path=out, phrase=f"the {count} rows with the largest `{field.name}` "
                      f"of {table.phrase} (values joined by commas, no header, largest first, "
                      f"{tie})", lines=lines),
        instruction=sentence,
        solution=(f"tail -n +2 {q(table.path)} | LC_ALL=C sort -t, {keys} | "
                  f"head -n {count} > {q(out)}"),
        alternative=ctx.python([table.path, out], f"""
header, rows = read_csv(sys.argv[1])
i = header.index({field.name!r})
lines = [(row, ','.join(row)) for row in rows]
lines.sort(key=lambda item: (-Decimal(item[0][i]),\
{' item[0][0].encode(),' if index else ''} item[1].encode()))
write_lines(sys.argv[2], [line for _, line in lines[:{count}]])
""", prelude=PY_TABLES),
        checks=[FileText(f"`{out}` holds the top {count} rows by {field.name}", path=out,
                         expected=lines_text(lines), compare=ctx.compare(order_matters=True))],
        tools=("sort", "head", "tail"))


# The alternative of csv.to_json: jq reads the lines raw (a value of an earlier step's
# output may be quoted, never holds a comma), the header names the keys, the columns the
# instruction calls numbers go through `tonumber`; printed compact.
FROM_CSV = ("[inputs | rtrimstr(\"\\r\") | select(length > 0) | split(\",\") | map(if test("
            "\"^\\\".*\\\"$\") then .[1:-1] | gsub(\"\\\"\\\"\"; \"\\\"\") else . end)] | "
            ".[0] as $h | "
            "[.[1:][] | [$h, .] | transpose | map(.[0] as $k | {key: $k, value: (if any("
            "$numbers[]; . == $k) then (.[1] | tonumber) else .[1] end)}) | from_entries]")

TO_JSON = """python3 - {src} {out} <<'PY'
import csv, json, sys
ints, floats = {ints!r}, {floats!r}
with open(sys.argv[1], newline="", encoding="utf-8") as handle:
    rows = list(csv.DictReader(handle))
def convert(key, value):
    return int(value) if key in ints else float(value) if key in floats else value
records = [{{k: convert(k, v) for k, v in row.items()}} for row in rows]
with open(sys.argv[2], "w", encoding="utf-8") as handle:
    json.dump(records, handle, ensure_ascii=False, indent=2)
    handle.write("\\n")
PY"""


@primitive("csv.to_json")
def to_json(ctx: StepContext, source) -> StepResult:
    """Turn CSV rows into a JSON array of objects (numeric columns as numbers)."""
    table = _table(source)
    fields = csv_fields(table)
    ints = tuple(f.name for f in fields if f.kind == "int")
    floats = tuple(f.name for f in fields if f.kind == "decimal")
    records = []
    for row in table.rows:
        record: dict = {}
        for name, value in zip(table.header, row, strict=True):
            record[name] = int(value) if name in ints else float(value) if name in floats \
                else value
        records.append(record)
    numeric = ints + floats
    types = (f"{names(numeric)} {'is a JSON number' if len(numeric) == 1 else 'are JSON numbers'}"
             " and every other value is a string" if numeric else "every value is a string")
    out = ctx.output_path(ctx.rng.choice(("records", "rows", "export")), "json")
    sentence = ctx.phrase([
        f"Convert {table.phrase} to a JSON array of objects in `{out}`: one object per data "
        f"row, in row order, keyed by the header names; {types}.",
        f"Write `{out}`: a JSON array with one object per row of {table.phrase} (same order), "
        f"whose keys are the column names of the header; {types}.",
        f"Turn every row of {table.phrase} into a JSON object mapping column name to value "
        f"and save the list, in the original row order, as `{out}`; {types}.",
    ]) + ctx.hint("python3 with the csv and json modules")
    return StepResult(
        output=JsonDoc(path=out, phrase=derive(
            table.phrase, f"{table.phrase} as a JSON array of objects",
            f"{table.phrase}, converted to JSON objects"),
                       records=tuple(records)),
        instruction=sentence,
        solution=TO_JSON.format(src=q(table.path), out=q(out), ints=ints, floats=floats),
        rules=(Rule("numbers", f"that {names(numeric)} "
                    f"{'is a JSON number' if len(numeric) == 1 else 'are JSON numbers'}",
                    TO_JSON.format(src=q(table.path), out=q(out), ints=(), floats=())),)
        if numeric else (),
        alternative=(f"jq -c -n -R --argjson numbers {q(json.dumps(list(numeric)))} "
                     f"{q(FROM_CSV)} {q(table.path)} > {q(out)}"),
        checks=[JsonValue(f"`{out}` holds the rows as JSON objects", path=out,
                          expected=records, ordered=True)],
        tools=("python3",))
