"""SQLite primitives: load a CSV, aggregate, export, update and delete rows with sqlite3.

Identifiers are always double-quoted (domain columns include SQL keywords such as
`group`). REAL values are read back through `printf('%.2f', ...)` and ordered by
`ROUND(..., 2)`, so float noise from SQL arithmetic never reaches an expected value.

Steps that change a database in place (import, update, delete) are side effects, so their
checks run on the final state even when later steps change the same table. Those checks
must stay true after such steps: a non-final import checks the columns and value types, a
delete that its rows are gone, an update (a sample of) the rows it changed; both also check
a row or two they leave alone (those exactly on a threshold's bound first), so a solution
that ignores the condition or includes the bound fails. Edits carry those rows in
`EditedDb.pinned` and later edits choose conditions that leave them alone. The whole table
is checked as the chain leaves it: by the last step when that step changes it, else by
`end_states` (a non-final import checked only its columns and types once, and a one-row
table with totals computed from the CSV earned the reward).

Each step declares the rules its sentence states (`Rule`) where the data exercises them:
the condition and its strict bound, the sort key, direction and tie-break, the header row,
the column types, exactly two decimals.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Artifact, CsvTable, Report, SqliteDb
from taskloom.generators.procedural.checks import CommandText, FileText
from taskloom.generators.procedural.primitives._tables import (
    ColumnValues,
    cents,
    csv_fields,
    money,
    names,
    number,
    pick_condition,
)
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    primitive,
)
from taskloom.generators.procedural.sources.tables import sql_literal
from taskloom.generators.procedural.world import lines_text, q

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
NEW_LABELS = ("archived", "review", "legacy", "flagged", "on-hold", "closed")
PIN_SAMPLE = 12  # rows an update pins (and checks) when later steps follow


@dataclass(frozen=True, eq=False)
class EditedDb(SqliteDb):
    """A database changed in place; rows whose `key` is in `pinned` must stay as they are."""

    key: str = ""
    pinned: frozenset = frozenset()


def ident(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _db(source) -> SqliteDb:
    if not isinstance(source, SqliteDb) or len(source.rows) < 3 or not source.table:
        raise NotApplicable("needs an SQLite table with at least three rows")
    return source


def db_fields(db: SqliteDb) -> list[ColumnValues]:
    """The columns of the table with their kinds."""
    kinds = {"INTEGER": "int", "REAL": "decimal"}
    return [ColumnValues(name, kinds.get(kind, "text"), tuple(row[i] for row in db.rows))
            for i, (name, kind) in enumerate(db.columns)]


def _where(db: SqliteDb) -> str:
    return f"the `{db.table}` table of the SQLite database `{db.path}`"


def _value_expr(name: str, kind: str) -> str:
    """How a column is selected for output (REAL with exactly two decimals)."""
    return f"printf('%.2f', {ident(name)})" if kind == "REAL" else ident(name)


def _cell(value, kind: str) -> str:
    """A value as the `_value_expr` output prints it."""
    return money(cents(value)) if kind == "REAL" else str(value)


def _key(db: SqliteDb) -> int | None:
    """Index of the column that identifies rows, or None.

    That is the column an earlier edit used, else the first TEXT or INTEGER column whose
    values are all different.
    """
    if isinstance(db, EditedDb) and db.key:
        return [name for name, _ in db.columns].index(db.key)
    for index, (_, kind) in enumerate(db.columns):
        values = [row[index] for row in db.rows]
        if kind in ("TEXT", "INTEGER") and len(set(values)) == len(values):
            return index
    return None


# An ordinary table (not a view, nor a virtual table over other rows), each column with the
# type affinity SQLite gives its declared type, hidden and generated columns included.
_SCHEMA = ("SELECT (SELECT type FROM sqlite_master WHERE name = '{table}' AND sql LIKE "
           "'CREATE TABLE%') || ': ' || group_concat(name || ' ' || CASE "
           "WHEN upper(type) LIKE '%INT%' THEN 'INTEGER' "
           "WHEN upper(type) GLOB '*CHAR*' OR upper(type) GLOB '*CLOB*' "
           "OR upper(type) GLOB '*TEXT*' THEN 'TEXT' "
           "WHEN type = '' OR upper(type) GLOB '*BLOB*' THEN 'BLOB' "
           "WHEN upper(type) GLOB '*REAL*' OR upper(type) GLOB '*FLOA*' "
           "OR upper(type) GLOB '*DOUB*' THEN 'REAL' ELSE 'NUMERIC' END, ', ') "
           "FROM pragma_table_xinfo('{table}')")


def _script(options: str, path: str, sql: str, out: str = "") -> str:
    """A sqlite3 call reading `sql` from a here-document (no shell quoting inside SQL)."""
    target = f" > {q(out)}" if out else ""
    return f"sqlite3{options} {q(path)}{target} <<'SQL'\n{sql}\nSQL"


def _sqlite(path: str, query: str) -> tuple[str, ...]:
    return ("sqlite3", "-batch", "-list", "-noheader", path, query)


def _on_bound(condition, fields: list[ColumnValues]) -> list[int]:
    """Indexes of the rows exactly on a threshold condition's bound (none for `==`).

    A `>=` written for "greater than" (or `<=` for "less than") selects them too.
    """
    field = next(f for f in fields if f.name == condition.column)
    if not condition.on_bound(field.values):
        return []
    return [i for i, v in enumerate(field.values) if number(v) == number(condition.value)]


# Shared head of the python alternatives: quoting names, testing a row condition.
PY_SQL = r'''
import sqlite3
import sys


def name(text):
    return '"' + text.replace('"', '""') + '"'


def holds(value, op, wanted):
    if op == "is":
        return value == wanted
    if op == "greater":
        return value is not None and float(value) > float(wanted)
    return value is not None and float(value) < float(wanted)
'''


def _condition_args(condition) -> tuple[str, str, str]:
    """A condition as the instruction words it: column, relation, value."""
    op = {"==": "is", ">": "greater", "<": "less"}[condition.op]
    return condition.column, op, condition.value


def _stored_expr(name: str, kind: str) -> str:
    """How a check reads a stored value: as `quote()` shows it.

    So its type shows (the text '38' is not the integer 38), and so does every space in a
    text (a line's trailing blanks are not compared); a REAL must be a real, shown with
    exactly two decimals.
    """
    column = ident(name)
    if kind == "REAL":
        return f"CASE typeof({column}) WHEN 'real' THEN printf('%.2f', {column}) " \
               f"ELSE quote({column}) END"
    return f"quote({column})"


def _stored_cell(value, kind: str) -> str:
    """A value as `_stored_expr` reads it."""
    if kind == "REAL":
        return money(cents(value))
    return "NULL" if value is None else sql_literal(value)


def _schema(db: SqliteDb) -> CommandText:
    """A check that the table is an ordinary table with its columns and their types.

    A view of the kept rows over the whole table is not, nor a table rebuilt with others.
    """
    return CommandText(f"`{db.path}` has the table {db.table} with its columns",
                       argv=_sqlite(db.path, _SCHEMA.format(table=db.table)),
                       expected="table: " + ", ".join(f"{name} {kind}"
                                                      for name, kind in db.columns) + "\n",
                       compare="lines")


def _dump(db: SqliteDb, rows, label: str, compare, keys=None) -> CommandText:
    """A check that the table (or the rows with these keys) holds exactly `rows`."""
    key = _key(db)
    exprs = ", ".join(_stored_expr(name, kind) for name, kind in db.columns)
    if key is not None:
        order = ident(db.columns[key][0])
        ordered = sorted(rows, key=lambda r: r[key])
    else:
        order = ", ".join(ident(name) for name, _ in db.columns)
        ordered = sorted(rows)
    where = ""
    if keys is not None:
        where = (f" WHERE {ident(db.columns[key][0])} IN "
                 f"({', '.join(sql_literal(k) for k in sorted(keys))})")
    query = f"SELECT {exprs} FROM {ident(db.table)}{where} ORDER BY {order}"
    lines = ["|".join(_stored_cell(v, kind) for v, (_, kind) in zip(row, db.columns,
                                                                  strict=True))
             for row in ordered]
    return CommandText(label, argv=_sqlite(db.path, query), expected=lines_text(lines),
                       compare=compare)


@primitive("sqlite.import_csv")
def import_csv(ctx: StepContext, source) -> StepResult:
    """Create a typed table from a CSV file."""
    if not isinstance(source, CsvTable) or len(source.rows) < 3 or len(source.header) < 2:
        raise NotApplicable("needs a CSV table with at least three rows")
    if not all(IDENTIFIER.match(name) for name in source.header):
        raise NotApplicable("column names are not plain identifiers")
    fields = csv_fields(source)
    types = {"int": "INTEGER", "decimal": "REAL"}
    columns = tuple((f.name, types.get(f.kind, "TEXT")) for f in fields)
    convert = {"INTEGER": int, "REAL": float, "TEXT": str}
    rows = tuple(tuple(convert[kind](value) for value, (_, kind) in zip(row, columns,
                                                                        strict=True))
                 for row in source.rows)
    domain_columns = {c.name for c in ctx.domain.columns}
    table = ctx.domain.table if set(source.header) <= domain_columns else "records"
    out = ctx.output_path(ctx.domain.name, "db")
    schema = ", ".join(f"`{name}` {kind}" for name, kind in columns)
    sentence = ctx.phrase([
        f"Create a new SQLite database `{out}` with a table `{table}` whose columns are "
        f"{schema} (in this order), and load into it every data row (not the header) of "
        f"{source.phrase}.",
        f"Create the SQLite database `{out}` holding a table `{table}` ({schema}, in that "
        f"order) with one row per data row of {source.phrase}; the CSV header is not data.",
        f"Build the SQLite database `{out}`: create the table `{table}` with the typed "
        f"columns {schema}, then insert into it every row except the header of "
        f"{source.phrase}.",
    ]) + ctx.hint("sqlite3 with CREATE TABLE, then .import --csv")
    create = (f"CREATE TABLE {ident(table)} ("
              + ", ".join(f"{ident(name)} {kind}" for name, kind in columns) + ");")
    db = SqliteDb(path=out, phrase=f"the `{table}` table of the SQLite database `{out}`",
                  table=table, columns=columns, rows=rows)
    typeof = " || ' ' || ".join(f"typeof({ident(name)})" for name, _ in columns)
    checks = [
        _schema(db),
        CommandText(f"the columns of {table} hold typed values",
                    argv=_sqlite(out, f"SELECT DISTINCT {typeof} FROM {ident(table)}"),
                    expected=" ".join(kind.lower() for _, kind in columns) + "\n",
                    compare="lines"),
    ]
    if ctx.final:
        checks.append(_dump(db, rows, f"{table} holds the rows of the CSV",
                            ctx.compare()))
    load_all = f"sqlite3 {q(out)} {q(f'.import --csv /dev/stdin {table}')} < {q(source.path)}"
    rules = []
    if any(kind != "TEXT" for _, kind in columns):  # the typed values are checked
        # `.import` into a missing table creates it from the header, every column TEXT
        rules.append(Rule("types", "that the columns have the stated types", load_all))
    if ctx.final:  # later steps could delete the header's row again (`amount > 5` holds)
        rules.append(Rule("header", "that the CSV header row is not data",
                          _script("", out, create) + "\n" + load_all))
    return StepResult(
        output=db, instruction=sentence,
        solution=(_script("", out, create) + "\n"
                  f"tail -n +2 {q(source.path)} | sqlite3 {q(out)} "
                  f"{q(f'.import --csv /dev/stdin {table}')}"),
        # python's csv and sqlite3 modules, values converted to the stated types, the rows
        # inserted last to first (a table's row order is not part of the task)
        alternative=ctx.python([source.path, out, table, *(f"{n} {k}" for n, k in columns)],
                               PY_IMPORT, prelude=PY_SQL),
        checks=checks, tools=("sqlite3",), side_effect=True, rules=tuple(rules))


PY_IMPORT = r'''
import csv

source, target, table, *spec = sys.argv[1:]
columns = [item.rsplit(" ", 1) for item in spec]
convert = {"INTEGER": int, "REAL": float, "TEXT": str}
with open(source, newline="", encoding="utf-8") as handle:
    records = [row for row in csv.reader(handle)][1:]
values = [[convert[kind](value) for value, (_, kind) in zip(row, columns)]
          for row in records if row]
db = sqlite3.connect(target)
with db:
    db.execute(f"CREATE TABLE {name(table)} ("
               + ", ".join(f"{name(column)} {kind}" for column, kind in columns) + ")")
    db.executemany(f"INSERT INTO {name(table)} VALUES ({', '.join('?' * len(columns))})",
                   reversed(values))
db.close()
'''

AGGREGATES = {"SUM": "total", "MAX": "largest", "MIN": "smallest", "COUNT": "number of rows"}


PY_GROUP = r'''
import math

path, table, group, function, field, decimals, order, out = sys.argv[1:]
db = sqlite3.connect(path)
groups = {}
for key, value in db.execute(f"SELECT {name(group)}, {name(field) if field else 1} "
                             f"FROM {name(table)}"):
    groups.setdefault(key, []).append(value)
db.close()
total = math.fsum if decimals == "2" else sum
aggregate = {"SUM": total, "MAX": max, "MIN": min, "COUNT": len}[function]
results = {key: aggregate(values) for key, values in groups.items()}
if order == "value":  # amounts compare by their cents: float noise is no difference
    ranked = sorted(results, key=lambda key: (-round(results[key], 2), key))
else:
    ranked = sorted(results)
shown = [f"{key}|{results[key]:.2f}" if decimals == "2" else f"{key}|{int(results[key])}"
         for key in ranked]
with open(out, "w", encoding="utf-8") as handle:
    handle.write("\n".join(shown) + END)
'''


@primitive("sqlite.group_by")
def group_by(ctx: StepContext, source) -> StepResult:
    """Query an aggregate per group of a table."""
    db = _db(source)
    fields = db_fields(db)
    kinds = dict(db.columns)
    groups = [f for f in fields if f.categorical()]
    numeric = [f for f in fields if f.numeric]
    if not groups:
        raise NotApplicable("no column to group by")
    group = ctx.rng.choice(groups)
    function = ctx.rng.choice(("SUM", "SUM", "MAX", "MIN")) if numeric else "COUNT"
    if function != "COUNT" and ctx.rng.random() < 0.15:
        function = "COUNT"
    field = ctx.rng.choice(numeric) if function != "COUNT" else None
    buckets: dict[str, list] = defaultdict(list)
    for index, key in enumerate(group.values):
        buckets[key].append(field.values[index] if field else 1)
    results: dict[str, int] = {}  # cents for REAL, units otherwise
    real = field is not None and kinds[field.name] == "REAL"
    for key, values in buckets.items():
        amounts = [cents(v) if real else int(v) for v in values]
        results[key] = {"SUM": sum, "MAX": max, "MIN": min, "COUNT": len}[function](amounts)
    by_value = ctx.rng.random() < 0.4
    if by_value:
        ranked = sorted(results.items(), key=lambda item: (-item[1], item[0]))
    else:
        ranked = sorted(results.items())
    lines = tuple(f"{key}|{money(value) if real else value}" for key, value in ranked)
    what = (f"{AGGREGATES[function]} `{field.name}`" if field else "number of rows")
    fmt = ("with exactly two decimals" if real else "as a whole number")
    if by_value:
        order = (f"ordered by the {AGGREGATES[function]} value, highest first, ties by "
                 f"`{group.name}` in byte order")
    else:
        order = f"ordered by `{group.name}` in byte order"
    stated = order if by_value else ctx.order(order)
    out = ctx.output_path(f"{function.lower()}-per-{group.name}", "txt")
    sentence = ctx.phrase([
        f"Query {_where(db)} for the {what} per `{group.name}` and write the result to "
        f"`{out}`: one line per `{group.name}` value, formatted `VALUE|RESULT` (sqlite3's "
        f"default list output), the result {fmt}, {stated}.",
        f"Write to `{out}` the {what} for each `{group.name}` of {_where(db)}: one "
        f"`VALUE|RESULT` line per group (the `{group.name}`, a `|`, then the result), the "
        f"result {fmt}, {stated}.",
        f"Aggregate {_where(db)} by `{group.name}` and save the {what} of each group to "
        f"`{out}` as `VALUE|RESULT` lines (the result {fmt}), {stated}.",
    ]) + ctx.hint("sqlite3 with GROUP BY" + (" and ORDER BY" if stated == order else ""))
    column = ident(group.name)
    if field:
        raw = f"{function}({ident(field.name)})"
        shown = f"printf('%.2f', {raw})" if real else raw
        ranking = f"ROUND({raw}, 2)" if real else raw
    else:
        raw = shown = ranking = "COUNT(*)"
    order_by = f"{ranking} DESC, {column}" if by_value else column

    def query_for(shown: str = shown, order_by: str = order_by) -> str:
        return (f"SELECT {column}, {shown} FROM {ident(db.table)} GROUP BY {column} "
                f"ORDER BY {order_by};")

    def shown_lines(items) -> tuple[str, ...]:
        return tuple(f"{key}|{money(value) if real else value}" for key, value in items)

    query = query_for()
    rules = []
    if by_value:  # the order is checked (`lines` or `exact`)
        if shown_lines(sorted(results.items())) != lines:
            rules.append(Rule("order", f"that the lines are ordered by the {AGGREGATES[function]}"
                              " value", _script("", db.path, query_for(order_by=column), out)))
        rising = sorted(results.items(), key=lambda item: (item[1], item[0]))
        if shown_lines(rising) != lines:
            rules.append(Rule("descending", "that the highest value comes first",
                              _script("", db.path, query_for(order_by=f"{ranking}, {column}"),
                                      out)))
    if real and any(value % 10 == 0 for value in results.values()):
        # sqlite3 prints a REAL as briefly as it can: 12.5 and 12.0, not 12.50 and 12.00
        rules.append(Rule("two-decimals", "that the results have exactly two decimals",
                          _script("", db.path, query_for(shown=raw), out)))
    return StepResult(
        output=Report(path=out, phrase=f"the {what} per `{group.name}` in {_where(db)} "
                      f"(`VALUE|RESULT` lines, the result {fmt}, {order})", lines=lines),
        instruction=sentence,
        solution=_script("", db.path, query, out),
        # python: the rows read with the sqlite3 module, grouped and aggregated in python
        alternative=ctx.python([db.path, db.table, group.name, function,
                                field.name if field else "", "2" if real else "0",
                                "value" if by_value else "group", out],
                               PY_GROUP, prelude=PY_SQL),
        checks=[FileText(f"`{out}` holds the {what} per {group.name}", path=out,
                         expected=lines_text(lines),
                         compare=ctx.compare(order_matters=by_value))],
        tools=("sqlite3",), rules=tuple(rules))


@primitive("sqlite.export_csv")
def export_csv(ctx: StepContext, source) -> StepResult:
    """Write the rows a query selects as CSV with a header."""
    db = _db(source)
    fields = db_fields(db)
    kinds = dict(db.columns)
    condition, chosen = pick_condition(ctx, fields)
    key = _key(db)
    count = len(db.columns)
    picked = set(ctx.rng.sample(range(count), ctx.rng.randint(min(2, count), count)))
    if key is not None:
        picked.add(key)
    selected = sorted(picked)
    sortable = [f for f in fields if f.numeric or f.distinct() >= 2]
    by = ctx.rng.choice(sortable)
    descending = by.numeric and ctx.rng.random() < 0.7
    by_index = [name for name, _ in db.columns].index(by.name)

    def tie(row):
        return (row[key],) if key is not None else tuple(row[i] for i in selected)

    rows = [db.rows[i] for i in chosen]
    if by.numeric:
        rows.sort(key=lambda r: (-number(r[by_index]) if descending else number(r[by_index]),
                                 tie(r)))
    else:
        rows.sort(key=lambda r: (r[by_index], tie(r)))
    header = tuple(db.columns[i][0] for i in selected)
    text_rows = tuple(tuple(_cell(row[i], db.columns[i][1]) for i in selected) for row in rows)
    reals = [db.columns[i][0] for i in selected if db.columns[i][1] == "REAL"]
    fmt = (f", {names(reals)} written with exactly two decimals" if reals else "")
    direction = ("largest first" if descending else "smallest first") if by.numeric \
        else "ascending in byte order"
    if key is not None and by_index == key:
        tie_words = ""
    elif key is not None:
        tie_words = f", ties by `{db.columns[key][0]}` ascending"
    else:
        tie_words = ", ties by the selected columns in order, ascending"
    order = f"rows ordered by `{by.name}`, {direction}{tie_words}"
    out = ctx.output_path("export", "csv")
    sentence = ctx.phrase([
        f"Export the rows of {_where(db)} whose {condition.words()} to the CSV file `{out}`: "
        f"the columns {names(header)} in that order, a header row with those names, values "
        f"separated by commas without quotes{fmt}; {order}.",
        f"Write `{out}` as CSV with a header row and the columns {names(header)} (in this "
        f"order), holding the rows of {_where(db)} where {condition.words()}; values "
        f"unquoted{fmt}; {order}.",
        f"Select from {_where(db)} the rows whose {condition.words()} and save the columns "
        f"{names(header)} (this order, header line first, comma-separated, unquoted{fmt}) "
        f"to `{out}`, {order}.",
    ]) + ctx.hint("sqlite3 -header -separator ,")

    def ordering(name: str) -> str:
        return f"ROUND({ident(name)}, 2)" if kinds[name] == "REAL" else ident(name)

    ties = [db.columns[key][0]] if key is not None else list(header)
    order_by = ", ".join([f"{ordering(by.name)}{' DESC' if descending else ''}"] +
                         [ordering(name) for name in ties if name != by.name])
    exprs = ", ".join(f"{_value_expr(name, kinds[name])} AS {ident(name)}"
                      if kinds[name] == "REAL" else ident(name) for name in header)
    query = (f"SELECT {exprs} FROM {ident(db.table)} WHERE {condition.sql()} "
             f"ORDER BY {order_by};")
    numeric = tuple(name for name in header if kinds[name] in ("INTEGER", "REAL"))
    rules = _export_rules(db, out, condition, chosen, rows, selected, exprs, by_index,
                          descending, [ordering(by.name)] +
                          [ordering(name) for name in ties if name != by.name])
    output = CsvTable(path=out, phrase=f"the rows of {_where(db)} whose {condition.words()}"
                      f" (as CSV with the columns {names(header)}{fmt}; {order})",
                      header=header, rows=text_rows, numeric=numeric)
    return StepResult(
        output=output, instruction=sentence,
        solution=_script(" -header -separator ,", db.path, query, out),
        # python: every row read with the sqlite3 module, filtered and sorted in python,
        # written with the csv module
        alternative=ctx.python([db.path, db.table, out, *_condition_args(condition),
                                ",".join(header), ",".join(reals), by.name,
                                "desc" if descending else "asc",
                                ",".join(name for name in ties if name != by.name)],
                               PY_EXPORT, prelude=PY_SQL),
        checks=[FileText(f"`{out}` holds the exported rows", path=out, expected=output.text(),
                         compare=ctx.compare(order_matters=True))],
        tools=("sqlite3",), rules=rules)


def _export_rules(db: SqliteDb, out: str, condition, chosen: list[int], rows: list,
                  selected: list[int], exprs: str, by_index: int, descending: bool,
                  ordering: list[str]) -> tuple[Rule, ...]:
    """The rules of an export the data exercises (the output's rows are checked in order).

    `rows` are the expected rows in order, `ordering` the sort key and its tie-breaks (as
    SQL, ascending). Each rule's solution is the export's query with one part wrong, kept
    only when its rows (or their text) differ from the expected ones.
    """
    by_sql, *ties = ordering
    order_by = ", ".join([by_sql + (" DESC" if descending else ""), *ties])

    def query(select: str = exprs, where: str = condition.sql(), order: str = order_by,
              options: str = " -header -separator ,") -> str:
        clauses = (f" WHERE {where}" if where else "") + (f" ORDER BY {order}" if order else "")
        return _script(options, db.path, f"SELECT {select} FROM {ident(db.table)}{clauses};",
                       out)

    def by(row):
        return number(row[by_index])

    kept = [db.rows[i] for i in chosen]  # table order (rowid order after any edits)
    rules = [Rule("filter", f"that only the rows whose {condition.words()} are exported",
                  query(where=""))]
    edge = _on_bound(condition, db_fields(db))
    if edge:
        rules.append(Rule("bound", f"that a `{condition.column}` of exactly {condition.value} "
                          "does not match", query(where=condition.inclusive().sql())))
    if kept != rows:
        rules.append(Rule("order", "the order of the rows", query(order="")))
    if descending and len({by(row) for row in kept}) > 1:  # ascending: another order
        rules.append(Rule("descending", "that the largest values come first",
                          query(order=", ".join([by_sql, *ties]))))
    ranked = sorted(kept, key=lambda row: -by(row) if descending else by(row)) \
        if db.columns[by_index][1] != "TEXT" else sorted(kept, key=lambda row: row[by_index])
    if ranked != rows:  # ties would stay in table order
        rules.append(Rule("ties", "the tie-break of the row order",
                          query(order=f"{by_sql}{' DESC' if descending else ''}, rowid")))
    reals = [i for i in selected if db.columns[i][1] == "REAL"]
    if any(cents(row[i]) % 10 == 0 for row in kept for i in reals):
        # sqlite3 prints a REAL as briefly as it can: 12.5 and 12.0, not 12.50 and 12.00
        rules.append(Rule("two-decimals", "that the amounts have exactly two decimals",
                          query(select=", ".join(ident(db.columns[i][0]) for i in selected))))
    rules.append(Rule("header", "the header row", query(options=" -separator ,")))
    return tuple(rules)


PY_EXPORT = r'''
import csv
import io

path, table, out, column, op, wanted, selected, reals, by, direction, ties = sys.argv[1:]
selected, reals, ties = (text.split(",") if text else [] for text in (selected, reals, ties))
db = sqlite3.connect(path)
cursor = db.execute(f"SELECT * FROM {name(table)}")
fields = [item[0] for item in cursor.description]
rows = [dict(zip(fields, row)) for row in cursor if holds(row[fields.index(column)], op,
                                                           wanted)]
db.close()


def rank(value):  # amounts compare by their cents: float noise is no difference
    return round(value, 2) if isinstance(value, float) else value


def order(row):
    first = rank(row[by])
    return (-first if direction == "desc" else first, *(rank(row[tie]) for tie in ties))


rows.sort(key=order)
lines = [selected] + [[f"{row[c]:.2f}" if c in reals else str(row[c]) for c in selected]
                      for row in rows]
buffer = io.StringIO()
csv.writer(buffer, lineterminator="\n").writerows(lines)
with open(out, "w", newline="", encoding="utf-8") as handle:
    handle.write(buffer.getvalue()[:-1] + END)
'''


def _editable(db: SqliteDb) -> tuple[int, frozenset, set[int]]:
    """The key column, the pinned keys and the row indexes later edits must avoid."""
    key = _key(db)
    if key is None:
        raise NotApplicable("no column identifies the rows")
    pinned = db.pinned if isinstance(db, EditedDb) else frozenset()
    avoid = {i for i, row in enumerate(db.rows) if row[key] in pinned}
    return key, pinned, avoid


PY_UPDATE = r'''
path, table, column, op, wanted, target, edit, amount = sys.argv[1:]
db = sqlite3.connect(path)
with db:
    rows = db.execute(f"SELECT rowid, {name(column)}, {name(target)} FROM {name(table)}")
    for rowid, value, old in rows.fetchall():
        if holds(value, op, wanted):
            new = old + int(amount) if edit == "add" else amount
            db.execute(f"UPDATE {name(table)} SET {name(target)} = ? WHERE rowid = ?",
                       (new, rowid))
db.close()
'''

PY_DELETE = r'''
path, table, column, op, wanted = sys.argv[1:]
db = sqlite3.connect(path)
with db:
    rows = db.execute(f"SELECT rowid, {name(column)} FROM {name(table)}").fetchall()
    db.executemany(f"DELETE FROM {name(table)} WHERE rowid = ?",
                   [(rowid,) for rowid, value in rows if holds(value, op, wanted)])
db.close()
'''


@primitive("sqlite.update_rows")
def update_rows(ctx: StepContext, source) -> StepResult:
    """Apply an UPDATE to the rows matching a condition."""
    db = _db(source)
    key, pinned, avoid = _editable(db)
    fields = db_fields(db)
    key_name = db.columns[key][0]
    targets = [f for f in fields if f.name != key_name and (f.numeric or f.categorical())]
    ctx.rng.shuffle(targets)
    for target in targets:
        try:
            condition, chosen = pick_condition(ctx, fields, exclude=(target.name,),
                                               avoid=frozenset(avoid))
        except NotApplicable:
            continue
        break
    else:
        raise NotApplicable("no column and condition to update")
    index = [name for name, _ in db.columns].index(target.name)
    kind = db.columns[index][1]
    if target.numeric:
        step = ctx.rng.choice((5, 10, 20, 25, 50))
        change = f"{ident(target.name)} + {step}"
        words = f"add {step} to `{target.name}`"
        edit = ("add", str(step))
        if kind == "REAL":
            def new(value):
                return float(money(cents(value) + step * 100))
        else:
            def new(value):
                return value + step
    else:
        labels = [v for v in NEW_LABELS if v not in target.values]
        if not labels:
            raise NotApplicable("every replacement label is already in use")
        label = ctx.rng.choice(labels)
        change = sql_literal(label)
        words = f"set `{target.name}` to `{label}`"
        edit = ("set", label)

        def new(value):
            return label
    chosen_set = set(chosen)
    rows = tuple(tuple(new(v) if i == index and r in chosen_set else v
                       for i, v in enumerate(row)) for r, row in enumerate(db.rows))
    sentence = ctx.phrase([
        f"In {_where(db)}, {words} for every row whose {condition.words()}; leave all "
        "other rows and columns unchanged.",
        f"Update {_where(db)} in place: for the rows where {condition.words()}, {words}. "
        "Nothing else in the table may change.",
        f"Apply a correction to {_where(db)}: {words} in each row whose "
        f"{condition.words()} (only those rows; other values stay as they are).",
    ]) + ctx.hint("sqlite3 with UPDATE ... SET ... WHERE")
    statement = (f"UPDATE {ident(db.table)} SET {ident(target.name)} = {change} "
                 f"WHERE {condition.sql()};")
    changed_keys = [db.rows[i][key] for i in chosen]
    sample = frozenset(ctx.rng.sample(changed_keys, min(PIN_SAMPLE, len(changed_keys))))
    edge = _on_bound(condition, fields)
    if not ctx.final:  # and rows it leaves alone, those on the bound first
        sample |= _untouched(ctx, db, key, edge, chosen_set)
    output = EditedDb(path=db.path, phrase=_where(db), table=db.table, columns=db.columns,
                      rows=rows, key=key_name, pinned=pinned | sample)
    if ctx.final:
        checks = [_schema(db), _dump(output, rows, f"{db.table} holds the updated rows",
                                     ctx.compare())]
    else:
        kept = [row for row in rows if row[key] in sample]
        checks = [_schema(db), _dump(output, kept, f"the rows of {db.table} whose "
                                     f"{condition.words()} are updated, and some others are "
                                     "not", ctx.compare(), keys=sample)]
    # python: the matching rows found in python, each changed by its rowid
    alternative = ctx.python([db.path, db.table, *_condition_args(condition), target.name,
                              *edit], PY_UPDATE, prelude=PY_SQL)
    update = f"UPDATE {ident(db.table)} SET {ident(target.name)} = {change}"
    rules = [Rule("filter", f"that only the rows whose {condition.words()} change",
                  _script("", db.path, f"{update};"))]
    if edge:
        rules.append(Rule("bound", f"that a `{condition.column}` of exactly {condition.value} "
                          "does not match",
                          _script("", db.path, f"{update} WHERE {condition.inclusive().sql()};")))
    return StepResult(output=output, instruction=sentence,
                      solution=_script("", db.path, statement), checks=checks,
                      alternative=alternative, tools=("sqlite3",), side_effect=True,
                      rules=tuple(rules))


def _untouched(ctx: StepContext, db: SqliteDb, key: int, edge: list[int],
               chosen: set[int]) -> frozenset:
    """Keys of rows an edit leaves alone, for its checks when later steps follow.

    The rows exactly on the condition's bound (a `>=` for `>` would edit them), else one
    row the condition does not select (ignoring the condition would edit it).
    """
    rows = edge[:2] or ctx.rng.sample([i for i in range(len(db.rows)) if i not in chosen], 1)
    return frozenset(db.rows[i][key] for i in rows)


@primitive("sqlite.delete_rows")
def delete_rows(ctx: StepContext, source) -> StepResult:
    """Delete the rows matching a condition."""
    db = _db(source)
    key, pinned, avoid = _editable(db)
    fields = db_fields(db)
    for _ in range(4):  # leave enough rows for the steps that may follow
        condition, chosen = pick_condition(ctx, fields, avoid=frozenset(avoid))
        if len(db.rows) - len(chosen) >= 3:
            break
    else:
        raise NotApplicable("every condition found would delete almost all rows")
    gone = set(chosen)
    rows = tuple(row for i, row in enumerate(db.rows) if i not in gone)
    sentence = ctx.phrase([
        f"Delete from {_where(db)} every row whose {condition.words()}; keep all other rows "
        "as they are.",
        f"Remove the rows of {_where(db)} where {condition.words()} (in place; the other "
        "rows must not change).",
        f"Clean up {_where(db)}: rows whose {condition.words()} must be deleted, every other "
        "row kept unchanged.",
    ]) + ctx.hint("sqlite3 with DELETE FROM ... WHERE")
    statement = f"DELETE FROM {ident(db.table)} WHERE {condition.sql()};"
    key_name = db.columns[key][0]
    edge = _on_bound(condition, fields)
    # rows it keeps, checked (and left alone by later edits) when later steps follow
    kept = frozenset() if ctx.final else _untouched(ctx, db, key, edge, gone)
    output = EditedDb(path=db.path, phrase=_where(db), table=db.table, columns=db.columns,
                      rows=rows, key=key_name, pinned=pinned | kept)
    if ctx.final:
        checks = [_schema(db), _dump(output, rows, f"{db.table} lost exactly the rows whose "
                                     f"{condition.words()}", ctx.compare())]
    else:
        deleted = sorted(db.rows[i][key] for i in chosen)[:20]
        query = (f"SELECT count(*) FROM {ident(db.table)} WHERE {ident(key_name)} IN "
                 f"({', '.join(sql_literal(k) for k in deleted)})")
        checks = [_schema(db),
                  CommandText(f"the rows of {db.table} whose {condition.words()} are gone",
                              argv=_sqlite(db.path, query), expected="0\n", compare="lines"),
                  _dump(output, [row for row in rows if row[key] in kept],
                        f"other rows of {db.table} are kept", ctx.compare(), keys=kept)]
    # python: the matching rows found in python, deleted by their rowids
    alternative = ctx.python([db.path, db.table, *_condition_args(condition)], PY_DELETE,
                             prelude=PY_SQL)
    delete = f"DELETE FROM {ident(db.table)}"
    rules = [Rule("filter", f"that only the rows whose {condition.words()} are deleted",
                  _script("", db.path, f"{delete};"))]
    if edge:
        rules.append(Rule("bound", f"that a `{condition.column}` of exactly {condition.value} "
                          "does not match",
                          _script("", db.path, f"{delete} WHERE {condition.inclusive().sql()};")))
    return StepResult(output=output, instruction=sentence,
                      solution=_script("", db.path, statement), checks=checks,
                      alternative=alternative, tools=("sqlite3",), side_effect=True,
                      rules=tuple(rules))


def end_states(outputs: list[tuple[Artifact, bool]]
               ) -> list[tuple[tuple[int, ...], CommandText]]:
    """Checks of every table changed in place, holding exactly the rows the chain leaves.

    `outputs` are the steps' outputs in order, with whether each step is a side effect.
    Returns each check with the indexes of the steps that changed its table (their
    sentences demand it). A table the last step changes is left out: that step checks the
    whole of it.
    """
    changed: dict[tuple[str, str], list[int]] = {}
    last: dict[tuple[str, str], SqliteDb] = {}
    for index, (output, side_effect) in enumerate(outputs):
        if not isinstance(output, SqliteDb):
            continue
        place = (output.path, output.table)
        last[place] = output
        if side_effect:
            changed.setdefault(place, []).append(index)
    final = len(outputs) - 1
    return [(tuple(steps), _dump(last[place], last[place].rows,
                                 f"{place[1]} holds exactly the rows the steps leave in it",
                                 "lines"))
            for place, steps in changed.items() if steps[-1] != final]
