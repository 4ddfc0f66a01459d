"""The one row schema of every dataset export (JSONL, Parquet, Hugging Face).

`TaskRow` defines the columns: their names, types and descriptions. The Arrow schema
(Parquet, and through it the Hugging Face `Features`) is derived from it by
`arrow_schema()`, JSONL is `TaskRow.model_dump_json()` (bytes as URL-safe base64), and the
dataset card lists the columns from the same field descriptions, so the three formats
cannot drift apart.
"""

from __future__ import annotations

import hashlib
import types
import typing
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, Field

from taskloom.errors import MissingExtra
from taskloom.generators.protocols import Difficulty
from taskloom.harbor import harbor_digest, pack, read_files
from taskloom.metrics.shell import action_complexity
from taskloom.models import Calibration, Frozen, Task, TaskFile
from taskloom.outputs.run import RunData
from taskloom.pipeline.records import RunTask
from taskloom.pipeline.store import RunDirectory

ROW_SCHEMA_VERSION = "2"  # 2: the calibration column


class FileEntry(Frozen):
    """One file of a task folder section."""

    path: str = Field(description="POSIX path inside its section folder.")
    content: bytes = Field(description="Exact file bytes.")
    mode: int = Field(description="Permission bits (420 = 0o644, 493 = 0o755).")


class VerdictSummary(Frozen):
    """One check of the validation that accepted the task."""

    check: str = Field(description="structure, build, nop, oracle, mutations, leakage...")
    passed: bool = Field(description="True (accepted tasks passed every check).")
    reason: str | None = Field(description="Reason code of a failure; null when passed.")
    details: str = Field(description="What the check found, in a sentence.")
    seconds: float = Field(description="Seconds the check took.")


class Provenance(Frozen):
    """Where a task came from."""

    run_id: str = Field(description="Id of the run that made it.")
    run_seed: int = Field(description="Seed of that run.")
    item: int = Field(description="Item index in the run.")
    round: int = Field(description="Refine rounds before it was accepted (0 = first draft).")
    seed: int = Field(description="Seed every generation choice of this task derives from.")
    generator: str = Field(description="Backend and version that wrote it.")
    backend: str = Field(description="Run backend: procedural, llm or hybrid.")
    taskloom_version: str = Field(description="taskloom version of the run.")
    created: str = Field(description="When the run started (ISO 8601, UTC).")


class TaskRow(Frozen):
    """One task of a dataset export."""

    task_id: str = Field(description="Task id: the Harbor folder name.")
    name: str = Field(description="Harbor package name from task.toml [task].name (org/name).")
    instruction: str = Field(description="instruction.md: what the agent is told.")
    scenario: str = Field(description="Scenario id the task is set in.")
    skills: tuple[str, ...] = Field(description="Skill ids, in workflow order.")
    categories: tuple[str, ...] = Field(description="Categories of those skills.")
    difficulty: Difficulty = Field(description="Difficulty vector: seven levels, 1 (easy) "
                                               "to 3 (hard).")
    dockerfile: str = Field(description="environment/Dockerfile text.")
    environment_files: tuple[FileEntry, ...] = Field(
        description="environment/ files (the Dockerfile and what it COPYs), by path.")
    solution_files: tuple[FileEntry, ...] = Field(
        description="solution/ files (solve.sh: the reference solution; alternatives/*.sh: "
                    "other correct solutions; mutants/*.sh: wrong ones that must earn 0), "
                    "by path.")
    test_files: tuple[FileEntry, ...] = Field(
        description="tests/ files (test.sh and the checks), by path.")
    solution_commands: int = Field(description="Commands in solve.sh (action complexity).")
    solution_tools: tuple[str, ...] = Field(description="Distinct programs solve.sh runs.")
    verdicts: tuple[VerdictSummary, ...] = Field(
        description="The checks of the validation that accepted it.")
    fingerprint: str = Field(description="taskloom content fingerprint (sha256 hex).")
    digest: str = Field(description="Harbor content hash of the folder (sha256:<hex>), as "
                                    "pinned in dataset.toml.")
    provenance: Provenance = Field(description="Run, item, seeds and generator.")
    calibration: Calibration | None = Field(
        default=None, description="A model's pass rate on the task in k attempts (the "
        "run's calibration stage; null when it was off), as in task.toml's "
        "[metadata.calibration].")
    archive: bytes = Field(description="The whole task folder as a reproducible tar.gz "
                                       "(entries <task_id>/...).")
    archive_sha256: str = Field(description="sha256 hex of `archive`.")


def task_rows(data: RunData, files_of: Callable[[RunTask], tuple[TaskFile, ...]] | None = None
              ) -> Iterator[TaskRow]:
    """The rows of a run's exported tasks, in item order.

    `files_of` gives a task's files as exported (default: its folder, byte for byte).
    """
    from taskloom.harbor import read_task_folder

    with RunDirectory(data.root).open(read_only=True) as store:
        stored = store.verdicts()
        calibrations = {row.item: row.calibration for row in store.calibrations()}
    verdicts: dict[tuple[int, int], list[VerdictSummary]] = defaultdict(list)
    for row in stored:
        verdict = row.verdict
        verdicts[(row.item, row.round)].append(VerdictSummary(
            check=verdict.check, passed=verdict.passed, reason=verdict.reason,
            details=verdict.details, seconds=verdict.seconds))
    for task in data.tasks:
        yield task_row(data, task, read_task_folder(task.folder),
                       tuple(verdicts.get((task.item, task.round), ())),
                       files=files_of(task) if files_of else None,
                       calibration=calibrations.get(task.item))


def task_row(data: RunData, task: RunTask, parsed: Task,
             verdicts: tuple[VerdictSummary, ...], *,
             files: tuple[TaskFile, ...] | None = None,
             calibration: Calibration | None = None) -> TaskRow:
    """The row of one exported task (`files`: as exported, default its folder's)."""
    files = files if files is not None else read_files(task.folder)
    archive = pack(task.task_id, files)
    metadata = parsed.config.metadata
    solve = parsed.file("solution", "solve.sh")
    complexity = action_complexity(solve.content.decode("utf-8", errors="replace")
                                   if solve else "")
    return TaskRow(
        task_id=task.task_id,
        name=parsed.config.task.name if parsed.config.task else f"taskloom/{task.task_id}",
        instruction=parsed.instruction, scenario=task.scenario, skills=task.skills,
        categories=task.categories, difficulty=Difficulty.model_validate(task.difficulty),
        dockerfile=parsed.dockerfile or "",
        environment_files=_entries(files, "environment"),
        solution_files=_entries(files, "solution"), test_files=_entries(files, "tests"),
        solution_commands=complexity.commands, solution_tools=complexity.tools,
        verdicts=verdicts, fingerprint=task.fingerprint, digest=harbor_digest(files),
        provenance=Provenance(
            run_id=data.run.id, run_seed=data.run.seed, item=task.item, round=task.round,
            seed=int(metadata.get("seed", 0)), generator=str(metadata.get("generator", "")),
            backend=data.run.backend, taskloom_version=data.run.taskloom_version,
            created=data.run.created_iso),
        calibration=calibration, archive=archive,
        archive_sha256=hashlib.sha256(archive).hexdigest())


def _entries(files: tuple[TaskFile, ...], section: str) -> tuple[FileEntry, ...]:
    prefix = f"{section}/"
    return tuple(FileEntry(path=f.path[len(prefix):], content=f.content, mode=f.mode)
                 for f in files if f.path.startswith(prefix))


# -- the Arrow schema, derived from TaskRow ------------------------------------------------

HF_HINT = "install the Hugging Face extras: pip install 'taskloom[hf]' (datasets, pyarrow)"


def require_pyarrow():
    """The pyarrow module (with pyarrow.parquet loaded).

    Raises:
        MissingExtra: pyarrow is not installed; the message says how to install it.
    """
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise MissingExtra("pyarrow is not installed", fix=HF_HINT) from exc
    return pyarrow


def arrow_schema():
    """The Arrow schema of `TaskRow` (field descriptions kept as field metadata)."""
    pa = require_pyarrow()
    return pa.schema([_arrow_field(name, info.annotation, info.description)
                      for name, info in TaskRow.model_fields.items()])


def _arrow_field(name: str, annotation: Any, description: str | None):
    import pyarrow as pa

    kind, nullable = _arrow_type(annotation)
    return pa.field(name, kind, nullable=nullable,
                    metadata={"description": description or ""})


def _arrow_type(annotation: Any) -> tuple[Any, bool]:
    import pyarrow as pa

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return _arrow_type(inner)[0], True
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return pa.list_(_arrow_type(args[0])[0]), False
    if origin is Literal:
        return _arrow_type(type(args[0]))[0], False
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct([_arrow_field(n, i.annotation, i.description)
                          for n, i in annotation.model_fields.items()]), False
    simple = {str: pa.string(), bytes: pa.binary(), int: pa.int64(), float: pa.float64(),
              bool: pa.bool_()}
    if annotation in simple:
        return simple[annotation], False
    raise TypeError(f"no Arrow type for {annotation!r}; extend _arrow_type")
