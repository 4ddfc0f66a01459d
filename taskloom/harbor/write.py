"""Write Harbor task folders so that readers see them complete or not at all.

A folder is written as a hidden sibling `.NAME.partial-PID` and renamed into place when
the writer is done. A writer killed mid-way leaves only that sibling; the next writer of
the same folder removes it (whatever PID wrote it), so nothing half-written is left behind
after a resume. Task folders, exports and unpacked archives are all written this way.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import tomli_w

from taskloom.harbor.read import SECTIONS
from taskloom.models import Task, TaskConfig, TaskFile


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """Yield an empty staging folder that replaces `target` when the block ends.

    If the block raises, the staging folder is removed and `target` is left as it was.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{glob.escape(target.name)}.partial-*"):
        shutil.rmtree(stale, ignore_errors=True)  # left by a killed writer
    staging = target.with_name(f".{target.name}.partial-{os.getpid()}")
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


def write_files(files: tuple[TaskFile, ...], target: Path) -> Path:
    """Write files as the folder `target`, atomically (see `staged_folder`)."""
    with staged_folder(target) as staging:
        for entry in files:
            path = staging / entry.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(entry.content)
            path.chmod(entry.mode)
    return target


def task_toml_text(config: TaskConfig) -> str:
    """The canonical task.toml text for a config."""
    data = config.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    return tomli_w.dumps({"schema_version": config.schema_version, **data})


def write_task_folder(task: Task, path: Path | str) -> Path:
    """Write `task` as a Harbor task folder at `path`, replacing what was there.

    Returns:
        The folder written.
    """
    files = [TaskFile(path="task.toml", content=task_toml_text(task.config).encode("utf-8"))]
    if task.instruction or not task.steps:
        files.append(TaskFile(path="instruction.md", content=task.instruction.encode("utf-8")))
    for section in SECTIONS:
        files += _under(section, getattr(task, section))
    for step in task.steps:
        folder = f"steps/{step.name}"
        files.append(TaskFile(path=f"{folder}/instruction.md",
                              content=step.instruction.encode("utf-8")))
        for section in ("solution", "tests", "workdir"):
            files += _under(f"{folder}/{section}", getattr(step, section))
    return write_files(tuple(files), Path(path))


def _under(folder: str, files: tuple[TaskFile, ...]) -> list[TaskFile]:
    return [entry.model_copy(update={"path": f"{folder}/{entry.path}"}) for entry in files]
