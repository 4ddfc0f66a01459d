"""structure: the task is readable, complete and of sane size, before any container.

Every other check needs it: a task that fails it gets no other verdict.
"""

from __future__ import annotations

from pathlib import Path

from taskloom.errors import TaskFolderError
from taskloom.harbor import read_task_folder
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.validators.protocol import Evidence

NAME = "structure"
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_TASK_BYTES = 256 * 1024 * 1024
MAX_INSTRUCTION_CHARS = 64 * 1024


def load_task(path: Path) -> tuple[Task | None, Verdict]:
    """Read a task folder; a folder that cannot be read becomes a failed structure verdict."""
    try:
        task = read_task_folder(path)
    except TaskFolderError as exc:
        return None, Verdict(check=NAME, passed=False, reason=ReasonCode.STRUCTURE,
                             details=str(exc))
    return task, check_structure(task)


def check_structure(task: Task) -> Verdict:
    """Completeness and size limits of an in-memory task."""
    problems = []
    unsolved = [step.name for step in task.steps if not any(f.path == "solve.sh"
                                                             for f in step.solution)]
    if task.file("solution", "solve.sh") is None and (unsolved or not task.steps):
        where = f"steps/{unsolved[0]}/solution/solve.sh or " if unsolved else ""
        problems.append(f"{where}solution/solve.sh is missing: the oracle check needs a "
                        "reference solution (add it)")
    for text in task.instructions:
        if len(text) > MAX_INSTRUCTION_CHARS:
            problems.append(f"an instruction.md has {len(text)} characters "
                            f"(limit {MAX_INSTRUCTION_CHARS}); shorten it")
    if task.steps and task.config.verifier.separate:
        problems.append("a multi-step task with a separate verifier is not supported yet: "
                        "taskloom runs a multi-step task's tests in the agent's environment "
                        "(remove [verifier].environment_mode = \"separate\")")
    for settings in task.config.steps:
        if settings.verifier.separate:
            problems.append(f"step {settings.name} sets its own verifier environment: not "
                            "supported yet (remove [steps.verifier].environment_mode and "
                            "[steps.verifier.environment])")
    total = 0
    sections = [("", task, ("environment", "solution", "tests"))] + [
        (f"steps/{step.name}/", step, ("solution", "tests", "workdir")) for step in task.steps]
    for prefix, owner, names in sections:
        for section, entry in ((s, e) for s in names for e in getattr(owner, s)):
            total += len(entry.content)
            if len(entry.content) > MAX_FILE_BYTES:
                problems.append(f"{prefix}{section}/{entry.path} is "
                                f"{len(entry.content) >> 20} MiB "
                                f"(limit {MAX_FILE_BYTES >> 20} MiB); generate it in the "
                                "Dockerfile instead")
    if total > MAX_TASK_BYTES:
        problems.append(f"the task holds {total >> 20} MiB of files "
                        f"(limit {MAX_TASK_BYTES >> 20} MiB)")
    if task.config.environment.gpus:
        problems.append("[environment].gpus is set: taskloom sandboxes have no GPUs")
    if task.config.verifier.environment is not None:
        problems.append("[verifier.environment] is set: a separate verifier with an "
                        "environment of its own is not supported yet (remove it: "
                        'environment_mode = "separate" verifies in a fresh copy of '
                        "[environment])")
    for entry in task.config.artifacts:
        if not isinstance(entry, str) and entry.service not in (None, "main"):
            problems.append(f"artifact {entry.source} comes from compose service "
                            f"{entry.service}: compose environments are not supported")
    for path in task.config.artifact_paths:
        if not path.startswith("/"):
            problems.append(f"artifact {path!r} is not an absolute path (taskloom needs one "
                            "to carry it to a separate verifier)")
    if problems:
        return Verdict(check=NAME, passed=False, reason=ReasonCode.STRUCTURE,
                       details="; ".join(problems))
    unknown = task.config.unknown_keys()
    note = f"unknown task.toml keys ignored, as Harbor does: {', '.join(unknown)}" \
        if unknown else "task.toml, instruction, environment, solution and tests present"
    return Verdict(check=NAME, passed=True, details=note)


class StructureCheck:
    """Required files present, limits respected (no sandbox needed)."""

    name = NAME
    reasons = (ReasonCode.STRUCTURE,)
    needs = ()
    default = True
    needs_model = False

    def check(self, evidence: Evidence) -> Verdict:
        """Completeness and size limits of the task."""
        return check_structure(evidence.task)
