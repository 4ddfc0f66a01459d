"""Table sources: the domain's table as CSV, as a JSON array of objects, as SQLite.

One row generator (`table_rows`) feeds all three, so ids are unique and every category
appears whatever the format.
"""

from __future__ import annotations

from taskloom.generators.procedural.artifacts import CsvTable, JsonDoc, SqliteDb
from taskloom.generators.procedural.domains import CITIES, Column
from taskloom.generators.procedural.primitives.base import StepContext, source
from taskloom.generators.procedural.sources.common import data_dir, day, noisy, spaced
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, q


def column_value(ctx: StepContext, column: Column, index: int, table: str) -> str:
    """One CSV value of a column kind."""
    rng = ctx.rng
    if column.kind == "id":
        return f"{table[:3].upper()}-{10_000 + index * 3 + rng.randint(0, 2)}"  # unique
    if column.kind == "name":
        name = rng.choice(ctx.domain.people).capitalize()
        return name + ("é" if ctx.difficulty.edge_cases == 3 and rng.random() < 0.2 else "")
    if column.kind == "category":
        return rng.choice(ctx.domain.categories)
    if column.kind == "int":
        return str(rng.randint(1, 500))
    if column.kind == "money":
        return f"{rng.randint(100, 99_999) / 100:.2f}"
    if column.kind == "date":
        return day(EPOCH_NOW - rng.randint(0, 90) * DAY)
    if column.kind == "city":
        return rng.choice(CITIES)
    if column.kind == "code":
        return f"{rng.choice(ctx.domain.services)}-{rng.randint(1, 12):02d}"
    return rng.choice(("yes", "no"))


def table_rows(ctx: StepContext, count: int) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Header and rows of the domain's table; ids unique, categories all present."""
    domain = ctx.domain
    header = tuple(c.name for c in domain.columns)
    rows = []
    for index in range(count):
        rows.append(tuple(column_value(ctx, c, index, domain.table) for c in domain.columns))
    category = next((i for i, c in enumerate(domain.columns) if c.kind == "category"), None)
    if category is not None and count >= 2 * len(domain.categories):
        for position, value in enumerate(domain.categories):
            row = list(rows[position])
            row[category] = value
            rows[position] = tuple(row)
        ctx.rng.shuffle(rows)
    return header, rows


def numeric_columns(ctx: StepContext) -> tuple[str, ...]:
    """Columns of the domain table that hold numbers."""
    return tuple(c.name for c in ctx.domain.columns if c.kind in ("int", "money"))


def with_ties(ctx: StepContext, header: tuple[str, ...],
              rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The rows with repeated numbers and some whole amounts, in no particular id order.

    As real tables have them (an export sorted by something else). Equal values make the
    tie rules of sorts and rankings matter (stable order, tie-breaks: the ids of tied rows
    are not in file order), and whole amounts (`120.00`) let a "greater than" condition
    have a row exactly on its bound. Used by every table source.
    """
    rows = [list(row) for row in rows]
    for index, name in enumerate(header):
        if name not in numeric_columns(ctx) or len(rows) < 4:
            continue
        if "." in rows[0][index]:  # money: round a few amounts to whole ones
            for row in ctx.rng.sample(rows, max(2, len(rows) // 6)):
                row[index] = f"{int(float(row[index]))}.00"
        for _ in range(max(2, len(rows) // 8)):  # a few values repeated in other rows
            source, target = ctx.rng.sample(rows, 2)
            target[index] = source[index]
    ctx.rng.shuffle(rows)
    return [tuple(row) for row in rows]


@source("csv_table")
def csv_table(ctx: StepContext) -> CsvTable:
    """The domain's table as CSV."""
    header, rows = table_rows(ctx, ctx.count((8, 14), (40, 120), (300, 900)))
    rows = with_ties(ctx, header, rows)
    directory = data_dir(ctx, "data")
    path = f"{directory}/{spaced(ctx, ctx.domain.table + '.csv')}"
    table = CsvTable(path=path, phrase=f"the CSV file `{path}`", header=header,
                     rows=tuple(rows), numeric=numeric_columns(ctx))
    ctx.world.add(path, table.text())
    for index in range(noisy(ctx) // 2):
        old = CsvTable(path="", phrase="", header=header, rows=tuple(rows[: 3 + index]))
        ctx.world.add(f"{directory}/{ctx.domain.table}-{2023 - index}.csv.bak", old.text())
    return table


@source("json_doc")
def json_doc(ctx: StepContext) -> JsonDoc:
    """The domain's table as a JSON array of objects (numbers as numbers)."""
    import json

    header, rows = table_rows(ctx, ctx.count((6, 12), (30, 90), (200, 600)))
    rows = with_ties(ctx, header, rows)
    numeric = numeric_columns(ctx)
    records = []
    for row in rows:
        record = {}
        for name, value in zip(header, row, strict=True):
            record[name] = (float(value) if "." in value else int(value)) if name in numeric \
                else value
        records.append(record)
    path = f"{data_dir(ctx, 'data')}/{spaced(ctx, ctx.domain.table + '.json')}"
    ctx.world.add(path, json.dumps(records, indent=2, ensure_ascii=False) + "\n")
    return JsonDoc(path=path, phrase=f"the JSON file `{path}`", records=tuple(records))


def sql_literal(value: object) -> str:
    """A value as an SQL literal."""
    if isinstance(value, int | float):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


@source("sqlite_db")
def sqlite_db(ctx: StepContext) -> SqliteDb:
    """An SQLite database holding the domain's table, loaded at build time from SQL."""
    header, rows = table_rows(ctx, ctx.count((8, 14), (40, 120), (300, 900)))
    rows = with_ties(ctx, header, rows)
    numeric = numeric_columns(ctx)
    types = tuple((name, ("REAL" if any("." in r[i] for r in rows) else "INTEGER")
                   if name in numeric else "TEXT") for i, name in enumerate(header))
    typed_rows = tuple(tuple(float(v) if t == "REAL" else int(v) if t == "INTEGER" else v
                             for v, (_, t) in zip(row, types, strict=True)) for row in rows)
    path = f"{data_dir(ctx, 'db')}/{ctx.domain.name}.db"
    table = ctx.domain.table
    columns = ", ".join(f'"{name}" {kind}' for name, kind in types)  # `group` is a keyword
    statements = [f'CREATE TABLE "{table}" ({columns});', "BEGIN;"]
    statements += [f"INSERT INTO \"{table}\" VALUES ({', '.join(sql_literal(v) for v in row)});"
                   for row in typed_rows]
    statements.append("COMMIT;")
    seed = f"/tmp/taskloom-seed/{ctx.step}-{table}.sql"
    ctx.world.add(seed, "\n".join(statements) + "\n")
    ctx.world.commands.append(f"mkdir -p {q(data_dir(ctx, 'db'))} && sqlite3 {q(path)} "
                              f"< {q(seed)} && rm -rf /tmp/taskloom-seed")
    return SqliteDb(path=path, phrase=f"the `{table}` table of the SQLite database `{path}`",
                    table=table, columns=types, rows=typed_rows)
