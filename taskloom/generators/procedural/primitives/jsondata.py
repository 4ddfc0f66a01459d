"""JSON primitives: filter, extract, convert, count, sort and reshape arrays of flat objects.

Solutions use jq 1.6 (the base image's): fields are read as `.["name"]` (some column names,
like `label`, are jq keywords), numbers print in their shortest form (`12.5`, and `7` for
7.0; `jq_text` reproduces that), and `sort_by` is stable. JSON checks compare parsed
values, so key order and `7` versus `7.0` do not matter there; text outputs state the
number format. Alternatives use python3's json module (`PY_TABLES`) and write
JSON compact with sorted keys, the same values in another spelling than jq's.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import groupby

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import CsvTable, JsonDoc, Report, TextFile
from taskloom.generators.procedural.checks import FileText, JsonValue
from taskloom.generators.procedural.primitives._tables import (
    DECIMAL,
    PY_TABLES,
    ColumnValues,
    csv_notes,
    derive,
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

CSV_UNSAFE = re.compile(r'[,"\n\r]')  # values CSV cannot hold without quoting
NUMBER_FORMAT = ("numbers in their shortest form: no trailing zeros after the decimal point, "
                 "and no decimal point at all for whole numbers")


def jq_text(value) -> str:
    """A JSON value as `jq -r` / `tostring` prints it (shortest form; 7.0 prints as 7)."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _records(source) -> JsonDoc:
    if not isinstance(source, JsonDoc) or len(source.records) < 3:
        raise NotApplicable("needs a JSON array with at least three objects")
    keys = list(source.records[0])
    if len(keys) < 2 or any(list(r) != keys for r in source.records):
        raise NotApplicable("the objects do not share one set of keys")
    return source


def json_fields(doc: JsonDoc) -> list[ColumnValues]:
    """The keys of the objects with their kinds."""
    fields = []
    for key in doc.records[0]:
        values = tuple(r[key] for r in doc.records)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            kind = "int"
        elif all(isinstance(v, int | float) and not isinstance(v, bool)
                 and DECIMAL.match(jq_text(v)) for v in values):
            kind = "decimal"
        elif all(isinstance(v, str) for v in values):
            kind = "text"
        else:
            kind = "other"
        fields.append(ColumnValues(key, kind, values))
    return [f for f in fields if f.kind != "other"]


def _get(key: str) -> str:
    return f'.["{key}"]'


@primitive("json.filter_records")
def filter_records(ctx: StepContext, source) -> StepResult:
    """Keep the objects whose field meets a condition."""
    doc = _records(source)
    condition, chosen = pick_condition(ctx, json_fields(doc))
    records = tuple(doc.records[i] for i in chosen)
    out = ctx.output_path("selected", "json")
    rules = [Rule("condition", f"that only the objects whose {condition.words()} are kept",
                  f"jq . {q(doc.path)} > {q(out)}")]
    if condition.on_bound(r[condition.column] for r in doc.records):
        rules.append(Rule(
            "strict-bound", f"that an object whose `{condition.column}` is exactly "
            f"{condition.value} is not kept",
            f"jq {q(f'map(select({condition.inclusive().jq()}))')} {q(doc.path)} > {q(out)}"))
    sentence = ctx.phrase([
        f"Write to `{out}` a JSON array with the objects of {doc.phrase} whose "
        f"{condition.words()}, unchanged and in their original order.",
        f"Filter {doc.phrase} to the objects where {condition.words()} and save them as a "
        f"JSON array in `{out}` (objects as they are, original order).",
        f"Save in `{out}` the subset of {doc.phrase} whose {condition.words()}: a JSON array "
        "of the matching objects, unmodified, in the order they appear.",
    ]) + ctx.hint("jq 'map(select(...))'")
    return StepResult(
        output=JsonDoc(path=out, phrase=derive(
            doc.phrase, f"the objects of {doc.phrase} whose {condition.words()}",
            f"{doc.phrase}, keeping only the objects whose {condition.words()}"),
            records=records),
        instruction=sentence,
        solution=f"jq {q(f'map(select({condition.jq()}))')} {q(doc.path)} > {q(out)}",
        rules=tuple(rules),
        alternative=ctx.python([doc.path, out], f"""
objects = read_json(sys.argv[1])
write_json(sys.argv[2], [o for o in objects if {condition.python(f'o[{condition.column!r}]')}])
""", prelude=PY_TABLES),
        checks=[JsonValue(f"`{out}` holds the objects whose {condition.words()}", path=out,
                          expected=list(records), ordered=True)],
        tools=("jq",))


@primitive("json.extract_field")
def extract_field(ctx: StepContext, source) -> StepResult:
    """Print one field of every object, one per line."""
    doc = _records(source)
    fields = [f for f in json_fields(doc) if f.distinct() >= 2
              and not any("\n" in str(v) for v in f.values)]
    if not fields:
        raise NotApplicable("no field varies between the objects")
    field = ctx.rng.choice(fields)
    lines = tuple(jq_text(v) for v in field.values)
    out = ctx.output_path(f"{field.name}-list", "txt")
    style = "strings without quotes" if field.kind == "text" else NUMBER_FORMAT
    fmt = f"Write {style}."
    sentence = ctx.phrase([
        f"Write the `{field.name}` value of every object in {doc.phrase} to `{out}`, one per "
        "line, in array order.",
        f"Extract the field `{field.name}` from each object of {doc.phrase} into `{out}`: one "
        "value per line, same order as the array.",
        f"List in `{out}` the `{field.name}` of each element of {doc.phrase}, one per line and "
        "in order, repeats included.",
    ]) + " " + fmt + ctx.hint("jq -r")
    values = f"jq -r {q(f'.[] | {_get(field.name)}')} {q(doc.path)}"
    rules = []
    if field.kind == "text":
        rules.append(Rule("raw", "that the strings are written without quotes",
                          f"jq {q(f'.[] | {_get(field.name)}')} {q(doc.path)} > {q(out)}"))
    if len(set(lines)) < len(lines):
        rules.append(Rule("repeats", "that every object's value is listed, repeats included",
                          f"{values} | awk '!seen[$0]++' > {q(out)}"))
    if sorted(lines, key=str.encode) != list(lines):
        rules.append(Rule("order", "that the values are listed in array order",
                          f"{values} | LC_ALL=C sort > {q(out)}"))
    return StepResult(
        rules=tuple(rules),
        output=TextFile(path=out, phrase=f"the `{field.name}` values of {doc.phrase} (one "
                        f"per line, in array order; {style})",
                        lines=lines),
        instruction=sentence,
        solution=f"jq -r {q(f'.[] | {_get(field.name)}')} {q(doc.path)} > {q(out)}",
        alternative=ctx.python([doc.path, out], f"""
write_lines(sys.argv[2], [shortest(o[{field.name!r}]) for o in read_json(sys.argv[1])])
""", prelude=PY_TABLES),
        checks=[FileText(f"`{out}` lists the {field.name} values", path=out,
                         expected=lines_text(lines), compare=ctx.compare(order_matters=True))],
        tools=("jq",))


def _csv_program(columns, *, titles: bool = True) -> str:
    """The jq program (quoted) printing these fields as CSV lines, after a header line."""
    values = f"[{', '.join(_get(name) for name in columns)}] | map(tostring)"
    titles_row = "[" + ", ".join(f'"{name}"' for name in columns) + "], " if titles else ""
    return q(f'{titles_row}(.[] | {values}) | join(",")')


@primitive("json.to_csv")
def to_csv(ctx: StepContext, source) -> StepResult:
    """Flatten objects into CSV rows with a header."""
    doc = _records(source)
    fields = [f for f in json_fields(doc)
              if not any(CSV_UNSAFE.search(str(v)) for v in f.values)]
    if len(fields) < 2:
        raise NotApplicable("too few fields that CSV can hold unquoted")
    chosen = ctx.rng.sample(fields, ctx.rng.randint(2, min(len(fields), 5)))
    if ctx.rng.random() < 0.4:  # sometimes keep the objects' own key order
        order = list(doc.records[0])
        chosen.sort(key=lambda f: order.index(f.name))
    header = tuple(f.name for f in chosen)
    rows = tuple(tuple(jq_text(f.values[i]) for f in chosen)
                 for i in range(len(doc.records)))
    numeric = tuple(f.name for f in chosen if f.numeric)
    out = ctx.output_path("flat", "csv")
    decimals = any(f.kind == "decimal" for f in chosen)
    fmt = f"; {NUMBER_FORMAT}" if decimals else ""
    sentence = ctx.phrase([
        f"Convert {doc.phrase} to the CSV file `{out}` with the columns {names(header)}, in "
        "that order: a header row with those names, then one row per object in array "
        f"order{fmt}.",
        f"Write `{out}`: a header line naming the columns {names(header)} (in this order, "
        f"comma-separated), then the matching values of every object of {doc.phrase}, one "
        f"row per object, in order{fmt}.",
        f"Flatten {doc.phrase} into the CSV file `{out}` with the columns {names(header)} "
        "(in that order, header row first), one comma-separated row per object in the "
        f"original order{fmt}.",
    ]) + ctx.hint("jq -r with join(\",\")")
    rules = [Rule("header", "that the first line is a header naming the columns",
                  f"jq -r {_csv_program(header, titles=False)} {q(doc.path)} > {q(out)}")]
    own = tuple(key for key in doc.records[0] if key in header)  # the objects' key order
    if own != header:
        rules.append(Rule("column-order", f"that the columns are in the order {names(header)}",
                          f"jq -r {_csv_program(own)} {q(doc.path)} > {q(out)}"))
    shortest = " (numbers in shortest form)" if decimals else ""
    phrase = derive(doc.phrase, f"the {names(header)} fields of {doc.phrase} as CSV{shortest}",
                    f"{doc.phrase}, flattened to CSV with the columns {names(header)}"
                    f"{shortest}")
    output = CsvTable(path=out, phrase=phrase,
                      header=header, rows=rows, numeric=numeric)
    return StepResult(
        output=output, instruction=sentence,
        solution=f"jq -r {_csv_program(header)} {q(doc.path)} > {q(out)}", rules=tuple(rules),
        alternative=ctx.python([doc.path, out], f"""
columns = {list(header)!r}
objects = read_json(sys.argv[1])
write_csv(sys.argv[2], [columns] + [[shortest(o[c]) for c in columns] for o in objects])
""", prelude=PY_TABLES),
        notes=csv_notes(ctx),
        checks=[FileText(f"`{out}` holds the objects as CSV", path=out, expected=output.text(),
                         compare=ctx.compare(order_matters=True), form="csv")],
        tools=("jq",))


@primitive("json.group_count")
def group_count(ctx: StepContext, source) -> StepResult:
    """Count objects per value of a field."""
    doc = _records(source)
    fields = [f for f in json_fields(doc) if f.categorical()]
    if not fields:
        raise NotApplicable("no field with repeated values")
    field = ctx.rng.choice(fields)
    counts = Counter(field.values)
    by_count = ctx.rng.random() < 0.5
    if by_count:
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        order = "most frequent first, equal counts ordered by value in byte order"
        tail = " | LC_ALL=C sort -k2,2nr -k1,1"
    else:
        ranked = sorted(counts.items())
        order = "sorted by value in byte order (as `LC_ALL=C sort` orders them)"
        tail = ""
    lines = tuple(f"{value} {count}" for value, count in ranked)
    out = ctx.output_path(f"{field.name}-counts", "txt")
    sentence = ctx.phrase([
        f"Count the objects of {doc.phrase} per value of `{field.name}` and write "
        f"`VALUE COUNT` lines to `{out}` (one per distinct value, a single space between), "
        f"{order}.",
        f"Write to `{out}` how many objects of {doc.phrase} have each `{field.name}`: one "
        f"line `VALUE COUNT` per distinct value, {order}.",
        f"Produce `{out}` with a `VALUE COUNT` line for every distinct `{field.name}` in "
        f"{doc.phrase} (COUNT = number of objects with that value), {order}.",
    ]) + ctx.hint("jq -r, sort and uniq -c")
    values = f"jq -r {q(f'.[] | {_get(field.name)}')} {q(doc.path)}"
    rules = []
    runs = [value for value, _ in groupby(field.values)]
    if len(runs) > len(counts):  # uniq -c without sort counts each run of equal values
        rules.append(Rule("distinct", f"that there is one line per distinct `{field.name}`",
                          f"{values} | uniq -c | awk '{{print $2, $1}}'{tail} > {q(out)}"))
    if by_count and ranked != sorted(counts.items()):  # left in value order
        rules.append(Rule("order", "that the most frequent values come first",
                          f"{values} | LC_ALL=C sort | uniq -c | awk '{{print $2, $1}}' "
                          f"> {q(out)}"))
    by_frequency = sorted(counts.items(), key=lambda item: (item[1], item[0].encode()),
                          reverse=True)
    if not by_count and by_frequency != ranked:  # the habitual `sort -rn` after `uniq -c`
        rules.append(Rule("order", f"that the lines are sorted by `{field.name}` value",
                          f"{values} | LC_ALL=C sort | uniq -c | LC_ALL=C sort -rn | "
                          f"awk '{{print $2, $1}}' > {q(out)}"))
    return StepResult(
        rules=tuple(rules),
        output=Report(path=out, phrase=f"the number of objects per `{field.name}` in "
                      f"{doc.phrase} (`VALUE COUNT` lines, {order})", lines=lines),
        instruction=sentence,
        solution=(f"jq -r {q(f'.[] | {_get(field.name)}')} {q(doc.path)} | LC_ALL=C sort | "
                  f"uniq -c | awk '{{print $2, $1}}'{tail} > {q(out)}"),
        alternative=ctx.python([doc.path, out], f"""
counts = Counter(o[{field.name!r}] for o in read_json(sys.argv[1]))
ranked = sorted(counts.items(), key=lambda item: {
    '(-item[1], item[0].encode())' if by_count else 'item[0].encode()'})
write_lines(sys.argv[2], [f'{{value}} {{count}}' for value, count in ranked])
""", prelude=PY_TABLES),
        checks=[FileText(f"`{out}` counts objects per {field.name}", path=out,
                         expected=lines_text(lines),
                         compare=ctx.compare(order_matters=True))],  # both state an order
        tools=("jq", "sort", "uniq"))


@primitive("json.sort_records")
def sort_records(ctx: StepContext, source) -> StepResult:
    """Order an array of objects by a field (a stable sort)."""
    doc = _records(source)
    for field, descending in sort_options(ctx, json_fields(doc)):
        order = sorted(range(len(doc.records)),
                       key=lambda i, f=field: number(f.values[i]) if f.numeric else f.values[i],
                       reverse=descending)
        if order != sorted(order):
            break
    else:
        raise NotApplicable("the objects are already in every order this step could ask for")
    records = tuple(doc.records[i] for i in order)
    if field.numeric:
        how = "numerically, largest first" if descending else "numerically, smallest first"
        brief = "largest first" if descending else "smallest first"
        key = f"-{_get(field.name)}" if descending else _get(field.name)
    else:
        how = "as text in byte order (Unicode code point order)"
        brief = "byte order"
        key = _get(field.name)
    out = ctx.output_path("sorted", "json")
    sentence = ctx.phrase([
        f"Sort the array in {doc.phrase} by `{field.name}` {how}, and write it to `{out}`; "
        f"objects with equal `{field.name}` keep their original relative order, and the "
        "objects themselves are unchanged.",
        f"Write `{out}`: the objects of {doc.phrase}, unmodified, ordered by `{field.name}` "
        f"{how}, in a stable sort (ties stay in their original order), as a JSON array.",
        f"Reorder {doc.phrase} by `{field.name}`, {how}, with equal values keeping the "
        f"order they had, and save the resulting JSON array as `{out}`.",
    ]) + ctx.hint("jq 'sort_by(...)'")
    ascending = [doc.records[i] for i in sorted(range(len(doc.records)), key=lambda i: (
        number(field.values[i]) if field.numeric else field.values[i]))]
    rules = []
    stated = f"that the objects are ordered by `{field.name}` {how}"
    ascending_jq = f"sort_by({_get(field.name)})"
    if descending and ascending != list(records):  # ascending instead
        rules.append(Rule("direction", stated,
                          f"jq {q(ascending_jq)} {q(doc.path)} > {q(out)}"))
    if ascending[::-1] != list(records):  # an ascending sort reversed: ties reversed too
        rules.append(Rule(
            "stable" if descending else "direction",
            f"that objects with equal `{field.name}` keep their original order" if descending
            else stated, f"jq {q(f'{ascending_jq} | reverse')} {q(doc.path)} > {q(out)}"))
    return StepResult(
        rules=tuple(rules),
        output=JsonDoc(path=out, phrase=derive(
            doc.phrase, f"the objects of {doc.phrase} sorted by `{field.name}` ({brief})",
            f"{doc.phrase}, sorted by `{field.name}` ({brief})"), records=records),
        instruction=sentence,
        solution=f"jq {q(f'sort_by({key})')} {q(doc.path)} > {q(out)}",
        alternative=ctx.python([doc.path, out], f"""
objects = read_json(sys.argv[1])
objects.sort(key=lambda o: {
    f'Decimal(str(o[{field.name!r}]))' if field.numeric else f'o[{field.name!r}]'}\
{', reverse=True' if descending and field.numeric else ''})
write_json(sys.argv[2], objects)
""", prelude=PY_TABLES),
        checks=[JsonValue(f"`{out}` is sorted by {field.name}", path=out,
                          expected=list(records), ordered=True)],
        tools=("jq",))


DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def _new_names(field: ColumnValues) -> tuple[str, ...]:
    """Names a key of this kind is plausibly renamed to."""
    if field.kind == "int":
        return ("count", "units", "amount_int")
    if field.kind == "decimal":
        return ("value", "total", "price")
    if all(DATE.match(v) for v in field.values):
        return ("date", "recorded_on", "when")
    if field.unique():
        return ("id", "ref", "key")
    return ("kind", "label", "group_name", "tag")


@primitive("json.reshape")
def reshape(ctx: StepContext, source) -> StepResult:
    """Rename some keys and drop others in every object."""
    doc = _records(source)
    fields = json_fields(doc)
    if len(fields) < 2:
        raise NotApplicable("too few fields to reshape")
    keep = [f for f in fields if f in ctx.rng.sample(fields, max(2, len(fields) - 2))]
    taken = {f.name for f in fields}
    renames: dict[str, str] = {}
    for field in ctx.rng.sample(keep, min(len(keep), ctx.rng.randint(1, 2))):
        options = [n for n in _new_names(field) if n not in taken]
        if options:
            renames[field.name] = ctx.rng.choice(options)
            taken.add(renames[field.name])
    if not renames:
        raise NotApplicable("no free name to rename a key to")
    pairs = [(renames.get(f.name, f.name), f.name) for f in keep]
    records = tuple({new: record[old] for new, old in pairs} for record in doc.records)
    dropped = [f.name for f in fields if f not in keep] + \
        [k for k in doc.records[0] if k not in {f.name for f in fields}]
    renamed = names([f"{old}` to `{new}" for old, new in renames.items()])
    moved = " and ".join(f"`{old}` renamed to `{new}`" for old, new in renames.items())
    kept = names([new for new, _ in pairs])
    drop = (f"; drop {names(dropped)}" if dropped else "")
    out = ctx.output_path("reshaped", "json")
    sentence = ctx.phrase([
        f"Rewrite {doc.phrase} into `{out}`: the same objects in the same order, but with "
        f"only the keys {kept}, where you rename {renamed}{drop}. Values stay unchanged.",
        f"Write `{out}`, a JSON array with one object per object of {doc.phrase} (same order) "
        f"holding exactly the keys {kept}: rename {renamed}{drop}; keep the values as they "
        "are.",
        f"Reshape every object of {doc.phrase} (rename {renamed}{drop}) and save the array "
        f"as `{out}`; each object must have exactly the keys {kept}, values unchanged, "
        "original order.",
    ]) + ctx.hint("jq 'map({new: .old, ...})'")
    body = ", ".join(f'"{new}": {_get(old)}' for new, old in pairs)
    unrenamed = ", ".join(f'"{old}": {_get(old)}' for _, old in pairs)
    rules = [Rule("rename", f"that {renamed.replace('` to `', '` is renamed to `')}",
                  f"jq {q(f'map({{{unrenamed}}})')} {q(doc.path)} > {q(out)}")]
    if dropped:  # renamed, but every other key kept
        moves = " | ".join(f'.["{new}"] = {_get(old)} | del({_get(old)})'
                           for old, new in renames.items())
        rules.append(Rule("drop", f"that {names(dropped)} "
                          f"{'is' if len(dropped) == 1 else 'are'} left out",
                          f"jq {q(f'map({moves})')} {q(doc.path)} > {q(out)}"))
    return StepResult(
        output=JsonDoc(path=out, phrase=derive(
            doc.phrase, f"the objects of {doc.phrase} with {moved} (keys {kept})",
            f"{doc.phrase}, with {moved} (keys {kept})"), records=records),
        instruction=sentence,
        solution=f"jq {q(f'map({{{body}}})')} {q(doc.path)} > {q(out)}", rules=tuple(rules),
        alternative=ctx.python([doc.path, out], f"""
renames, dropped = {renames!r}, {dropped!r}
write_json(sys.argv[2], [{{renames.get(k, k): v for k, v in o.items() if k not in dropped}}
                         for o in read_json(sys.argv[1])])
""", prelude=PY_TABLES),
        checks=[JsonValue(f"`{out}` holds the reshaped objects", path=out,
                          expected=list(records), ordered=True)],
        tools=("jq",))
