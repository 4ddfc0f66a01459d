"""A Harbor environment that runs trials in taskloom's bubblewrap sandboxes: no daemon.

    harbor run -p TASKS -a oracle -e taskloom.sandbox.harbor_plugin:BwrapEnvironment

Harbor imports this module in its own interpreter (Python >= 3.12), so taskloom must be
installed there too (`pip install /path/to/taskloom` with Harbor's python, or this
checkout on its PYTHONPATH); it needs root, bubblewrap and the exported root filesystem, as
`--runtime bwrap` does (`taskloom doctor` says what is missing). Every trial's agent,
oracle, nop and verifier run in one `BwrapSession` per environment: the Dockerfile is
emulated on the taskloom base image (a Dockerfile that needs a real build is refused with
the reason), there is never a network (a task that asks for one is refused: Harbor's
contract is to enforce the policy or reject the task), and CPU, memory and process limits
and cleanup are those of validation. A separate verifier gets its own session, as Harbor
gives it its own container. A task that names a `docker_image` beside its Dockerfile (as
`taskloom export --images` writes them, the image built from that Dockerfile) runs the
Dockerfile: there are no images without Docker.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import io
import os
import tarfile
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult, transfer_tar_filter
from harbor.environments.capabilities import (
    EnvironmentCapabilities,
    EnvironmentResourceCapabilities,
)
from harbor.models.task.config import NetworkMode

from taskloom.errors import TaskloomError
from taskloom.harbor import read_files
from taskloom.sandbox.bwrap_runtime import BwrapRuntime
from taskloom.sandbox.bwrap_session import BwrapSession
from taskloom.sandbox.trial import EnvironmentSpec

TYPE = "taskloom-bwrap"
DEFAULT_MEMORY_MB = 2048
_runtime: BwrapRuntime | None = None
_runtime_lock = threading.Lock()


async def _in_thread(function, *args, **kwargs):
    """Run a blocking session call off the event loop, in a daemon thread of its own.

    A command may run as long as an agent's turn: in Harbor's default pool (a few threads
    on a small machine) every other trial's calls would wait behind it, and a pool's
    threads are joined at exit before the runtime that would end their commands is closed.
    """
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(outcome, failed: bool) -> None:
        if not future.done():
            (future.set_exception if failed else future.set_result)(outcome)

    def work() -> None:
        try:
            outcome, failed = function(*args, **kwargs), False
        except BaseException as exc:  # handed to the awaiting coroutine
            outcome, failed = exc, True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(settle, outcome, failed)

    threading.Thread(target=work, daemon=True, name="taskloom-bwrap-call").start()
    return await future


def shared_runtime() -> BwrapRuntime:
    """The process's one bwrap runtime (made on first use, closed at exit)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = BwrapRuntime()
            atexit.register(_runtime.close)
        return _runtime


class BwrapEnvironment(BaseEnvironment):
    """Harbor's environment contract on a `BwrapSession`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._session: BwrapSession | None = None

    @staticmethod
    def type() -> str:
        """The environment type Harbor records."""
        return TYPE

    @classmethod
    def resource_capabilities(cls) -> EnvironmentResourceCapabilities:
        """CPU and memory are hard limits (a cgroup per session)."""
        return EnvironmentResourceCapabilities(cpu_limit=True, memory_limit=True)

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        """No network is the only network there is."""
        return EnvironmentCapabilities(disable_internet=True)

    def _validate_definition(self) -> None:
        if not (self.environment_dir / "Dockerfile").is_file():
            raise FileNotFoundError(
                f"{self.environment_dir / 'Dockerfile'} not found: the taskloom bwrap "
                "environment emulates a task's Dockerfile (a prebuilt docker_image or a "
                "compose file needs Harbor's docker environment)")

    def _spec(self) -> EnvironmentSpec:
        """The environment to set up: the Dockerfile, its context and the task's limits."""
        config = self.task_env_config
        return EnvironmentSpec(
            image="", build=True, context=read_files(self.environment_dir),
            workdir=config.workdir, env=self._startup_env(),
            build_timeout_sec=config.build_timeout_sec,
            cpus=float(min(self._effective_cpus or 1, os.cpu_count() or 1)),
            memory_mb=self._effective_memory_mb or DEFAULT_MEMORY_MB)

    async def start(self, force_build: bool) -> None:
        """Set the environment up and start its session.

        `force_build` changes nothing: the Dockerfile is emulated afresh every time.
        """
        if self.network_policy.network_mode != NetworkMode.NO_NETWORK:
            raise RuntimeError(
                f"task {self.environment_name} asks for network_mode "
                f"{self.network_policy.network_mode.value!r}; taskloom's bwrap sandboxes have "
                "no network. Declare network_mode = \"no-network\" in task.toml [environment] "
                "if the task needs none, or run it with Harbor's docker environment")
        try:
            session = BwrapSession(shared_runtime(), self._spec())
            await _in_thread(session.start)
        except TaskloomError as exc:
            raise RuntimeError(f"{exc} (fix: {exc.fix})" if exc.fix else str(exc)) from exc
        self._session = session
        await self.ensure_dirs(self._mount_targets(writable_only=True))

    async def stop(self, delete: bool) -> None:
        """Kill everything in the session and delete its files (always: nothing is kept)."""
        session, self._session = self._session, None
        if session is not None:
            await _in_thread(session.close)

    async def exec(self, command: str, cwd: str | None = None,
                   env: dict[str, str] | None = None, timeout_sec: int | None = None,
                   user: str | int | None = None) -> ExecResult:
        """Run `command` with bash in the session; a timeout raises, as Harbor's docker does."""
        if self._session is None:
            raise RuntimeError(f"environment {self.session_id} is not started")
        done = await _in_thread(
            self._session.run, ["bash", "-c", command], cwd=cwd,
            env=self._merge_env(env), user=self._resolve_user(user),
            timeout=float(timeout_sec) if timeout_sec else None)
        if done.timed_out:
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        return ExecResult(stdout=done.stdout.decode("utf-8", "replace"),
                          stderr=done.stderr.decode("utf-8", "replace"),
                          return_code=done.exit_code)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        """Copy a local file to `target_path` in the environment."""
        target = PurePosixPath(target_path)
        await self._put(str(target.parent), [(Path(source_path), target.name)])

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        """Copy a local folder's contents into `target_dir` in the environment."""
        source = Path(source_dir)
        await self._put(target_dir, [(child, child.name) for child in sorted(source.iterdir())])

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        """Copy a file of the environment to `target_path` here."""
        source, target = PurePosixPath(source_path), Path(target_path)
        await self._get(source_path, target.parent, f"file {source_path}")
        extracted = target.parent / source.name
        if extracted != target:
            extracted.replace(target)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        """Copy a folder of the environment into `target_dir` here."""
        await self._get(source_dir, Path(target_dir), f"directory {source_dir}")

    async def _put(self, target_dir: str, entries: list[tuple[Path, str]]) -> None:
        """Unpack local files into `target_dir` inside the environment."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for path, name in entries:
                archive.add(str(path), arcname=name)
        done = await _in_thread(self._session.put, target_dir, buffer.getvalue())
        if done.exit_code != 0:
            raise RuntimeError(f"cannot upload to {target_dir} in {self.session_id} (exit "
                               f"{done.exit_code}): {done.stderr.decode('utf-8', 'replace')}")

    async def _get(self, source: str, target: Path, what: str) -> None:
        """Pack `source` inside the environment and unpack it under `target` here."""
        done = await _in_thread(self._session.get, source)
        if done.exit_code != 0:
            raise RuntimeError(f"cannot download {what} from {self.session_id} (exit "
                               f"{done.exit_code}): {done.stderr.decode('utf-8', 'replace')}")
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(done.stdout), mode="r") as archive:
            archive.extractall(path=str(target), filter=transfer_tar_filter)
