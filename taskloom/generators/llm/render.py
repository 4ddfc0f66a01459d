"""A model's `DraftAnswer` ⇄ a Harbor `Task`, in the procedural backend's folder layout.

The model writes the content (instruction, input files, setup, solution steps, pytest
checks); taskloom renders the plumbing that has to be exactly right: the Dockerfile
`FROM taskloom/base:1` that copies `files/` to `/`, the `# taskloom:step` markers of
solve.sh, and the tests/test.sh that runs pytest and writes /logs/verifier/reward.txt.
`answer_of_task` reads such a task back (for the refiner), procedural tasks included.
"""

from __future__ import annotations

import posixpath
import re

from taskloom.errors import InvalidAnswer
from taskloom.generators.llm.answers import DraftAnswer, FileAnswer, RefineAnswer, StepAnswer
from taskloom.generators.procedural.assemble import task_fingerprint, task_id
from taskloom.generators.protocols import Blueprint
from taskloom.generators.verifier import verifier_files
from taskloom.models import ALTERNATIVES, Task, TaskConfig, TaskFile, sorted_files
from taskloom.sandbox.base_image import BASE_IMAGE
from taskloom.skill_graph.model import SkillGraph

SETUP_HEADER = "#!/bin/bash\nset -eu\n"
SOLUTION_HEADER = "#!/bin/bash\n# Reference solution.\nset -eu\n"
ALTERNATIVE_HEADER = ("#!/bin/bash\n# Another correct solution, written from the instruction "
                      "with other tools.\nset -eu\n")
ALTERNATIVE_FILE = f"{ALTERNATIVES}/model.sh"
STEP_MARKER = re.compile(r"^# taskloom:step (\d+) ?(.*)$")
RESERVED = ("/tests", "/solution", "/logs", "/proc", "/sys", "/dev")
MAX_FILES = 64
MAX_FILE_BYTES = 256 * 1024


def render_task(answer: DraftAnswer, blueprint: Blueprint, graph: SkillGraph, *,
                generator: str, model: str, attempt: int) -> Task:
    """The task a draft answer describes.

    Raises:
        InvalidAnswer: A path is not a clean absolute path, is reserved, or repeats, or a
            file is too large; the message names it.
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
    skills = [graph.skills[s] for s in blueprint.path if s in graph.skills]
    metadata = {
        "generator": generator, "model": model, "index": blueprint.index,
        "seed": blueprint.seed, "attempt": attempt, "scenario": blueprint.scenario,
        "via": list(blueprint.via), "skills": list(blueprint.path),
        "categories": sorted({s.category for s in skills}),
        "difficulty": blueprint.difficulty.model_dump(),
    }
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
    task = Task(name=task_id(blueprint), config=config, instruction=_text(answer.instruction),
                environment=sorted_files(environment.values()),
                solution=sorted_files(solutions), tests=verifier_files(_text(answer.tests)))
    return with_fingerprint(task)


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
        expected_values=list(expected_values))


def apply_repair(answer: DraftAnswer, repair: RefineAnswer) -> DraftAnswer:
    """`answer` with the fields `repair` replaces (files are replaced or added by path)."""
    update = {name: getattr(repair, name) for name in
              ("instruction", "setup", "steps", "alternative", "tests", "expected_values")
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
