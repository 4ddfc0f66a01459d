"""A model's `DraftAnswer` ⇄ a Harbor `Task`, in the procedural backend's folder layout.

The model writes the content (instruction, input files, setup, solution steps, pytest
checks); taskloom renders the plumbing that has to be exactly right: the Dockerfile
`FROM taskloom/base:2` that copies `files/` to `/`, the `# taskloom:step` markers of
solve.sh, and the tests/test.sh that runs pytest and writes /logs/verifier/reward.txt.
`answer_of_task` reads such a task back (for the refiner), procedural tasks included.

Two more things keep the tests honest (issue 18). Every check must cite the instruction:
a `test_*` function of the pytest file that no requirement entry names with words really
in the instruction is dropped before validation, and the kept map is stored in the
metadata as `requirements`, in the procedural backend's format. And every stated rule
must change the answer: each mutant (the solution with one rule ignored) is shipped as
`solution/mutants/<n>-<slug>.sh`, which validation requires to earn reward 0.
"""

from __future__ import annotations

import ast
import posixpath
import re
from typing import Any

from taskloom import pysource
from taskloom.errors import InvalidAnswer
from taskloom.generators.llm.answers import (
    DraftAnswer,
    FileAnswer,
    MutantAnswer,
    RefineAnswer,
    RequirementAnswer,
    StepAnswer,
)
from taskloom.generators.procedural.assemble import task_fingerprint, task_id
from taskloom.generators.protocols import Blueprint
from taskloom.generators.verifier import verifier_files
from taskloom.models import ALTERNATIVES, MUTANTS, Task, TaskConfig, TaskFile, sorted_files
from taskloom.sandbox.base_image import BASE_IMAGE
from taskloom.skill_graph.model import SkillGraph

SETUP_HEADER = "#!/bin/bash\nset -eu\n"
SOLUTION_HEADER = "#!/bin/bash\n# Reference solution.\nset -eu\n"
ALTERNATIVE_HEADER = ("#!/bin/bash\n# Another correct solution, written from the instruction "
                      "with other tools.\nset -eu\n")
ALTERNATIVE_FILE = f"{ALTERNATIVES}/model.sh"
MUTANT_HEADER = ("#!/bin/bash\n# Wrong on purpose (a taskloom mutant): ignores {ignores}. "
                 "Validation requires reward 0.\nset -eu\n")
# The procedural backend's mutants say which step: "step 2 ignores ...".
MUTANT_TITLE = re.compile(r"^# Wrong on purpose \(a taskloom mutant\): (?:step \d+ )?"
                          r"ignores (.+?)\.? Validation requires reward 0\.$")
MAX_MUTANTS = 12
SLUG_WORDS = 5
SLUG_CHARS = 40
MIN_QUOTE_WORDS = 2  # a single word is in almost any instruction: it cites nothing
STEP_MARKER = re.compile(r"^# taskloom:step (\d+) ?(.*)$")
RESERVED = ("/tests", "/solution", "/logs", "/proc", "/sys", "/dev")
MAX_FILES = 64
MAX_FILE_BYTES = 256 * 1024


def render_task(answer: DraftAnswer, blueprint: Blueprint, graph: SkillGraph, *,
                generator: str, model: str, attempt: int) -> Task:
    """The task a draft answer describes.

    Raises:
        InvalidAnswer: A path is not a clean absolute path, is reserved, or repeats, a
            file is too large, the pytest file does not parse, no test is cited by the
            requirement map, or there are too many mutants; the message names it.
    """
    workdir = _clean_path(posixpath.normpath(posixpath.join("/", answer.workdir.strip())),
                          "workdir")
    environment: dict[str, TaskFile] = {}
    if len(answer.files) > MAX_FILES:
        raise InvalidAnswer(f"{len(answer.files)} files; at most {MAX_FILES}")
    for entry in answer.files:
        # A relative path is relative to the working directory, as in a shell there.
        path = _clean_path(posixpath.normpath(posixpath.join(workdir, entry.path.strip())),
                           "files.path")
        if path == "/":
            raise InvalidAnswer("files.path '/' names a directory, not a file")
        content = _text(entry.lines).encode()
        if len(content) > MAX_FILE_BYTES:
            raise InvalidAnswer(f"file {path} is larger than {MAX_FILE_BYTES} bytes")
        environment[f"files{path}"] = TaskFile(path=f"files{path}", content=content)
    dockerfile = [f"FROM {BASE_IMAGE}"]
    if environment:
        dockerfile.append("COPY files/ /")
    setup = [line for line in answer.setup if line.strip()]
    if setup:
        environment["setup.sh"] = TaskFile(path="setup.sh", mode=0o755,
                                           content=(SETUP_HEADER + _text(setup)).encode())
        dockerfile += ["COPY setup.sh /tmp/taskloom-setup.sh",
                       "RUN bash /tmp/taskloom-setup.sh && rm -f /tmp/taskloom-setup.sh"]
    dockerfile.append(f"WORKDIR {workdir}")
    environment["Dockerfile"] = TaskFile(path="Dockerfile",
                                         content=_text(dockerfile).encode())
    solution = SOLUTION_HEADER + "".join(
        f"# taskloom:step {number} {_one_line(step.title)}\n{_text(step.commands)}"
        for number, step in enumerate(answer.steps, start=1))
    tests, requirements, dropped = cited_tests(answer)
    skills = [graph.skills[s] for s in blueprint.path if s in graph.skills]
    metadata: dict[str, Any] = {
        "generator": generator, "model": model, "index": blueprint.index,
        "seed": blueprint.seed, "attempt": attempt, "scenario": blueprint.scenario,
        "via": list(blueprint.via), "skills": list(blueprint.path),
        "categories": sorted({s.category for s in skills}),
        "difficulty": blueprint.difficulty.model_dump(),
        "requirements": requirements,
    }
    if dropped:
        metadata["dropped_tests"] = dropped
    scenario = graph.scenarios.get(blueprint.scenario)
    config = TaskConfig.model_validate({
        "schema_version": "1.4",
        "task": {"name": f"taskloom/{task_id(blueprint)}",
                 "description": (scenario.title if scenario else blueprint.scenario) + ": " +
                                ", then ".join(s.name for s in skills),
                 "keywords": sorted({s.category for s in skills})},
        "metadata": metadata,
        "verifier": {"timeout_sec": 120.0},
        "agent": {"timeout_sec": 900.0},
        "environment": {"build_timeout_sec": 300.0, "cpus": 1, "memory_mb": 1024,
                        "storage_mb": 2048, "network_mode": "no-network"},
    })
    solutions = [TaskFile(path="solve.sh", content=solution.encode(), mode=0o755)]
    if any(line.strip() for line in answer.alternative):
        solutions.append(TaskFile(path=ALTERNATIVE_FILE, mode=0o755, content=(
            ALTERNATIVE_HEADER + _text(answer.alternative)).encode()))
    solutions += mutant_files(answer.mutants)
    task = Task(name=task_id(blueprint), config=config, instruction=_text(answer.instruction),
                environment=sorted_files(environment.values()),
                solution=sorted_files(solutions), tests=verifier_files(tests))
    return with_fingerprint(task)


def cited_tests(answer: DraftAnswer) -> tuple[str, list[dict[str, list[str]]], list[str]]:
    """The pytest file without its uncited checks, the map citing the rest, the dropped names.

    A check (a top-level `test_*` function, or `Test*` class) is cited when a requirement
    entry names it and quotes words the instruction really holds (whitespace compared
    collapsed, at least MIN_QUOTE_WORDS words). The map keeps the cited entries in the
    procedural backend's format, each quote as the instruction spells it:
    `[{"demands": [quote], "tests": [names]}]`.

    Raises:
        InvalidAnswer: The pytest file does not parse, no check is cited, or a kept one
            needs pytest (`_standalone`).
    """
    source = _text(answer.tests)
    checks = _checks(source)
    instruction = "\n".join(answer.instruction)
    requirements: list[dict[str, list[str]]] = []
    unquoted: list[str] = []
    unknown: list[str] = []
    for entry in answer.requirements:
        quote = _quoted(entry.demands, instruction)
        if quote is None:
            unquoted.append(" ".join(entry.demands.split()))
            continue
        names = list(dict.fromkeys(_test_name(t) for t in entry.tests))
        unknown += [n for n in names if n not in checks]
        kept = [n for n in names if n in checks]
        if kept:
            requirements.append({"demands": [quote], "tests": kept})
    cited = {name for entry in requirements for name in entry["tests"]}
    if not cited:
        raise InvalidAnswer(_uncited(checks, unquoted, unknown))
    dropped = [name for name in checks if name not in cited]
    gone = [lines for name in dropped for lines in checks[name]]
    kept = _without(source, gone)
    _standalone(pysource.parse(kept))
    return kept, requirements, dropped


def _checks(source: str) -> dict[str, list[tuple[int, int]]]:
    """The checks of a pytest file: name -> the lines [start, end) of each of its definitions.

    A definition's lines start at its first decorator.

    Raises:
        InvalidAnswer: The file is not valid Python.
    """
    try:
        tree = pysource.parse(source)
    except SyntaxError as exc:
        raise InvalidAnswer(f"tests: line {exc.lineno}: {exc.msg}; the pytest file must be "
                            "valid Python") from exc
    checks: dict[str, list[tuple[int, int]]] = {}
    for node in tree.body:
        function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
            node.name.startswith("test")
        if function or (isinstance(node, ast.ClassDef) and node.name.startswith("Test")):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            checks.setdefault(node.name, []).append((start, node.end_lineno or node.lineno))
    return checks


def _standalone(tree: ast.Module) -> None:
    """Refuse what the verifier's check runner cannot run (it is not pytest: no fixtures).

    Raises:
        InvalidAnswer: A check takes arguments, is a class or a coroutine, or the file
            imports pytest.
    """
    for node in ast.walk(tree):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(name.split(".")[0] in ("pytest", "_pytest") for name in names):
            raise InvalidAnswer(f"tests: line {node.lineno}: imports pytest; the checks run "
                                "without it: use plain `assert` statements")
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            raise InvalidAnswer(f"tests: line {node.lineno}: class {node.name}; checks are "
                                "top-level `def test_...():` functions")
        if not node.name.startswith("test") or isinstance(node, ast.ClassDef):
            continue
        if isinstance(node, ast.AsyncFunctionDef) or node.args.args or \
                node.args.kwonlyargs or node.args.vararg or node.args.kwarg:
            raise InvalidAnswer(f"tests: line {node.lineno}: `{node.name}` takes arguments "
                                "or is async; a check is a plain `def test_...():` with no "
                                "arguments (no pytest fixtures: build what it needs inside)")


def _uncited(checks: dict[str, list[tuple[int, int]]], unquoted: list[str],
             unknown: list[str]) -> str:
    """Why no check is cited, and the fix."""
    if not checks:
        return "tests: the pytest file has no top-level `def test_...()` function"
    problems = []
    if unquoted:
        problems.append(f"{len(unquoted)} `demands` quote(s) are not words of the "
                        f"instruction, at least {MIN_QUOTE_WORDS} in a row (e.g. "
                        f"{unquoted[0][:80]!r})")
    if unknown:
        problems.append("`tests` names functions the pytest file lacks (e.g. "
                        f"{unknown[0][:60]!r})")
    return ("requirements: no test function is cited, so every check would be dropped"
            + (": " + "; ".join(problems) if problems else "") +
            f". Give each of {', '.join(sorted(checks)[:5])} an entry whose `demands` "
            "quotes the instruction's words verbatim and whose `tests` names it")


def _without(source: str, ranges: list[tuple[int, int]]) -> str:
    """`source` without the lines of `ranges` (0-based, end excluded)."""
    lines = source.splitlines(keepends=True)
    gone = {number for start, end in ranges for number in range(start, end)}
    return "".join(line for number, line in enumerate(lines) if number not in gone)


def _test_name(name: str) -> str:
    """A test's function name as the model may write it: `test_x`, `test_x()`, `f.py::test_x`."""
    return name.strip().rsplit("::", 1)[-1].removesuffix("()").strip()


def _quoted(words: str, instruction: str) -> str | None:
    """The instruction's own text of `words` (whitespace compared collapsed), or None.

    None too when `words` has fewer than MIN_QUOTE_WORDS words.
    """
    parts = words.split()
    if len(parts) < MIN_QUOTE_WORDS:
        return None
    found = re.search(r"\s+".join(map(re.escape, parts)), instruction)
    return found.group(0) if found else None


def recite(requirements: list[dict[str, list[str]]], instruction: str,
           answered: list[RequirementAnswer]) -> tuple[list[dict[str, list[str]]], list[str]]:
    """A requirement map for a new wording of an instruction, and the tests it leaves uncited.

    Each entry keeps the quotes the new wording still holds (whitespace compared collapsed);
    the rewriter's entries (`answered`) add quotes of the new words for the tests they name.
    A test none of whose quotes is left is uncited.
    """
    tests = list(dict.fromkeys(name for entry in requirements for name in entry["tests"]))
    cited: list[dict[str, list[str]]] = []
    for entry in requirements:
        quotes = [quote for quote in (_quoted(words, instruction) for words in entry["demands"])
                  if quote]
        if quotes:
            cited.append({"demands": quotes, "tests": list(entry["tests"])})
    for entry in answered:
        quote = _quoted(entry.demands, instruction)
        names = [name for name in dict.fromkeys(map(_test_name, entry.tests)) if name in tests]
        if quote and names:
            cited.append({"demands": [quote], "tests": names})
    named = {name for entry in cited for name in entry["tests"]}
    return cited, [name for name in tests if name not in named]


def mutant_files(mutants: list[MutantAnswer]) -> list[TaskFile]:
    """`solution/mutants/<n>-<slug>.sh` per mutant (blank ones skipped), with its header.

    Raises:
        InvalidAnswer: More than MAX_MUTANTS mutants.
    """
    written = [m for m in mutants if any(line.strip() for line in m.commands)]
    if len(written) > MAX_MUTANTS:
        raise InvalidAnswer(f"mutants: {len(written)}; at most {MAX_MUTANTS}, one per rule "
                            "the instruction states")
    files = []
    for number, mutant in enumerate(written, start=1):
        ignores = _one_line(mutant.ignores).rstrip(".") or "a stated rule"
        header = MUTANT_HEADER.format(ignores=ignores)
        files.append(TaskFile(path=f"{MUTANTS}/{number}-{_slug(ignores)}.sh", mode=0o755,
                              content=(header + _text(mutant.commands)).encode()))
    return files


def _slug(text: str) -> str:
    """A short file-name stem of `text`: its first words, lower case, `-` between."""
    words = re.findall(r"[a-z0-9]+", text.lower())[:SLUG_WORDS]
    return "-".join(words)[:SLUG_CHARS].strip("-") or "rule"


def with_fingerprint(task: Task) -> Task:
    """`task` with its content fingerprint stored in its metadata."""
    metadata = {**task.config.metadata, "fingerprint": task_fingerprint(task)}
    return task.model_copy(update={"config": task.config.model_copy(
        update={"metadata": metadata})})


def answer_of_task(task: Task, expected_values: tuple[str, ...]) -> DraftAnswer:
    """The draft answer a task in this layout was rendered from (best effort for others)."""
    files = [FileAnswer(path=entry.path[len("files"):], lines=_lines(entry.content))
             for entry in task.environment if entry.path.startswith("files/")]
    setup_file = task.file("environment", "setup.sh")
    setup = _lines(setup_file.content) if setup_file else []
    if setup[:2] == SETUP_HEADER.splitlines():
        setup = setup[2:]
    dockerfile = task.dockerfile or ""
    workdirs = re.findall(r"^WORKDIR\s+(\S+)", dockerfile, re.MULTILINE)
    steps: list[StepAnswer] = []
    solve = task.file("solution", "solve.sh")
    title, commands = None, []
    for line in _lines(solve.content) if solve else []:
        marker = STEP_MARKER.match(line)
        if marker:
            if title is not None and commands:
                steps.append(StepAnswer(title=title, commands=commands))
            title, commands = marker.group(2) or f"step {marker.group(1)}", []
        elif title is not None:
            commands.append(line)
    if title is not None and commands:
        steps.append(StepAnswer(title=title, commands=commands))
    tests_file = next((f for f in task.tests if f.path.endswith(".py")), None)
    return DraftAnswer.model_construct(
        alternative=_script_body(task.alternatives[0].content) if task.alternatives else [],
        instruction=task.instruction.splitlines(), workdir=workdirs[-1] if workdirs else "/",
        files=files, setup=setup, steps=steps,
        tests=_lines(tests_file.content) if tests_file else [],
        requirements=requirements_of(task), mutants=mutants_of(task),
        expected_values=list(expected_values))


def requirements_of(task: Task) -> list[RequirementAnswer]:
    """The requirement map of a task's metadata, one entry per quote.

    A procedural entry cites several quotes (a step's sentence, then its notes) for the same
    tests: each becomes an entry of its own, with those tests.
    """
    entries = task.config.metadata.get("requirements") or []
    found = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        demands, tests = entry.get("demands"), entry.get("tests")
        quotes = [demands] if isinstance(demands, str) else demands or []
        names = [t for t in tests or [] if isinstance(t, str) and t.strip()]
        found += [RequirementAnswer(demands=q, tests=names) for q in quotes
                  if isinstance(q, str) and q.strip() and names]
    return found


def mutants_of(task: Task) -> list[MutantAnswer]:
    """The mutants a task ships, by number, each with the rule its header says it ignores."""
    def order(entry: TaskFile) -> tuple[int, str]:
        stem = entry.path.rsplit("/", 1)[-1]
        number = stem.split("-", 1)[0]
        return (int(number) if number.isdigit() else 0, stem)

    found = []
    for entry in sorted(task.mutants, key=order):
        lines = _lines(entry.content)
        title = next((m for m in map(MUTANT_TITLE.match, lines[:3]) if m), None)
        stem = entry.path.rsplit("/", 1)[-1].removesuffix(".sh")
        ignores = title.group(1) if title else stem.replace("-", " ")
        commands = _script_body(entry.content)
        if commands:
            found.append(MutantAnswer(ignores=ignores, commands=commands))
    return found


def apply_repair(answer: DraftAnswer, repair: RefineAnswer) -> DraftAnswer:
    """`answer` with the fields `repair` replaces (files are replaced or added by path)."""
    update = {name: getattr(repair, name) for name in
              ("instruction", "setup", "steps", "alternative", "tests", "requirements",
               "mutants", "expected_values")
              if getattr(repair, name) is not None}
    if repair.files is not None:
        files = {f.path: f for f in answer.files}
        files.update({f.path: f for f in repair.files})
        update["files"] = list(files.values())
    return answer.model_copy(update=update)


def _clean_path(path: str, field: str) -> str:
    path = path.strip()
    if not path.startswith("/") or path.startswith("//") or posixpath.normpath(path) != path \
            or "\\" in path \
            or any(ord(c) < 32 for c in path):
        raise InvalidAnswer(f"{field} {path!r} is not a clean absolute path")
    if path != "/" and any(path == r or path.startswith(r + "/") for r in RESERVED):
        raise InvalidAnswer(f"{field} {path!r} is under a reserved directory")
    return path


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _text(lines: list[str]) -> str:
    return "".join(line.rstrip("\n") + "\n" for line in lines)


def _script_body(content: bytes) -> list[str]:
    """A script's lines after its header: the shebang, leading comments, `set -eu`."""
    lines = _lines(content)
    while lines and (lines[0].startswith("#") or lines[0].strip() in ("", "set -eu")):
        lines = lines[1:]
    return lines


def _lines(content: bytes) -> list[str]:
    return content.decode("utf-8", errors="replace").splitlines()
