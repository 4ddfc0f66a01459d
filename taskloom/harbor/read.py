"""Read Harbor task folders (schema 1.4, see `taskloom.harbor`): any task, ours or foreign.

`read_task_folder` raises `TaskFolderError` naming the file, the field and the fix.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

from pydantic import ValidationError

from taskloom.errors import TaskFolderError
from taskloom.models import Task, TaskConfig, TaskFile, TaskStep, sorted_files

SECTIONS = ("environment", "solution", "tests")
_TYPE_NAMES = frozenset({"float", "int", "str", "bool"})
# Editor and interpreter droppings that are never part of a task.
_IGNORED_NAMES = frozenset({"__pycache__", ".DS_Store", ".git", ".pytest_cache"})


def read_task_folder(path: Path | str) -> Task:
    """Read one Harbor task folder into a `Task`.

    Args:
        path: The task folder (the folder name is the task id).

    Raises:
        TaskFolderError: The folder is not a readable Harbor task; the message says which
            file and field are wrong and how to fix them.
    """
    root = Path(path)
    if not root.is_dir():
        raise TaskFolderError("is not a directory", path=root,
                              fix="pass the folder that holds task.toml")
    config = read_task_toml(root / "task.toml")
    # Harbor gives a multi-step task's agent each step's instruction, not the task's.
    instruction = (_read_instruction(root / "instruction.md")
                   if not config.steps or (root / "instruction.md").exists() else "")
    files = {section: _read_section(root, section) for section in SECTIONS}
    _require_environment(root, config, files["environment"])
    steps = tuple(_read_step(root, step.name, files["tests"]) for step in config.steps)
    if not steps and not any(f.path == "test.sh" for f in files["tests"]):
        raise TaskFolderError("missing tests/test.sh", path=root / "tests" / "test.sh",
                              fix="add tests/test.sh that writes /logs/verifier/reward.txt")
    return Task(name=root.resolve().name, config=config, instruction=instruction,
                environment=files["environment"], solution=files["solution"],
                tests=files["tests"], steps=steps)


def _read_step(root: Path, name: str, shared_tests: tuple[TaskFile, ...]) -> TaskStep:
    """steps/<name>/ of a multi-step task: its instruction, solution, tests and workdir."""
    folder = root / "steps" / name
    if not folder.is_dir():
        raise TaskFolderError(f"missing the folder of step {name!r}", path=folder,
                              fix=f"create steps/{name}/ with instruction.md (or remove the "
                                  "step from [[steps]] in task.toml)")
    step = TaskStep(name=name, instruction=_read_instruction(folder / "instruction.md"),
                    solution=_read_section(folder, "solution"),
                    tests=_read_section(folder, "tests"),
                    workdir=_read_section(folder, "workdir"))
    if not any(f.path == "test.sh" for f in (*step.tests, *shared_tests)):
        raise TaskFolderError(f"step {name!r} has no test script",
                              path=folder / "tests" / "test.sh",
                              fix=f"add steps/{name}/tests/test.sh, or tests/test.sh for "
                                  "every step")
    return step


def read_task_toml(path: Path) -> TaskConfig:
    """Parse and check one task.toml."""
    if not path.is_file():
        raise TaskFolderError("missing task.toml", path=path,
                              fix="create task.toml (schema_version = \"1.4\" plus [verifier] "
                                  "and [environment] tables)")
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TaskFolderError(f"is not UTF-8 text ({exc.reason} at byte {exc.start})",
                              path=path, fix="save task.toml as UTF-8") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TaskFolderError(f"is not valid TOML: {exc}", path=path,
                              fix="fix the TOML syntax at the position shown") from exc
    try:
        config = TaskConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        # A union's error names the member type it tried last (`min_reward.float`): not a key
        keys = [str(p) for p in first["loc"] if p not in _TYPE_NAMES and "[" not in str(p)]
        field = ".".join(keys) or None
        raise TaskFolderError(f"{first['msg']} (got {first.get('input')!r})", path=path,
                              field=field, fix=_fix_for(field)) from exc
    if config.environment.os != "linux":
        raise TaskFolderError("only Linux environments are supported", path=path,
                              field="environment.os", fix='set os = "linux" or remove the key')
    return config


def _fix_for(field: str | None) -> str:
    hints = {
        "task.name": 'set name = "org/task-name" under [task]',
        "verifier.timeout_sec": "use a positive number of seconds, e.g. timeout_sec = 120.0",
        "agent.timeout_sec": "use a positive number of seconds, e.g. timeout_sec = 600.0",
        "environment.memory_mb": "use a positive integer of MiB, e.g. memory_mb = 2048",
        "environment.cpus": "use a positive integer, e.g. cpus = 1",
    }
    if field and field.startswith("steps"):
        return ("give each [[steps]] a unique name = \"folder-name\" (letters, digits, "
                ". _ -) matching its folder steps/<name>/, and numbers for min_reward")
    return hints.get(field or "", "correct the value to the type Harbor's schema 1.4 expects")


def _read_instruction(path: Path) -> str:
    if not path.is_file():
        raise TaskFolderError("missing instruction.md", path=path,
                              fix="write what the agent must do into instruction.md")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFolderError(f"is not UTF-8 text ({exc.reason} at byte {exc.start})",
                              path=path, fix="save instruction.md as UTF-8") from exc
    if not text.strip():
        raise TaskFolderError("is empty", path=path,
                              fix="write what the agent must do into instruction.md")
    return text


def _read_section(root: Path, section: str) -> tuple[TaskFile, ...]:
    folder = root / section
    if not folder.exists():
        return ()
    if not folder.is_dir():
        raise TaskFolderError("must be a directory", path=folder,
                              fix=f"make {section}/ a folder of files")
    return read_files(folder)


def read_files(folder: Path) -> tuple[TaskFile, ...]:
    """Every file below `folder` (paths relative to it, bytes, mode), sorted by path.

    Editor and interpreter droppings are skipped.

    Raises:
        TaskFolderError: A symbolic link or special file, naming it.
    """
    files = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _IGNORED_NAMES)
        for name in filenames:
            if name in _IGNORED_NAMES or name.endswith(".pyc"):
                continue
            file_path = Path(dirpath) / name
            info = file_path.lstat()
            if stat.S_ISLNK(info.st_mode):
                raise TaskFolderError("symbolic links are not supported", path=file_path,
                                      fix="replace the link with a copy of the file")
            if not stat.S_ISREG(info.st_mode):
                raise TaskFolderError("is not a regular file", path=file_path,
                                      fix="remove it from the task folder")
            files.append(TaskFile(path=file_path.relative_to(folder).as_posix(),
                                  content=file_path.read_bytes(),
                                  mode=stat.S_IMODE(info.st_mode)))
    return sorted_files(files)


def _require_environment(root: Path, config: TaskConfig,
                         environment: tuple[TaskFile, ...]) -> None:
    names = {f.path for f in environment}
    if "Dockerfile" in names or config.environment.docker_image:
        return
    if names & {"docker-compose.yaml", "docker-compose.yml", "compose.yaml"}:
        raise TaskFolderError("docker-compose environments are not supported",
                              path=root / "environment",
                              fix="describe the environment with a single environment/Dockerfile")
    raise TaskFolderError("missing environment/Dockerfile", path=root / "environment" /
                          "Dockerfile", field="environment.docker_image",
                          fix="add environment/Dockerfile or set docker_image under "
                              "[environment] in task.toml")


def find_task_folders(paths: list[Path]) -> list[Path]:
    """Expand each path into task folders: a task folder itself, or a folder of them.

    Raises:
        TaskFolderError: A path does not exist or holds no task folder.
    """
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise TaskFolderError("does not exist", path=path, fix="check the path")
        if (path / "task.toml").exists() or not path.is_dir():
            found.append(path)
            continue
        children = sorted(p for p in path.iterdir() if _looks_like_task(p))
        if not children:
            raise TaskFolderError("holds no task folder (no task.toml here or one level down)",
                                  path=path, fix="pass a task folder or a folder of them")
        found.extend(children)
    return found


def _looks_like_task(path: Path) -> bool:
    """A folder that holds any part of a task (so a broken task is reported, not skipped)."""
    markers = ("task.toml", "instruction.md", "environment", "tests", "solution")
    return path.is_dir() and any((path / marker).exists() for marker in markers)
