"""Columns, row conditions, sort orders and number formats shared by the table families.

The CSV, JSON and SQLite primitives all see their input as typed columns
(`ColumnValues`): the same conditions select rows (`pick_condition`), the same orders sort
them (`sort_options`), and numbers are handled one way. Values with decimals have at most
two; sums are exact in integer cents (`cents`) and written with exactly two decimals
(`money`), the digits awk's `printf "%.2f"` and SQLite's `printf('%.2f', ...)` print.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import CsvTable
from taskloom.generators.procedural.primitives.base import StepContext

INTEGER = re.compile(r"-?[0-9]+\Z")
DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]{1,2})?\Z")
DERIVED = re.compile(r"`[^/`]")  # a quoted column or table name; quoted paths start with /
UNSAFE = re.compile(r"[\"'\\`$\s]")  # characters a quoted literal in awk/jq/SQL must avoid


@dataclass(frozen=True)
class ColumnValues:
    """One column of a table, or one key of an array of objects: name, kind, every row's value."""

    name: str
    kind: str  # "int", "decimal" (at most two decimals) or "text"
    values: tuple  # str for CSV; str/int/float for JSON and SQLite

    @property
    def numeric(self) -> bool:
        """True for int and decimal columns."""
        return self.kind != "text"

    def distinct(self) -> int:
        """Number of different values."""
        return len(set(self.values))

    def categorical(self) -> bool:
        """A text column with a few repeated values, each safe to quote in a program."""
        count = len(self.values)
        return (self.kind == "text" and 2 <= self.distinct() <= min(12, count - 1)
                and all(isinstance(v, str) and v and not UNSAFE.search(v)
                        for v in self.values))

    def unique(self) -> bool:
        """Every row has a different value."""
        return self.distinct() == len(self.values)


def number(value) -> Decimal:
    """A numeric value (CSV text, int or float) as an exact decimal."""
    return Decimal(str(value))


def cents(value) -> int:
    """A value with at most two decimals in integer cents."""
    return int(number(value) * 100)


def money(amount_cents: int) -> str:
    """Cents written with exactly two decimals."""
    sign = "-" if amount_cents < 0 else ""
    whole, part = divmod(abs(amount_cents), 100)
    return f"{sign}{whole}.{part:02d}"


def names(items) -> str:
    """`a`, `b` and `c`."""
    quoted = [f"`{item}`" for item in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def csv_fields(table: CsvTable) -> list[ColumnValues]:
    """The columns of a table with their kinds (numeric only when declared and parseable)."""
    fields = []
    for index, name in enumerate(table.header):
        values = tuple(row[index] for row in table.rows)
        kind = "text"
        if name in table.numeric and values:
            if all(INTEGER.match(v) for v in values):
                kind = "int"
            elif all(DECIMAL.match(v) for v in values):
                kind = "decimal"
        fields.append(ColumnValues(name, kind, values))
    return fields


@dataclass(frozen=True)
class Condition:
    """A row condition: a numeric threshold (`>`/`<`) or equality with a text value."""

    column: str
    op: str  # ">", "<" or "==" (">=" and "<=" only in a mutant, `inclusive`)
    value: str  # an integer threshold, or the text value

    def holds(self, value) -> bool:
        """True when a row's value meets the condition."""
        if self.op == "==":
            return value == self.value
        amount, bound = number(value), Decimal(self.value)
        return {">": amount > bound, "<": amount < bound, ">=": amount >= bound,
                "<=": amount <= bound}[self.op]

    def inclusive(self) -> Condition:
        """The threshold condition with its bound included (`>=`/`<=`): a common mistake."""
        return dataclasses.replace(self, op=self.op + "=")

    def on_bound(self, values) -> bool:
        """True when a threshold condition has a value exactly on its bound.

        Only then does the strict `>`/`<` select other rows than `>=`/`<=` would.
        """
        return self.op in (">", "<") and any(number(v) == Decimal(self.value) for v in values)

    def words(self) -> str:
        """The condition in English: "`amount` is greater than 250"."""
        if self.op == "==":
            return f"`{self.column}` is `{self.value}`"
        relation = {">": "greater than", "<": "less than", ">=": "at least",
                    "<=": "at most"}[self.op]
        return f"`{self.column}` is {relation} {self.value}"

    def awk(self, index: int) -> str:
        """The condition on field `index` (0-based) of an `awk -F,` record."""
        if self.op == "==":
            return f'${index + 1} == "{self.value}"'
        return f"${index + 1} {self.op} {self.value}"

    def jq(self) -> str:
        """The condition on the current object in jq."""
        field = f'.["{self.column}"]'
        if self.op == "==":
            return f'{field} == "{self.value}"'
        return f"{field} {self.op} {self.value}"

    def python(self, expression: str) -> str:
        """The condition on a Python value (`expression`; a CSV string or a JSON value)."""
        if self.op == "==":
            return f"{expression} == {self.value!r}"
        return f"Decimal(str({expression})) {self.op} {self.value}"

    def sql(self) -> str:
        """The condition as an SQL expression."""
        if self.op == "==":
            return f"\"{self.column}\" = '{self.value}'"
        return f'"{self.column}" {self.op} {self.value}'


def pick_condition(ctx: StepContext, fields: list[ColumnValues], *, exclude: tuple[str, ...] = (),
                   avoid: frozenset[int] = frozenset()) -> tuple[Condition, list[int]]:
    """A condition that some rows meet and others do not, and the indexes of those rows.

    Thresholds and values are taken from the data; `avoid` are row indexes the condition
    must not select (rows an earlier step's checks pin).
    """
    count = len(fields[0].values) if fields else 0
    numeric = [f for f in fields if f.numeric and f.distinct() >= 3 and f.name not in exclude]
    textual = [f for f in fields if f.categorical() and f.name not in exclude]
    for _ in range(16):
        pool = numeric if numeric and (not textual or ctx.rng.random() < 0.6) else textual
        if not pool:
            break
        field = ctx.rng.choice(pool)
        if field.numeric:
            ordered = sorted({number(v) for v in field.values})
            middle = ordered[len(ordered) // 4: max(len(ordered) // 4 + 1,
                                                    3 * len(ordered) // 4)]
            # A value of the data (a whole one, for decimals) as the bound, so some row
            # lies exactly on it and a `>=` for `>` gives another answer.
            threshold = int(ctx.rng.choice([v for v in middle if v == int(v)] or middle))
            condition = Condition(field.name, ctx.rng.choice((">", "<")), str(threshold))
        else:
            counts = Counter(field.values)
            repeated = sorted(v for v, n in counts.items() if n >= 2) or sorted(counts)
            condition = Condition(field.name, "==", ctx.rng.choice(repeated))
        chosen = [i for i, v in enumerate(field.values) if condition.holds(v)]
        if 0 < len(chosen) < count and not avoid & set(chosen):
            return condition, chosen
    raise NotApplicable("no column gives a condition that selects part of the rows")


def sort_options(ctx: StepContext,
                 columns: list[ColumnValues]) -> list[tuple[ColumnValues, bool]]:
    """The (column, descending) orders a sort step may ask for, in random order.

    Numeric columns sort either way; a text column sorts ascending (byte order), and only
    when it holds at least two different values.
    """
    options = []
    for column in columns:
        if column.numeric:
            options += [(column, False), (column, True)]
        elif column.distinct() >= 2:
            options.append((column, False))
    ctx.rng.shuffle(options)
    return options


def derive(source: str, prefix: str, postfix: str) -> str:
    """How an output is named in goal-only instructions.

    A plain input ("the CSV file X") reads best as "the rows of X whose ..."; an input that
    is itself derived (its phrase names columns) as "..., keeping only the rows whose ...",
    so long chains read as a pipeline instead of nested "of the rows of the columns of".
    """
    return postfix if DERIVED.search(source) else prefix


# What CSV outputs look like where the instruction demands exact bytes (strictness 3).
# Below that the checks read CSV as RFC 4180 does (`FileText(form="csv")`), so quoting and
# line ends are the agent's choice and the instruction leaves them open.
CSV_NOTE = ("CSV files you write have the header row first, then one line per row, values "
            "separated by commas and never quoted, every line ending in a newline (LF).")


def csv_notes(ctx: StepContext) -> tuple[str, ...]:
    """The notes of a step that writes CSV: `CSV_NOTE` where bytes are compared."""
    return (CSV_NOTE,) if ctx.difficulty.strictness == 3 else ()


# The stdlib Python that alternative solutions of table steps start with: the other tool
# family than awk/cut/sort/jq. CSV is read with the csv module (so quoted values and CRLF
# line ends of an earlier step's output read right), JSON with the json module. Passed as
# the prelude of `ctx.python`: where the instruction demands exact bytes (strictness 3,
# `EXACT`) text ends with a newline (`END`) and CSV is written unquoted; otherwise the final
# newline of text is the agent's choice, and it is left out, and CSV quotes every value and
# ends lines with CRLF.
PY_TABLES = r'''import csv, io, json, sys
EXACT = END == '\n'
from collections import Counter
from decimal import Decimal
def read_csv(path):
    """The header and the data rows of a CSV file."""
    with open(path, newline='', encoding='utf-8') as handle:
        header, *rows = [row for row in csv.reader(handle) if row]
    return header, rows
def write_lines(path, lines):
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write('\n'.join(lines) + (END if lines else ''))
def write_csv(path, rows):
    """RFC 4180 CSV; every value quoted and CRLF line ends where the format is free."""
    if EXACT:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator='\n').writerows(rows)
        write_lines(path, buffer.getvalue().split('\n')[:-1])
    else:
        with open(path, 'w', newline='', encoding='utf-8') as handle:
            csv.writer(handle, quoting=csv.QUOTE_ALL).writerows(rows)
def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)
def write_json(path, value):
    """Compact, keys sorted, non-ASCII escaped: not how jq prints, the same JSON value."""
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(value, handle, sort_keys=True, separators=(',', ':'))
def shortest(value):
    """A JSON value as text: numbers in their shortest form (7.0 as 7)."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)
'''
