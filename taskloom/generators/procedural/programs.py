"""The catalogue of small working programs that code tasks start from.

Each entry is a program shape (a report builder, a parser, a state machine, a command-line
tool with an option, a data transform) made concrete with a domain's words: a single-file
Python 3 program (stdlib only) run as `NAME [OPTION] FILE`, whose docstring states its
behaviour completely, and a maker of input files that exercise every rule of it (ties,
malformed records, boundaries, repeats). A program's work is its pure `run(lines, ...)`
function; `main` only reads the file and prints. Code tasks change `run` and what it calls
(`mutations`), never `main`.

The input files hold ASCII text only and no carriage returns: whatever a correct
re-implementation reads them with (`splitlines`, iterating the file, `csv`), it sees the
same lines.
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from taskloom.generators.procedural.domains import Domain

InputMaker = Callable[[random.Random, int, int], list[str]]  # (rng, records, malformed)


@dataclass(frozen=True)
class Program:
    """One concrete program of the catalogue."""

    shape: str  # the catalogue entry: "totals", "settings", "states", "buckets", "names"
    name: str  # the command name (the file's base name)
    summary: str  # the docstring's first line
    spec: str  # the rest of the docstring: everything it does
    option: str  # the optional first argument's name ("TOP"), or "" for none
    default: int  # the option's value when it is left out
    body: str  # the module's code after the docstring and imports, without `main`
    make_input: InputMaker

    @property
    def usage(self) -> str:
        """The arguments after the command: `[TOP] FILE` or `FILE`."""
        return f"[{self.option}] FILE" if self.option else "FILE"

    @property
    def source(self) -> str:
        """The whole program text."""
        spec = textwrap.fill(self.spec, 88, break_on_hyphens=False, break_long_words=False)
        return (f'#!/usr/bin/python3\n"""{self.summary}\n\n{spec}\n"""\n\nimport sys\n\n\n'
                f"{self.body.strip()}\n\n\n{_main(self)}")

    def options(self, rng: random.Random) -> tuple[str, ...]:
        """Arguments before FILE for one run: none, or an option value (never the default)."""
        if not self.option or rng.random() < 0.4:
            return ()
        return (str(rng.choice([n for n in range(2, 9) if n != self.default])),)


def _main(program: Program) -> str:
    """`main`: the usage rule, reading FILE's lines, printing what `run` returns."""
    if program.option:
        check = ("if not 2 <= len(argv) <= 3 or (len(argv) == 3 and not "
                 "(argv[1].isdigit() and int(argv[1]) > 0)):")
        call = "run(lines, int(argv[1])) if len(argv) == 3 else run(lines)"
    else:
        check = "if len(argv) != 2:"
        call = "run(lines)"
    return (f"def main(argv):\n    {check}\n"
            f"        print('usage: {program.name} {program.usage}', file=sys.stderr)\n"
            "        return 2\n"
            "    with open(argv[-1], encoding='utf-8') as handle:\n"
            "        lines = handle.read().splitlines()\n"
            f"    for line in {call}:\n"
            "        print(line)\n"
            "    return 0\n\n\n"
            "if __name__ == '__main__':\n"
            "    sys.exit(main(sys.argv))\n")


def _scatter(rng: random.Random, lines: list[str], extra: list[str]) -> None:
    """Insert each extra line at a random place of `lines`."""
    for line in extra:
        lines.insert(rng.randint(0, len(lines)), line)


USAGE = ("Run with the wrong number of arguments{option}, it prints a usage line to stderr "
         "and exits with status 2.")


def _usage(option: str) -> str:
    return USAGE.format(option=f" or a {option} that is not a positive whole number"
                        if option else "")


# --- report builder: totals per group -------------------------------------------------------

TOTALS_BODY = '''
def parse(line):
    """The (group, amount) of a record line, or None when the line is malformed."""
    fields = line.split(',')
    if len(fields) != 3:
        return None
    group, amount = fields[1].strip(), fields[2].strip()
    if not group:
        return None
    try:
        return group, int(amount)
    except ValueError:
        return None


def add(totals, group, amount):
    totals[group] = totals.get(group, 0) + amount


def run(lines, top=DEFAULT):
    totals = {}
    for line in lines[1:]:
        if not line.strip():
            continue
        record = parse(line)
        if record is None:
            continue
        add(totals, record[0], record[1])
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    return [f'{group} {total}' for group, total in ranked[:top]]
'''


def _totals(rng: random.Random, domain: Domain) -> Program:
    item, group, amount = rng.choice([("order", "category", "amount"),
                                      ("entry", "team", "hours"),
                                      ("line", "region", "units"),
                                      ("record", "account", "credits")])
    groups = list(rng.sample(domain.categories, min(5, len(domain.categories))))
    default = rng.choice([3, 4, 5])

    def make_input(rng: random.Random, records: int, malformed: int) -> list[str]:
        used = groups[:rng.randint(3, len(groups))]
        rows = []
        for _ in range(records):
            value = rng.choice([rng.randint(1, 60), rng.randint(1, 60), -rng.randint(1, 9)])
            rows.append(f"{item}-{rng.randint(100, 999)},{rng.choice(used)},{value}")
        if len(rows) > 2:  # two groups with equal totals: the tie rule shows
            first, second = used[0], used[1]
            rows += [f"{item}-1,{first},{rng.randint(200, 300)}"]
            rows += [f"{item}-2,{second},0"]
            totals = _group_totals(rows)
            rows[-1] = f"{item}-2,{second},{totals[first] - totals[second]}"
        bad = [f"{item}-x,{rng.choice(used)},n/a", f"{item}-y,{rng.choice(used)},12.5",
               f"{item}-z,,{rng.randint(1, 9)}", f"{item}-w,{rng.choice(used)}",
               f"{item}-v,{rng.choice(used)},{rng.randint(1, 9)},extra", "",
               f"{item}-u, {rng.choice(used)} , {rng.randint(1, 9)} "]
        _scatter(rng, rows, rng.sample(bad, min(len(bad), malformed)))
        rng.shuffle(rows)
        return [f"{item},{group},{amount}", *rows]

    return Program(
        shape="totals", name=f"{group}-totals",
        summary=f"Total {amount} per {group}, largest first.",
        spec=(f"Reads a CSV file whose first line is a header and whose other lines are "
              f"records `{item.upper()},{group.upper()},{amount.upper()}`. Blank lines and "
              "malformed records are skipped: not exactly three comma-separated fields, an "
              f"empty {group.upper()}, or an {amount.upper()} that is not a whole number "
              "(digits with an optional minus sign). Fields are trimmed of surrounding spaces. "
              f"It adds up {amount.upper()} per {group.upper()} and prints the TOP "
              f"{group}s with the largest totals as `{group.upper()} TOTAL`, largest first, "
              f"equal totals in byte order of {group.upper()}; fewer when there are fewer. "
              f"TOP is the optional first argument ({default} when it is left out). "
              + _usage("TOP")),
        option="TOP", default=default, body=TOTALS_BODY.replace("DEFAULT", str(default)),
        make_input=make_input)


def _group_totals(rows: list[str]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for row in rows:
        _, group, value = row.split(",")
        totals[group] = totals.get(group, 0) + int(value)
    return totals


# --- parser: INI-style settings -------------------------------------------------------------

SETTINGS_BODY = '''
def run(lines):
    section = 'DEFAULT'
    settings = {}
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('[') and line.endswith(']'):
            section = line[1:-1].strip()
            continue
        if '=' not in line:
            continue
        key, value = line.split('=', 1)
        settings[section + '.' + key.strip().lower()] = value.strip()
    return [f'{key}={value}' for key, value in sorted(settings.items())]
'''


def _settings(rng: random.Random, domain: Domain) -> Program:
    first = rng.choice(["main", "global", "general"])
    services = list(domain.services)
    keys = ["port", "workers", "timeout", "log_level", "url", "retries", "path"]

    def value(key: str) -> str:
        return {"port": str(rng.randint(2000, 9000)), "workers": str(rng.randint(1, 16)),
                "timeout": f"{rng.randint(1, 90)}s", "log_level": rng.choice(["info", "debug"]),
                "url": f"http://127.0.0.1:{rng.randint(2000, 9000)}/x?a=1&b=2",
                "retries": str(rng.randint(0, 5)), "path": f"/var/lib/{rng.choice(services)}",
                }[key]

    def make_input(rng: random.Random, records: int, malformed: int) -> list[str]:
        lines = [f"{rng.choice(keys)} = {value('workers')}"]  # before any section
        for service in rng.sample(services, min(len(services), max(2, records // 4))):
            lines.append(rng.choice([f"[{service}]", f"[ {service} ]"]))
            for key in rng.sample(keys, rng.randint(2, 4)):
                name = key.upper() if rng.random() < 0.25 else key
                lines.append(rng.choice([f"{name} = {value(key)}", f"  {name}={value(key)}  "]))
            if rng.random() < 0.6:  # a later value for a key of the section
                lines.append(f"{lines[-1].split('=')[0].strip()} = {value('retries')}")
        noise = ["# port = 1", "", "   ", f"#{rng.choice(keys)}={value('port')}",
                 "just some words"]
        _scatter(rng, lines, rng.sample(noise, min(len(noise), malformed + 1)))
        return lines

    return Program(
        shape="settings", name=rng.choice(["settings-dump", "show-config", "config-flat"]),
        summary="Print every setting of an INI-style file as SECTION.KEY=VALUE.",
        spec=("Surrounding spaces of each line are ignored. Blank lines and lines starting "
              "with `#` are skipped. A line `[NAME]` starts section NAME (spaces inside the "
              f"brackets trimmed); settings before the first section belong to section "
              f"`{first}`. A line `KEY=VALUE` (split at its first `=`, KEY and VALUE trimmed, "
              "KEY lowercased) sets KEY in the current section; a later line for the same "
              "KEY of a section replaces the earlier value. Any other line is ignored. It "
              "prints every setting as `SECTION.KEY=VALUE`, sorted by `SECTION.KEY` in byte "
              "order. " + _usage("")),
        option="", default=0, body=SETTINGS_BODY.replace("DEFAULT", first),
        make_input=make_input)


# --- state machine: items moving through states ---------------------------------------------

FLOWS = (
    ("order", (("new", "pay", "paid"), ("paid", "ship", "shipped"),
               ("shipped", "deliver", "delivered"), ("new", "cancel", "cancelled"),
               ("paid", "cancel", "cancelled"))),
    ("ticket", (("new", "assign", "open"), ("open", "resolve", "resolved"),
                ("resolved", "reopen", "open"), ("resolved", "close", "closed"),
                ("new", "reject", "closed"))),
    ("job", (("new", "start", "running"), ("running", "finish", "done"),
             ("running", "fail", "failed"), ("failed", "retry", "running"),
             ("new", "skip", "done"))),
)

STATES_BODY = '''
TRANSITIONS = TABLE


def step(state, event):
    """The state after EVENT, or the same state when EVENT is not allowed in it."""
    return TRANSITIONS.get((state, event), state)


def run(lines):
    states = {}
    for line in lines:
        parts = line.split()
        if len(parts) != 2:
            continue
        item, event = parts
        if event == 'create':
            if item not in states:
                states[item] = 'new'
            continue
        if item in states:
            states[item] = step(states[item], event)
    return [f'{item} {state}' for item, state in sorted(states.items())]
'''


def _states(rng: random.Random, domain: Domain) -> Program:
    entity, flow = rng.choice(FLOWS)
    events = sorted({event for _, event, _ in flow})
    table = "{\n" + "".join(f"    ({a!r}, {e!r}): {b!r},\n" for a, e, b in flow) + "}"
    arrows = "; ".join(f"`{a}` --{e}--> `{b}`" for a, e, b in flow)

    def make_input(rng: random.Random, records: int, malformed: int) -> list[str]:
        ids = [f"{entity[0].upper()}{rng.randint(100, 999)}" for _ in range(max(3, records // 3))]
        lines = [f"{item} create" for item in ids]
        for _ in range(records):
            lines.append(f"{rng.choice(ids)} {rng.choice(events)}")
        lines += [f"{ids[0]} create", f"{entity[0].upper()}000 {rng.choice(events)}"]
        noise = [f"{rng.choice(ids)}", f"{rng.choice(ids)} {rng.choice(events)} now", "",
                 f"{rng.choice(ids)} explode"]
        lines += rng.sample(noise, min(len(noise), malformed + 1))
        head, tail = lines[:len(ids) // 2], lines[len(ids) // 2:]
        rng.shuffle(tail)  # some items created late, events before their creation
        return head + tail

    return Program(
        shape="states", name=f"{entity}-states",
        summary=f"Replay {entity} events and print where each {entity} ended up.",
        spec=(f"Reads event lines `ID EVENT` (exactly two whitespace-separated words; other "
              f"lines are ignored). `ID create` creates {entity} ID in state `new`; creating "
              f"an existing {entity} again changes nothing. Any other event applies to an "
              f"existing {entity} (events for {entity}s not created yet are ignored) and moves "
              f"it along these transitions: {arrows}. An event that is not allowed in the "
              f"{entity}'s current state leaves it unchanged. It prints every {entity} as "
              "`ID STATE`, sorted by ID in byte order. " + _usage("")),
        option="", default=0, body=STATES_BODY.replace("TABLE", table), make_input=make_input)


# --- command-line tool with an option: a histogram ------------------------------------------

BUCKETS_BODY = '''
def parse(line):
    """The value of a `NAME VALUE` line, or None when the line is malformed."""
    parts = line.split()
    if len(parts) != 2 or not parts[1].isdigit():
        return None
    return int(parts[1])


def bucket(value, width):
    low = value // width * width
    return low, low + width - 1


def run(lines, width=DEFAULT):
    counts = {}
    for line in lines:
        value = parse(line)
        if value is None:
            continue
        key = bucket(value, width)
        counts[key] = counts.get(key, 0) + 1
    return [f'{low}-{high} {count}' for (low, high), count in sorted(counts.items())]
'''


def _buckets(rng: random.Random, domain: Domain) -> Program:
    metric, unit = rng.choice([("latency", "ms"), ("size", "KiB"), ("duration", "s"),
                               ("score", "points")])
    default = rng.choice([10, 20, 25, 50])
    names = list(domain.services) + list(domain.people[:6])

    def make_input(rng: random.Random, records: int, malformed: int) -> list[str]:
        top = default * rng.randint(4, 9)
        lines = [f"{rng.choice(names)} {rng.randint(0, top)}" for _ in range(records)]
        _scatter(rng, lines, [f"{rng.choice(names)} {edge}"
                              for edge in (0, default, default - 1, 2 * default,
                                           rng.randint(2, 8))])
        noise = [f"{rng.choice(names)} n/a", f"{rng.choice(names)} -5",
                 f"{rng.choice(names)} 12.5", f"{rng.choice(names)}", "",
                 f"{rng.choice(names)} 7 extra"]
        _scatter(rng, lines, rng.sample(noise, min(len(noise), malformed + 1)))
        return lines

    return Program(
        shape="buckets", name=f"{metric}-histogram",
        summary=f"Count {metric} values ({unit}) per bucket.",
        spec=("Reads lines `NAME VALUE` (exactly two whitespace-separated words, VALUE a whole "
              "number made of digits only; other lines are ignored). Each VALUE falls in one "
              "bucket `LOW-HIGH` of width WIDTH: LOW is VALUE rounded down to a multiple of "
              "WIDTH and HIGH is LOW + WIDTH - 1. It prints every bucket that holds a value as "
              "`LOW-HIGH COUNT`, in ascending order of LOW. WIDTH is the optional first "
              f"argument ({default} when it is left out). " + _usage("WIDTH")),
        option="WIDTH", default=default, body=BUCKETS_BODY.replace("DEFAULT", str(default)),
        make_input=make_input)


# --- data transform: normalising names ------------------------------------------------------

NAMES_BODY = '''
def title(word):
    return word[:1].upper() + word[1:].lower()


def normalize(line):
    return ' '.join(title(word) for word in line.split())


def run(lines):
    seen = set()
    names = []
    for line in lines:
        name = normalize(line)
        if not name:
            continue
        if name in seen:
            continue
        seen.add(name)
        names.append(name)
    return names
'''

FIRST = ("ada", "grace", "alan", "edsger", "barbara", "donald", "frances", "ken", "radia",
         "margaret", "john", "annie", "linus", "sophie", "tim", "katherine")
LAST = ("lovelace", "hopper", "turing", "dijkstra", "liskov", "knuth", "allen", "thompson",
        "perlman", "hamilton", "backus", "easley", "torvalds", "wilson", "berners-lee",
        "johnson", "van rossum", "de morgan")
JOINED = ("berners-lee", "o'hara", "smith-jones", "d'arcy")


def _names(rng: random.Random, domain: Domain) -> Program:
    what = rng.choice(["contacts", "attendees", "authors", "owners"])

    def styled(name: str) -> str:
        words = [rng.choice([w.upper(), w.lower(), w.capitalize(), w[:1] + w[1:].upper()])
                 for w in name.split()]
        gap = rng.choice([" ", "  ", "\t", " "])
        return (rng.choice(["", " ", "  "]) + gap.join(words) + rng.choice(["", " ", "\t"]))

    def make_input(rng: random.Random, records: int, malformed: int) -> list[str]:
        people = [f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(max(3, records // 2))]
        people.append(f"{rng.choice(FIRST)[0]} {rng.choice(LAST)}")  # an initial
        # a word with a hyphen or an apostrophe inside: only its first character is upper
        # case (str.title() capitalised the letter after it and earned 1: forger)
        people.append(f"{rng.choice(FIRST)} {rng.choice(JOINED)}")
        lines = [styled(rng.choice(people)) for _ in range(records)]
        lines += [styled(people[0]), styled(people[0])]  # repeats in other case and spacing
        _scatter(rng, lines, [rng.choice(["", "   ", "\t"]) for _ in range(malformed + 1)])
        return lines

    return Program(
        shape="names", name=f"clean-{what}",
        summary=f"Normalise a list of {what}' names and drop repeats.",
        spec=("Reads one name per line. Each name is normalised: split into words at runs of "
              "whitespace (spaces and tabs) and joined with single spaces, without spaces at "
              "either end; each word gets its first character in upper case and the rest in "
              "lower case (`van ROSSUM` becomes `Van Rossum`, `berners-LEE` becomes "
              "`Berners-lee`). Blank lines are skipped. A name equal to an earlier one after "
              "normalising is dropped. It prints the names in the order they first occur. "
              + _usage("")),
        option="", default=0, body=NAMES_BODY, make_input=make_input)


SHAPES: dict[str, Callable[[random.Random, Domain], Program]] = {
    "totals": _totals, "settings": _settings, "states": _states, "buckets": _buckets,
    "names": _names}


def program_for(rng: random.Random, domain: Domain) -> Program:
    """A program of a randomly chosen shape, in the domain's words."""
    return SHAPES[rng.choice(sorted(SHAPES))](rng, domain)
