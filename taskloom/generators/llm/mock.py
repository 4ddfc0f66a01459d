"""A model that needs no server: `--model mock` (`llm.model = "mock"`), for demos and tests.

`MockChat` implements `ChatModel` offline, without the `openai` package. It answers by the
request's answer schema, deterministically (the same request gives the same answer), with
answers that are valid and, where it can, lead to accepted tasks:

| answer | what the mock writes |
|---|---|
| `PlanAnswer` | a title and details from the scenario, organisation, root and skills asked |
| `RewriteAnswer` | the original instruction's lines, verbatim (every requirement and quote kept) |
| `DraftAnswer` | a small CSV task, one step per skill (up to 8), that passes validation |
| `RefineAnswer` | a diagnosis naming the first failed check, every field null (no change) |
| `JudgeAnswer` | `ok`, with an explanation counting the paths and tests it read |
| `IntentAnswer` | the offline parser's reading of the request, among the offered skills |
| anything else | the smallest instance of the JSON schema |

A draft's tests each cite their instruction sentence, and it ships one mutant per rule it
states (category filter, comment lines, sort key, order...), on data where ignoring the
rule changes a result, so validation's rule mutants earn reward 0.

Usage is counted as a quarter token per character of prompt and answer, at no cost. An
`Exchange` from the mock has the key a real one would have, so runs cache and replay it
the same way.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from taskloom.config import MOCK_MODEL, LLMConfig
from taskloom.generators.llm.exchange import ChatRequest, Exchange
from taskloom.leaks import states_value
from taskloom.seeding import derive_seed

CHARS_PER_TOKEN = 4
MAX_STEPS = 8
DRAWS = 20  # data draws tried until the instruction states none of the expected values
FALLBACK_ROOT = "/app"
SAFE_PATH = re.compile(r"^/(?!tests\b|solution\b|logs\b|proc\b|sys\b|dev\b)[A-Za-z0-9._-]+"
                       r"(/[A-Za-z0-9._-]+)*$")
OWNERS = ("amara", "bruno", "chen", "dmitri", "elif", "farah", "goran", "hana", "ines",
          "jonas", "kiri", "leona", "mateo", "noor")
CATEGORIES = ("refund", "renewal", "upgrade", "trial", "transfer", "audit", "repair",
              "rental")
STEMS = ("records", "ledger", "entries", "requests", "bookings", "tickets")
HEADER = "id,owner,category,amount"
COMMENT_RULE = "lines starting with `#` are comments, not records"
COMMENTS = ("# exported by the nightly job", "# continued from the previous page",
            "# rows below were re-sent")


class MockChat:
    """A deterministic offline `ChatModel`; `calls` counts the requests it answered.

    Example:
        >>> chat = MockChat()
        >>> chat.complete(request).model   # doctest: +SKIP
        'mock'
    """

    def __init__(self, config: LLMConfig | None = None) -> None:
        self.config = config or LLMConfig(model=MOCK_MODEL)
        self.settings = self.config.output_settings()
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request: ChatRequest) -> Exchange:
        """The mock's answer to `request` (never fails, never waits)."""
        with self._lock:
            self.calls += 1
        answer = json.dumps(mock_answer(request), ensure_ascii=False)
        prompt_chars = sum(len(m.content) for m in request.messages)
        return Exchange(key=request.key(self.settings), purpose=request.purpose,
                        model=MOCK_MODEL, messages=request.messages,
                        answer_name=request.answer_name, answer=answer, finish_reason="stop",
                        tokens_in=tokens(prompt_chars), tokens_out=tokens(len(answer)))


def tokens(chars: int) -> int:
    """Tokens the mock counts for `chars` characters (a quarter each, rounded up)."""
    return -(-chars // CHARS_PER_TOKEN)


def mock_answer(request: ChatRequest) -> dict[str, Any]:
    """The answer object for `request`, chosen by its answer schema's name."""
    writer = WRITERS.get(request.answer_name)
    if writer is None:
        return schema_instance(request.answer_schema)
    rng = random.Random(derive_seed(0, "mock", request.key({})))
    return writer(_Asked(request), rng)


class _Asked:
    """What a request's messages say, read back from the shipped prompt templates."""

    def __init__(self, request: ChatRequest) -> None:
        self.system = next((m.content for m in request.messages if m.role == "system"), "")
        self.user = next((m.content for m in reversed(request.messages)
                          if m.role == "user"), "")

    def find(self, pattern: str, text: str | None = None, default: str = "") -> str:
        found = re.search(pattern, self.user if text is None else text, re.MULTILINE)
        return found.group(1).strip() if found else default

    @property
    def scenario(self) -> tuple[str, str]:
        line = self.find(r"^Scenario: (.+)$")
        title, _, description = line.partition(": ")
        return title or "A terminal task", description

    @property
    def skills(self) -> list[str]:
        return re.findall(r"^\d+\. ([^:\n]+):", self.user, re.MULTILINE)

    @property
    def root(self) -> str:
        root = self.find(r'working directory, e\.g\. "([^"]+)"', self.system) or \
            self.find(r"\(under (/[^)\s]+)\)", self.system)
        return root if SAFE_PATH.match(root) else FALLBACK_ROOT

    def level(self, dimension: str) -> int:
        return int(self.find(rf"\b{dimension}=([123])\b", default="1"))


# -- planner, rewriter, refiner, judge ------------------------------------------------------

def _plan(asked: _Asked, rng: random.Random) -> dict[str, Any]:
    title, description = asked.scenario
    org = asked.find(r"^Organisation: ([^;\n]+);")
    role = asked.find(r"the person asking is (.+?)\.?$") or "a colleague"
    root, skills = asked.root, asked.skills
    details = [f"{role[0].upper()}{role[1:]}{f' at {org}' if org else ''} asks: "
               f"{description or title}",
               f"Input: {root}/data/{rng.choice(STEMS)}.csv, a CSV with the header "
               f"{HEADER}, one row per record.",
               f"Only the rows of category `{rng.choice(CATEGORIES)}` matter.",
               f"Results go to {root}/output, one file per step."]
    if skills:
        details.append("Workflow: " + ", then ".join(skills) + ".")
    return {"title": f"{title} at {org}" if org else title, "details": details}


def _rewrite(asked: _Asked, rng: random.Random) -> dict[str, Any]:
    original = asked.user.split("Original instruction:\n", 1)[-1]
    original = original.rstrip("\n").removesuffix("Rewrite it.")
    original = original.split("\n\nNote: ", 1)[0].strip("\n")  # the feedback, if any
    original = original.split("\n\nThe tests, each with", 1)[0]  # the tests' quotes
    # Every line verbatim: every quoted sentence is kept, so nothing needs quoting anew.
    return {"instruction": original.splitlines() or ["Do the task."], "requirements": []}


def _refine(asked: _Asked, rng: random.Random) -> dict[str, Any]:
    failures = asked.user.split("Validation failed:\n", 1)[-1]
    first = asked.find(r"^- (.+)$", failures, default="no failing check was reported")
    return {"diagnosis": f"validation reported {first[:160]}; the draft is kept as it is",
            "instruction": None, "files": None, "setup": None, "steps": None,
            "alternative": None, "tests": None, "requirements": None, "mutants": None,
            "expected_values": None}


def _judge(asked: _Asked, rng: random.Random) -> dict[str, Any]:
    instruction = asked.user.split("Instruction:\n", 1)[-1].split("\n\nTests:\n", 1)[0]
    paths = len(set(re.findall(r"(?<![\w.])/[\w./-]+", instruction)))
    tests = len(re.findall(r"^def test_", asked.user, re.MULTILINE))
    return {"verdict": "ok",
            "explanation": f"The instruction names {paths} path(s) and says what each of "
                           f"the {tests} test(s) checks, without stating the expected "
                           "values."}


def _intent(asked: _Asked, rng: random.Random) -> dict[str, Any]:
    """The offline parser's actions and constraints (shipped graph, offered skills only)."""
    from taskloom.generators.backends import skill_graph
    from taskloom.generators.intent import parse_intent, refusal
    from taskloom.minilm import load_fast_embedder

    text = asked.find(r"^Request: (.+)$")
    reason = refusal(text)
    if reason or not text:
        return {"actions": [], "constraints": [], "refusal": reason}
    graph = skill_graph(())
    offered = set(re.findall(r"^([\w.]+) \[", asked.user, re.MULTILINE)) & set(graph.skills)
    intent = parse_intent(text, graph, load_fast_embedder(), allowed=offered or None)
    return {"actions": [{"words": a.text, "skill": a.covered_by, "source": a.source,
                         "target": a.target} for a in intent.atoms if a.kind == "action"],
            "constraints": [a.text for a in intent.atoms if a.kind == "constraint"],
            "refusal": None}


# -- the generator: a CSV task, one step per skill ------------------------------------------

Row = tuple[str, str, str, int]


class _Data:
    """The input table of one draft and the category its steps select.

    The rows are in no particular order, at least one is of another category, and at noise
    level 2 or more one comment line is a commented-out record of the category: each rule
    the instruction states can change an answer.
    """

    def __init__(self, rng: random.Random, category: str, rows: int, noise: int) -> None:
        others = [c for c in CATEGORIES if c != category]
        kinds = [category, *rng.sample(others, 3)]
        owners = rng.sample(OWNERS, rng.randint(4, 6))
        ids = rng.sample(range(100, 1000), rows + 1)  # the last one is commented out
        amounts = rng.sample(range(10, 1000), rows + 1)  # distinct: every sort has one answer
        chosen = [category] * 4 + [kinds[1]] + [rng.choice(kinds) for _ in range(rows - 5)]
        rng.shuffle(chosen)
        self.rows: list[Row] = [(f"r{i}", rng.choice(owners), kind, amount) for i, kind, amount
                                in zip(ids[:rows], chosen, amounts[:rows], strict=True)]
        self.category = category
        self.lines = [HEADER, *(_csv(r) for r in self.rows)]
        voided = _csv((f"r{ids[-1]}", rng.choice(owners), category, amounts[-1]))
        noise_lines = [f"# {voided}", *(rng.choice(COMMENTS) for _ in range(noise - 2))]
        for line in noise_lines[:noise - 1]:  # comments: noise the selection must skip
            self.lines.insert(rng.randint(2, len(self.lines)), line)
        self.selected = [r for r in self.rows if r[2] == category]
        self.selected_lines = [_csv(r) for r in self.selected]

    @property
    def by_amount(self) -> list[Row]:
        return sorted(self.selected, key=lambda r: -r[3])

    @property
    def comments(self) -> bool:
        """Whether some line is a comment (the instruction then says how to read them)."""
        return any(line.startswith("#") for line in self.lines)


def _csv(row: Row) -> str:
    return ",".join(map(str, row))


@dataclass(frozen=True)
class _Rule:
    """A rule a step states, and the step's commands with the rule ignored."""

    ignores: str  # the instruction's words for the rule
    commands: list[str]
    changes: bool  # whether ignoring it changes a result on this draft's data


@dataclass(frozen=True)
class _Step:
    """One solution step with the instruction sentence and the test that need it."""

    title: str
    ask: str  # the instruction's sentence
    hint: str  # tools named at specification level 1
    commands: list[str]
    test: list[str]  # one pytest function
    values: list[str]  # expected values the instruction must not state
    other: list[str]  # the same step with other tools (the alternative solution)
    rules: tuple[_Rule, ...] = ()

    @property
    def test_name(self) -> str:
        return self.test[0].removeprefix("def ").split("(", 1)[0]


def _text_test(name: str, path: str, lines: list[str]) -> list[str]:
    return [f"def test_{name}():", "    expected = [",
            *(f"        {line!r}," for line in lines), "    ]",
            f"    assert (OUT / {path!r}).read_text() == "
            "''.join(line + '\\n' for line in expected)"]


def _select(data: _Data, source: str, out: str) -> _Step:
    keep = f'$3 == "{data.category}"'
    rules = [_Rule(f"whose `category` is `{data.category}`",
                   [f"mkdir -p {out}",
                    f"awk -F, 'NR == 1 || !/^#/' {source} > {out}/selected.csv"],
                   any(r[2] != data.category for r in data.rows))]
    if data.comments:
        rules.append(_Rule(COMMENT_RULE, [f"mkdir -p {out}", f"awk -F, 'NR == 1 || {keep}' "
                                          f"{source} > {out}/selected.csv"],
                           any(line.startswith("#") and line.split(",")[2:3] == [data.category]
                               for line in data.lines)))
    return _Step(
        "select the rows of the category",
        f"Keep the rows of `{source}` whose `category` is `{data.category}`, with the "
        f"header line first and the rows in their original order, and write them to "
        f"`{out}/selected.csv`.", "awk",
        [f"mkdir -p {out}",
         f"awk -F, 'NR == 1 || (!/^#/ && {keep})' {source} > {out}/selected.csv"],
        _text_test("selected_rows", "selected.csv", [HEADER, *data.selected_lines]), [],
        [f"mkdir -p {out}", f"python3 - {source} {out}/selected.csv <<'PY'", "import sys",
         "lines = open(sys.argv[1]).read().splitlines()",
         "rows = [l for l in lines[1:] if not l.startswith('#') and "
         f"l.split(',')[2:3] == [{data.category!r}]]",
         "open(sys.argv[2], 'w').write(''.join(l + '\\n' for l in lines[:1] + rows))",
         "PY"], tuple(rules))


def _sort(data: _Data, out: str) -> _Step:
    lines = [_csv(r) for r in data.by_amount]
    return _Step(
        "sort them by amount",
        f"Write the data rows of `{out}/selected.csv` (no header) to `{out}/by_amount.csv`, "
        "sorted by `amount` from largest to smallest.", "tail, sort",
        [f"tail -n +2 {out}/selected.csv | sort -t, -k4,4nr > {out}/by_amount.csv"],
        _text_test("rows_by_amount", "by_amount.csv", lines), [],
        [f"python3 - {out}/selected.csv {out}/by_amount.csv <<'PY'", "import sys",
         "rows = open(sys.argv[1]).read().splitlines()[1:]",
         "rows.sort(key=lambda l: -int(l.split(',')[3]))",
         "open(sys.argv[2], 'w').write(''.join(l + '\\n' for l in rows))", "PY"],
        (_Rule("sorted by `amount` from largest to smallest",
               [f"tail -n +2 {out}/selected.csv > {out}/by_amount.csv"],
               data.by_amount != data.selected),))


def _total(data: _Data, out: str) -> _Step:
    total = str(sum(r[3] for r in data.selected))
    return _Step(
        "sum their amounts",
        f"Write the sum of the `amount` values of the selected rows to `{out}/total.txt`, "
        "as a whole number on one line.", "awk",
        [f"awk -F, 'NR > 1 {{ s += $4 }} END {{ printf \"%d\\n\", s }}' "
         f"{out}/selected.csv > {out}/total.txt"],
        _text_test("total_amount", "total.txt", [total]), [total],
        [f"tail -n +2 {out}/selected.csv | cut -d, -f4 | paste -sd+ - | bc "
         f"> {out}/total.txt"])


def _per_owner(data: _Data, out: str) -> _Step:
    counts: dict[str, int] = {}
    for row in data.selected:
        counts[row[1]] = counts.get(row[1], 0) + 1
    lines = [f"{owner} {counts[owner]}" for owner in sorted(counts)]
    return _Step(
        "count rows per owner",
        f"Count the selected rows per `owner` and write one `OWNER COUNT` line per owner "
        f"to `{out}/per_owner.txt`, ordered by owner name.", "cut, sort, uniq",
        [f"tail -n +2 {out}/selected.csv | cut -d, -f2 | LC_ALL=C sort | uniq -c | "
         f"awk '{{ print $2, $1 }}' > {out}/per_owner.txt"],
        _text_test("rows_per_owner", "per_owner.txt", lines), lines,
        [f"awk -F, 'NR > 1 {{ n[$2]++ }} END {{ for (o in n) print o, n[o] }}' "
         f"{out}/selected.csv | LC_ALL=C sort > {out}/per_owner.txt"],
        (_Rule("ordered by owner name",  # owners in the order they first appear
               [f"awk -F, 'NR > 1 {{ if (!($2 in n)) o[++k] = $2; n[$2]++ }} END "
                f"{{ for (i = 1; i <= k; i++) print o[i], n[o[i]] }}' {out}/selected.csv "
                f"> {out}/per_owner.txt"],
               list(counts) != sorted(counts)),))


def _top(data: _Data, out: str) -> _Step:
    owners = [r[1] for r in data.by_amount[:3]]
    return _Step(
        "name the owners of the largest amounts",
        f"Write the `owner` of each of the three selected rows with the largest `amount` "
        f"to `{out}/top_owners.txt`, one per line, largest first.", "sort, head, cut",
        [f"tail -n +2 {out}/selected.csv | sort -t, -k4,4nr | head -n 3 | cut -d, -f2 "
         f"> {out}/top_owners.txt"],
        _text_test("top_owners", "top_owners.txt", owners), [],
        [f"tail -n +2 {out}/selected.csv | sort -t, -k4,4n | tail -n 3 | tac | "
         f"awk -F, '{{ print $2 }}' > {out}/top_owners.txt"],
        (_Rule("with the largest `amount`",  # the first three rows instead
               [f"tail -n +2 {out}/selected.csv | head -n 3 | cut -d, -f2 "
                f"> {out}/top_owners.txt"],
               [r[1] for r in data.selected[:3]] != owners),))


def _ids(data: _Data, out: str) -> _Step:
    ids = sorted(r[0] for r in data.selected)
    return _Step(
        "list their ids",
        f"List the `id` of every selected row in `{out}/ids.txt`, one per line, in "
        "ascending order.", "cut, sort",
        [f"tail -n +2 {out}/selected.csv | cut -d, -f1 | LC_ALL=C sort > {out}/ids.txt"],
        _text_test("selected_ids", "ids.txt", ids), [],
        [f"awk -F, 'NR > 1 {{ print $1 }}' {out}/selected.csv | LC_ALL=C sort "
         f"> {out}/ids.txt"],
        (_Rule("in ascending order",
               [f"tail -n +2 {out}/selected.csv | cut -d, -f1 > {out}/ids.txt"],
               [r[0] for r in data.selected] != ids),))


def _checksum(data: _Data, out: str) -> _Step:
    content = "".join(f"{line}\n" for line in [HEADER, *data.selected_lines])
    digest = hashlib.sha256(content.encode()).hexdigest()
    return _Step(
        "record a checksum",
        f"Record the SHA-256 checksum of `{out}/selected.csv` in `{out}/selected.sha256`, "
        f"as `sha256sum` prints it when run in `{out}` (`HASH  selected.csv`).", "sha256sum",
        [f"(cd {out} && sha256sum selected.csv > selected.sha256)"],
        _text_test("checksum", "selected.sha256", [f"{digest}  selected.csv"]), [digest],
        [f"python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], \"rb\")"
         f".read()).hexdigest() + \"  selected.csv\")' {out}/selected.csv "
         f"> {out}/selected.sha256"],
        (_Rule(f"when run in `{out}`",  # the absolute path in the line instead
               [f"sha256sum {out}/selected.csv > {out}/selected.sha256"], True),))


def _archive(data: _Data, out: str) -> _Step:
    return _Step(
        "archive the selection",
        f"Pack `{out}/selected.csv` into the gzip-compressed tar archive "
        f"`{out}/selected.tar.gz`, holding only `selected.csv`, at its top level.", "tar",
        [f"tar -czf {out}/selected.tar.gz -C {out} selected.csv"],
        ["def test_archive():",
         "    with tarfile.open(OUT / 'selected.tar.gz', 'r:gz') as archive:",
         "        assert archive.getnames() == ['selected.csv']",
         "        member = archive.extractfile('selected.csv')",
         "        assert member is not None",
         "        assert member.read().decode() == "
         "''.join(line + '\\n' for line in SELECTED)"], [],
        [f"python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1], \"w:gz\"); "
         f"t.add(sys.argv[2], arcname=\"selected.csv\"); t.close()' "
         f"{out}/selected.tar.gz {out}/selected.csv"],
        (_Rule("at its top level",  # the member keeps the folders of its path
               [f"tar -czf {out}/selected.tar.gz {out}/selected.csv"], True),))


FOLLOWING: tuple[Callable[[_Data, str], _Step], ...] = (
    _sort, _total, _per_owner, _top, _ids, _checksum, _archive)


def _draft(asked: _Asked, rng: random.Random) -> dict[str, Any]:
    title, description = asked.scenario
    root = asked.root
    out = f"{root}/output"
    planned = asked.find(r"Input: (/\S+?\.csv)\b")
    source = planned if SAFE_PATH.match(planned) and planned.startswith(f"{root}/data/") \
        else f"{root}/data/{rng.choice(STEMS)}.csv"
    category = asked.find(r"category `([a-z]+)`")
    if category not in CATEGORIES:
        category = rng.choice(CATEGORIES)
    count = min(max(len(asked.skills), 1), MAX_STEPS)
    picked = sorted(rng.sample(range(len(FOLLOWING)), count - 1))
    rows = {1: 10, 2: 18, 3: 30}[asked.level("data_volume")] + rng.randint(0, 4)
    specification = asked.level("specification")
    for _ in range(DRAWS):  # until no value is stated and every rule changes an answer
        data = _Data(rng, category, rows, asked.level("noise"))
        steps = [_select(data, source, out), *(FOLLOWING[k](data, out) for k in picked)]
        instruction = _instruction(f"{title}: {description}" if description else title,
                                   source, data, steps, specification, root)
        values = [v for step in steps for v in step.values]
        leaks = any(states_value("\n".join(instruction), v) for v in values)
        if not leaks and all(rule.changes for step in steps for rule in step.rules):
            break
    if leaks:  # the scenario's own text states a value every time: leave it out
        instruction = instruction[1:]
    tests = ['"""Checks of the results at their absolute paths."""', "",
             *(["import tarfile"] if _archive in [FOLLOWING[k] for k in picked] else []),
             "from pathlib import Path", "", f"OUT = Path({out!r})",
             "SELECTED = [", *(f"    {line!r}," for line in [HEADER, *data.selected_lines]),
             "]"]
    for step in steps:
        tests += ["", "", *step.test]
    return {"instruction": instruction, "workdir": root,
            "files": [{"path": source, "lines": data.lines}], "setup": [],
            "steps": [{"title": s.title, "commands": s.commands} for s in steps],
            "alternative": [line for s in steps for line in s.other],
            "tests": tests, "requirements": _requirements(steps, data),
            "mutants": _mutants(steps), "expected_values": values}


def _requirements(steps: list[_Step], data: _Data) -> list[dict[str, Any]]:
    """Each step's sentence cites its test; the comment rule cites the selection's too."""
    cited = [{"demands": step.ask, "tests": [step.test_name]} for step in steps]
    if data.comments:
        cited.append({"demands": COMMENT_RULE, "tests": [steps[0].test_name]})
    return cited


def _mutants(steps: list[_Step]) -> list[dict[str, Any]]:
    """The solution once per rule the data exercises, that rule's step ignoring it."""
    return [{"ignores": rule.ignores,
             "commands": [line for other in steps
                          for line in (rule.commands if other is step else other.commands)]}
            for step in steps for rule in step.rules if rule.changes]


def _instruction(intro: str, source: str, data: _Data, steps: list[_Step],
                 specification: int, root: str) -> list[str]:
    comments = f"; {COMMENT_RULE}" if data.comments else ""
    lines = [intro, "",
             f"The CSV file `{source}` starts with the header `{HEADER}` and holds one "
             f"record per line{comments}. Your working directory is {root}; there is no "
             "network.", ""]
    if specification == 1:
        lines += ["Do the following, in order:", ""]
        lines += [f"{n}. {s.ask} ({s.hint} will do.)" for n, s in enumerate(steps, start=1)]
    elif specification == 2:
        lines += ["Do the following, in order:", ""]
        lines += [f"{n}. {s.ask}" for n, s in enumerate(steps, start=1)]
    else:
        lines += ["When you are done, all of this must hold:", ""]
        lines += [f"- {s.ask}" for s in steps]
    return lines


# -- any other schema -----------------------------------------------------------------------

def schema_instance(schema: dict[str, Any]) -> Any:
    """The smallest value `schema` (a pydantic JSON schema) accepts, `$ref`s resolved.

    Objects get their required properties, lists their fewest items, strings the fewest
    characters of `mock` their length bounds allow, numbers their lower bound (or 0).
    """
    definitions = schema.get("$defs", {})

    def walk(node: dict[str, Any]) -> Any:
        if "$ref" in node:
            return walk(definitions[node["$ref"].rsplit("/", 1)[-1]])
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return node["enum"][0]
        for combined in ("anyOf", "oneOf", "allOf"):
            if node.get(combined):
                return walk(node[combined][0])
        kind = node.get("type", "object")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object":
            properties = node.get("properties", {})
            return {name: walk(properties.get(name, {}))
                    for name in node.get("required", [])}
        if kind == "array":
            return [walk(node.get("items", {})) for _ in range(node.get("minItems", 0))]
        if kind == "string":
            low, high = node.get("minLength", 0), node.get("maxLength", 4)
            return ("mock" * (low // 4 + 1))[:max(low, min(high, 4))]
        if kind in ("integer", "number"):
            if "minimum" in node:
                return node["minimum"]
            if "exclusiveMinimum" in node:
                return node["exclusiveMinimum"] + 1
            return min(0, node.get("maximum", 0))
        if kind == "boolean":
            return False
        return None

    return walk(schema)


def _turn(asked: _Asked, rng: random.Random) -> dict[str, Any]:
    """The terminal agent's turn: look around once, then say done (it solves nothing)."""
    if asked.find(r"^Turn (\d+) of") == "1":
        return {"thought": "Look at the working directory first.", "commands": ["ls -la"],
                "done": False}
    return {"thought": "The mock model stops here.", "commands": [], "done": True}


WRITERS: dict[str, Callable[[_Asked, random.Random], dict[str, Any]]] = {
    "PlanAnswer": _plan, "RewriteAnswer": _rewrite, "DraftAnswer": _draft,
    "RefineAnswer": _refine, "JudgeAnswer": _judge, "IntentAnswer": _intent,
    "TurnAnswer": _turn}
