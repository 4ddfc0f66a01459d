"""cgroup v1 limits for bwrap sandboxes: memory (no swap), process count, CPU quota.

One cgroup per sandbox in each controller's hierarchy, at
`/sys/fs/cgroup/<controller>/taskloom/<owner>/<sandbox>`, so that a later run can find and
remove what a killed process left (see `remove_tree`). The sandbox's first process joins
the cgroups before it execs bubblewrap, so everything the sandbox starts is inside them,
and `kill()` can end the whole tree without knowing its pids.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from pathlib import Path

from taskloom.errors import SandboxError

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
PARENT = "taskloom"
CPU_PERIOD_US = 100_000


def missing_controllers(root: Path = CGROUP_ROOT) -> list[str]:
    """Controllers without a writable cgroup v1 hierarchy here (empty when all are usable)."""
    return [name for name in CONTROLLERS
            if not (root / name / "cgroup.procs").exists() or not os.access(root / name,
                                                                            os.W_OK)]


class Cgroup:
    """One sandbox's cgroup in the memory, pids and cpu hierarchies."""

    def __init__(self, relative: str, root: Path = CGROUP_ROOT) -> None:
        self.relative = relative
        self.paths = [root / name / PARENT / relative for name in CONTROLLERS]

    def create(self, *, memory_bytes: int, pids: int, cpus: float) -> None:
        """Make the cgroups and set their limits.

        Raises:
            SandboxError: The kernel refused (not root, controller missing).
        """
        memory, pid, cpu = self.paths
        try:
            for path in self.paths:
                path.mkdir(parents=True, exist_ok=True)
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            swap = memory / "memory.memsw.limit_in_bytes"
            if swap.exists():  # only with swap accounting; limit = memory means no swap
                swap.write_text(str(memory_bytes))
            (pid / "pids.max").write_text(str(pids))
            (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(max(int(cpus * CPU_PERIOD_US), 1000)))
        except OSError as exc:
            self.remove()
            raise SandboxError(f"cannot create cgroup {self.relative}: {exc}",
                               fix="the bwrap runtime needs root and cgroup v1 memory, pids "
                                   "and cpu controllers; see `taskloom doctor`") from exc

    @property
    def procs_files(self) -> list[Path]:
        """The `cgroup.procs` files a process writes its pid to, to join every cgroup."""
        return [path / "cgroup.procs" for path in self.paths]

    def pids(self) -> list[int]:
        """Processes currently in the sandbox (from the pids hierarchy)."""
        return _pids(self.paths[1])

    def kill(self) -> None:
        """SIGKILL every process in the cgroups until none is left (forks included)."""
        _kill_all(self.paths)

    def oom_killed(self) -> bool:
        """True when the kernel killed a process here for exceeding the memory limit."""
        with contextlib.suppress(OSError, ValueError):
            for line in (self.paths[0] / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value) > 0
        return False

    def remove(self) -> None:
        """Kill what is left and delete the cgroups."""
        _kill_all(self.paths)
        for path in self.paths:
            _rmdir(path)


def remove_tree(relative: str, root: Path = CGROUP_ROOT) -> int:
    """Kill every process in, then delete, `taskloom/<relative>` and all cgroups below it.

    Returns:
        How many cgroup directories were removed.
    """
    removed = 0
    for name in CONTROLLERS:
        top = root / name / PARENT / relative
        if not top.is_dir():
            continue
        below = sorted((p for p in top.rglob("*") if p.is_dir()),
                       key=lambda p: len(p.parts), reverse=True)
        directories = [*below, top]
        _kill_all(directories)
        for path in directories:
            removed += _rmdir(path)
    return removed


def owners(root: Path = CGROUP_ROOT) -> set[str]:
    """Names of the per-process cgroup folders below `taskloom/`, in every hierarchy."""
    found: set[str] = set()
    for name in CONTROLLERS:
        with contextlib.suppress(OSError):
            found.update(p.name for p in (root / name / PARENT).iterdir() if p.is_dir())
    return found


def _pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_all(paths: list[Path], *, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = {pid for path in paths for pid in _pids(path)}
        if not alive:
            return
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def _rmdir(path: Path) -> int:
    for _ in range(100):
        try:
            path.rmdir()
            return 1
        except FileNotFoundError:
            return 0
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return 0
            time.sleep(0.01)  # exiting processes still being torn down
    return 0
