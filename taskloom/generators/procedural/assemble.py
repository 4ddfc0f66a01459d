"""Assemble a task from a blueprint: source data, chained steps, instruction, solution, tests.

Specification level decides what the agent is told:
- 1: numbered steps, each naming its output file and format, with tool hints;
- 2: the same steps without hints;
- 3: the goal only: the final result described through its inputs ("the number of
  distinct ... in the ERROR lines of ..."), plus any step whose effect is on the system.
Intermediate outputs are checked when the instruction names them (levels 1-2); the final
output and side effects are always checked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import posixpath
import re

from taskloom.errors import NoDraft
from taskloom.generators.procedural.artifacts import Artifact, FileTree
from taskloom.generators.procedural.briefing import opening
from taskloom.generators.procedural.checks import Assertion, once, render_tests, running_order
from taskloom.generators.procedural.domains import domain as get_domain
from taskloom.generators.procedural.primitives import PRIMITIVES, SOURCES
from taskloom.generators.procedural.primitives.base import Rule, StepContext, StepResult
from taskloom.generators.procedural.primitives.sqlite import end_states
from taskloom.generators.procedural.world import World
from taskloom.generators.protocols import Blueprint
from taskloom.generators.verifier import verifier_files
from taskloom.leaks import states_value
from taskloom.models import ALTERNATIVES, MUTANTS, Task, TaskConfig, TaskFile, sorted_files
from taskloom.sandbox.base_image import BASE_IMAGE
from taskloom.seeding import rng_for
from taskloom.skill_graph.model import SkillGraph

GENERATOR_VERSION = "procedural/2"
WORK_NOTE = "Work on this machine only"
# Read by checks of accounts and of crontabs, which the instruction names in words.
NAMES = "ABCDEFGH"  # what a goal-only instruction calls the results of hidden steps
SYSTEM_READS = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow",
                "/var/spool/cron/")



class StepRefused(NoDraft):
    """Step `number` of the path refused its input.

    `misplaced`: it refuses that position whatever the input (`errors.Misplaced`).
    """

    def __init__(self, message: str, number: int, *, misplaced: bool) -> None:
        super().__init__(message)
        self.number = number
        self.misplaced = misplaced


@dataclasses.dataclass
class Assembled:
    """The parts of a generated task before it becomes a `Task`."""

    instruction: str
    solution: str
    checks: list[Assertion]
    world: World
    tools: tuple[str, ...]
    answers: tuple[str, ...]
    alternative: str  # another correct solve.sh: other tools, the same state
    mutants: dict[str, str]  # file stem -> a wrong solve.sh ignoring one stated rule
    stated: tuple[int, ...]  # numbers of the steps the instruction spells out (with their rules)


def assemble(blueprint: Blueprint, graph: SkillGraph, attempt: int = 0) -> Assembled:
    """Run the blueprint's steps on a fresh world.

    Raises:
        StepRefused: A step does not apply to its input.
        NoDraft: The task would be weak.
    """
    from taskloom.errors import Misplaced, NotApplicable

    scenario = graph.scenarios[blueprint.scenario]
    domain = get_domain(scenario.domain)
    world = World(workdir=domain.root)
    world.mkdir(f"{domain.root}/output")
    difficulty = blueprint.difficulty
    goal_only = difficulty.specification == 3
    first = graph.skills[blueprint.path[0]]
    source_types = [t for t in graph.source_type_for(first.id) if t in SOURCES]
    if not source_types:
        raise NoDraft(f"no source generator for {first.consumes}")
    used: set[str] = set()
    context = _context(blueprint, domain, world, 0, attempt, used)
    artifact: Artifact = SOURCES[context.rng.choice(source_types)](context)
    results: list[StepResult] = []
    there: list[set[str]] = []  # the environment's files after each step
    named: list[tuple[str, str]] = []  # (letter, phrase) of each hidden step's result
    for number, skill_id in enumerate(blueprint.path, start=1):
        step = _context(blueprint, domain, world, number, attempt, used)
        try:
            result = PRIMITIVES[skill_id](step, artifact)
        except NotApplicable as exc:
            raise StepRefused(f"step {number} ({skill_id}): {exc}", number,
                              misplaced=isinstance(exc, Misplaced)) from exc
        if not result.alternative.strip():
            raise TypeError(f"primitive {skill_id} gives no alternative solution")
        produced = graph.skills[skill_id].produces
        if not graph.is_a(result.output.kind, produced):
            raise TypeError(f"primitive {skill_id} produced {result.output.kind}, the graph "
                            f"says {produced}")
        results.append(result)
        there.append(set(world.files))
        artifact = result.output
        if not goal_only or result.side_effect:  # a shown step: the next names its path
            artifact = dataclasses.replace(artifact, phrase=_path_phrase(artifact))
        elif number < len(blueprint.path):
            # A hidden step's result gets a letter, so the goal reads "the lines of B", not
            # "the lines of the lines of the sorted list of ..."
            letter = NAMES[len(named)]
            named.append((letter, artifact.phrase))
            artifact = dataclasses.replace(artifact, phrase=letter)
    shown = [index == len(results) - 1 or result.side_effect or not goal_only
             for index, result in enumerate(results)]
    instruction = _instruction(blueprint, graph, results, shown, domain, named)
    checks = []
    trees = {r.output.path: r.output for r in results if isinstance(r.output, FileTree)}
    for index, (result, visible) in enumerate(zip(results, shown, strict=True)):
        if not visible:
            continue
        words = demands(result, difficulty.specification)
        if result.reads_input_file and index and not shown[index - 1]:
            # Its sentence asks for the hidden step's result at that path: checked there, as
            # that step checks its file (the job's report alone let other rows with the same
            # counts pass, red-team round 7).
            before = results[index - 1]
            checks += [dataclasses.replace(check, demands=words) for check in before.checks
                       if check.reads() == (before.output.path,)]
        planted = set(world.files) - there[index]  # by later steps
        checks += [dataclasses.replace(check.covering(planted, trees), demands=words)
                   for check in result.checks]
    for steps, check in end_states([(r.output, r.side_effect) for r in results]):
        words = (word for step in steps for word in demands(results[step],
                                                            difficulty.specification))
        checks.append(dataclasses.replace(check, demands=tuple(dict.fromkeys(words))))
    checks = running_order(once(checks))
    uncited = [c.label for c in checks if not all(quote in instruction for quote in c.demands)]
    if uncited:
        raise TypeError(f"the check {uncited[0]!r} cites words the instruction does not show")
    unstated = unstated_read(checks, instruction)
    if unstated:
        raise NoDraft(f"a check reads {unstated}, and the instruction names neither it, nor "
                      "a folder above it, nor a path inside it")
    answers = tuple(dict.fromkeys(a for check in checks for a in check.answers()))
    leaked = [a for a in answers if states_value(instruction, a)]
    if leaked:
        raise NoDraft(f"the instruction states an expected value: {leaked[0]!r}")
    solution = _solution(blueprint, graph, results)
    alternative = _solution(blueprint, graph, results, alternative=True)
    mutants = {}
    for number, (result, visible) in enumerate(zip(results, shown, strict=True), start=1):
        for rule in result.rules if visible else ():
            name = f"step-{number}-{rule.name}"
            if name in mutants:
                raise TypeError(f"step {number} ({blueprint.path[number - 1]}) states two "
                                f"rules named {rule.name}")
            mutants[name] = _solution(blueprint, graph, results, ignoring=(number, rule))
    tools = tuple(dict.fromkeys(tool for result in results for tool in result.tools))
    stated = tuple(number for number, visible in enumerate(shown, start=1) if visible)
    return Assembled(instruction, solution, checks, world, tools, answers, alternative,
                     mutants, stated)


def unstated_read(checks: list[Assertion], instruction: str) -> str | None:
    """The first path a check reads that the instruction does not name, or None.

    A path is named when it, a folder above it or a path inside it is written in the
    instruction (not in the closing note on the working directory: where a hidden step
    left its output is no business of the agent). The account database and the crontabs
    are named in words.
    """
    text = instruction.split(f"- {WORK_NOTE}")[0]
    for check in checks:
        for path in check.reads():
            if path.startswith(SYSTEM_READS):
                continue
            folders = [path.rstrip("/")]
            while folders[-1].count("/") > 1:
                folders.append(posixpath.dirname(folders[-1]))
            named = [re.escape(folder) + r"(?![\w.-]|/[\w.-])" for folder in folders]
            inside = re.escape(path.rstrip("/")) + "/"  # a folder around a named path
            if not any(re.search(pattern, text) for pattern in [*named, inside]):
                return path
    return None


def _context(blueprint: Blueprint, domain, world: World, number: int, attempt: int,
             used: set[str]) -> StepContext:
    skill = blueprint.path[number - 1] if number else "source"
    return StepContext(rng=rng_for(blueprint.seed, "step", number, skill, attempt),
                       difficulty=blueprint.difficulty, domain=domain, world=world,
                       step=max(number, 1), steps=len(blueprint.path), used_names=used,
                       numbers=blueprint.numbers)


def _path_phrase(artifact: Artifact) -> str:
    noun = {"csv_table": "CSV file", "json_doc": "JSON file", "sqlite_db": "database",
            "archive": "archive", "file_tree": "directory", "git_repo": "repository",
            "log_dir": "log directory", "cron_job": "scheduled job",
            "account_set": "accounts listed in"}.get(artifact.kind, "file")
    return f"the {noun} `{artifact.path}`"


def _instruction(blueprint: Blueprint, graph: SkillGraph, results: list[StepResult],
                 shown: list[bool], domain, named: list[tuple[str, str]]) -> str:
    """instruction.md: the steps whose sentence is `shown`, and everyone's notes."""
    scenario = graph.scenarios[blueprint.scenario]
    level = blueprint.difficulty.specification
    parts = [opening(rng_for(blueprint.seed, "opening"), domain, scenario.description)]
    if named:
        letters = " and ".join(", ".join(n for n, _ in named).rsplit(", ", 1))
        what = ("names a result", "it need") if len(named) == 1 else ("name results", "they need")
        parts.append(f"Below, {letters} {what[0]} that you may compute in any way ({what[1]} "
                     "not be saved anywhere):\n"
                     + "\n".join(f"- {n}: {phrase}" for n, phrase in named))
    if level == 3:
        parts.append("Your goal: " + " Then ".join(
            demands(r, 3)[0] for r, visible in zip(results, shown, strict=True) if visible))
    elif len(results) == 1:
        parts.append(results[0].instruction)
    else:
        steps = "\n".join(f"{n}. {r.instruction}" for n, r in enumerate(results, start=1))
        parts.append(f"Do the following, in order:\n\n{steps}")
    notes = list(dict.fromkeys(note for r in results for note in r.notes))
    exact = any(getattr(check, "compare", None) == "exact" for r in results
                for check in r.checks)
    if exact:
        notes.append("Text results are compared byte for byte: no extra spaces or blank "
                     "lines, and every text file ends with a single newline.")
    notes.append(f"{WORK_NOTE} (there is no network). Your working directory "
                 f"is {domain.root}; {domain.root}/output already exists.")
    parts.append("\n".join(f"- {note}" for note in notes))
    return "\n\n".join(parts) + "\n"


def _sentence(text: str) -> str:
    return text[0].lower() + text[1:] if text and not text[:2].isupper() else text


def demands(result: StepResult, specification: int) -> tuple[str, ...]:
    """The words of the instruction that demand a step's checks.

    Its sentence as the instruction shows it (inside the goal at specification 3), then
    its notes.
    """
    sentence = _sentence(result.instruction) if specification == 3 else result.instruction
    return (sentence, *result.notes)


def requirements(checks: list[Assertion]) -> list[dict[str, list[str]]]:
    """The requirement map: the instruction's words, each with the tests that check them."""
    tests: dict[tuple[str, ...], list[str]] = {}
    for number, check in enumerate(checks, start=1):
        tests.setdefault(check.demands, []).append(check.test_name(number))
    return [{"demands": list(words), "tests": names} for words, names in tests.items()]


def _solution(blueprint: Blueprint, graph: SkillGraph, results: list[StepResult], *,
              alternative: bool = False, ignoring: tuple[int, Rule] | None = None) -> str:
    """solve.sh, or another script of the same steps.

    `alternative`: the other correct solution (other tools, the same state); `ignoring`
    (a step number and one of its rules): the reference solution wrong in just that rule.
    """
    if alternative:
        title = "Alternative solution generated by taskloom: other tools, the same result."
    elif ignoring:
        title = (f"Wrong on purpose (a taskloom mutant): step {ignoring[0]} ignores "
                 f"{' '.join(ignoring[1].stated.split())}. Validation requires reward 0.")
    else:
        title = "Reference solution generated by taskloom."
    lines = ["#!/bin/bash", f"# {title}", "set -eu"]
    for number, (skill_id, result) in enumerate(zip(blueprint.path, results, strict=True),
                                                start=1):
        marker = "step" if alternative or ignoring else "taskloom:step"
        lines.append(f"# {marker} {number} {graph.skills[skill_id].name}")
        fragment = result.alternative if alternative else result.solution
        if ignoring and ignoring[0] == number:
            fragment = ignoring[1].ignored
        lines.append(fragment.rstrip("\n"))
    return "\n".join(lines) + "\n"


def build_task(blueprint: Blueprint, graph: SkillGraph, attempt: int = 0, *,
               verifier: str = "shared") -> tuple[Task, Assembled]:
    """The Harbor task for a blueprint (see `assemble` for what can fail).

    `verifier="separate"` makes its tests run in a fresh environment that receives the
    paths the checks read (`separate_artifacts`), when every check can be made from them.
    """
    parts = assemble(blueprint, graph, attempt)
    world = parts.world
    environment = [TaskFile(path=f"files{path}", content=spec.content, mode=spec.mode)
                   for path, spec in sorted(world.files.items())]
    setup = world.setup_script()
    dockerfile = [f"FROM {BASE_IMAGE}", "COPY files/ /"]
    if setup:
        environment.append(TaskFile(path="setup.sh", content=(
            "#!/bin/bash\nset -eu\n" + setup + "\n").encode(), mode=0o755))
        dockerfile += ["COPY setup.sh /tmp/taskloom-setup.sh",
                       "RUN bash /tmp/taskloom-setup.sh && rm -f /tmp/taskloom-setup.sh"]
    dockerfile.append(f"WORKDIR {world.workdir}")
    environment.append(TaskFile(path="Dockerfile", content=("\n".join(dockerfile) + "\n")
                                .encode()))
    name = task_id(blueprint)
    scenario = graph.scenarios[blueprint.scenario]
    skills = [graph.skills[s] for s in blueprint.path]
    metadata = {
        "generator": GENERATOR_VERSION,
        "index": blueprint.index,
        "seed": blueprint.seed,
        "attempt": attempt,
        "scenario": blueprint.scenario,
        "via": list(blueprint.via),
        "skills": list(blueprint.path),
        "categories": sorted({s.category for s in skills}),
        "tools": list(parts.tools),
        "difficulty": blueprint.difficulty.model_dump(),
        "stated_steps": list(parts.stated),
        "requirements": requirements(parts.checks),
    }
    artifacts = separate_artifacts(parts.checks) if verifier == "separate" else None
    separate = {"artifacts": list(artifacts)} if artifacts else {}
    config = TaskConfig.model_validate({
        "schema_version": "1.4",
        **separate,
        "task": {"name": f"taskloom/{name}",
                 "description": f"{scenario.title}: " + ", then ".join(s.name for s in skills),
                 "keywords": sorted({s.category for s in skills} | set(parts.tools))},
        "metadata": metadata,
        "verifier": {"timeout_sec": 120.0,
                     **({"environment_mode": "separate"} if artifacts else {})},
        "agent": {"timeout_sec": 900.0},
        "environment": {"build_timeout_sec": 300.0, "cpus": 1, "memory_mb": 1024,
                        "storage_mb": 2048, "network_mode": "no-network"},
    })
    tests = verifier_files(render_tests(parts.checks, world.image_accounts()))
    solution = [TaskFile(path="solve.sh", content=parts.solution.encode(), mode=0o755),
                TaskFile(path=f"{ALTERNATIVES}/other-tools.sh",
                         content=parts.alternative.encode(), mode=0o755),
                *(TaskFile(path=f"{MUTANTS}/{name}.sh", content=script.encode(), mode=0o755)
                  for name, script in parts.mutants.items())]
    task = Task(name=name, config=config, instruction=parts.instruction,
                environment=sorted_files(environment), solution=sorted_files(solution),
                tests=tuple(tests))
    fingerprint = task_fingerprint(task)
    config = config.model_copy(update={"metadata": {**metadata, "fingerprint": fingerprint}})
    return task.model_copy(update={"config": config}), parts


def separate_artifacts(checks: list[Assertion]) -> tuple[str, ...] | None:
    """The paths a separate verifier must receive, or None when a check needs more.

    A path below another one of the list is left out (the directory carries it).
    """
    if not all(check.portable for check in checks):
        return None
    paths = sorted({path.rstrip("/") or "/" for check in checks for path in check.reads()})
    if not paths or "/" in paths:  # the whole file system is no artifact
        return None
    return tuple(p for p in paths
                 if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in paths))


def task_id(blueprint: Blueprint) -> str:
    """Readable, unique folder name: index, scenario, first skill."""
    first = blueprint.path[0].replace(".", "-").replace("_", "-")
    return f"{blueprint.index:05d}-{blueprint.scenario}-{first}"[:80]


def task_fingerprint(task: Task) -> str:
    """sha256 over everything that defines the task (not its metadata)."""
    digest = hashlib.sha256()
    digest.update(task.instruction.encode())
    sections = [(task, ("environment", "solution", "tests"))]
    for step in task.steps:
        digest.update(f"steps/{step.name}:".encode() + step.instruction.encode())
        sections.append((step, ("solution", "tests", "workdir")))
    for owner, names in sections:
        for section in names:
            for entry in getattr(owner, section):
                digest.update(f"{section}/{entry.path}:{entry.mode}:".encode())
                digest.update(hashlib.sha256(entry.content).digest())
    config = task.config.model_dump(mode="json", exclude={"metadata"})
    if not task.steps:  # keys a single-step task leaves unset: its fingerprint stays as it was
        del config["steps"], config["multi_step_reward_strategy"]
    digest.update(json.dumps(config, sort_keys=True).encode())
    return digest.hexdigest()

