"""A long-lived bubblewrap sandbox: set up once, then commands and file transfers.

What the Harbor environment plugin (`taskloom.sandbox.harbor_plugin`) drives, as Harbor's
docker environment drives a container: `start`, then any number of `run` calls (an agent's
commands, the oracle's solve.sh, the verifier's test.sh, tar streams in and out), then
`close`. The sandbox is the bwrap runtime's (`bwrap_runtime`): the environment's Dockerfile
is emulated once into a layer by the trial driver, and the session is a new overlay on that
layer with the same namespaces (no network), capabilities, seccomp filter, cgroup limits
and cleanup as a validation sandbox. Its PID 1 is `session_server.py`, which runs each
command in its own thread, so processes a command leaves in the background live on until
`close`, as in a container.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import secrets
import subprocess
import threading
from concurrent.futures import Future
from pathlib import Path

from pydantic import Field

from taskloom.errors import SandboxError
from taskloom.models import Frozen
from taskloom.sandbox.bwrap_runtime import BwrapRuntime, Sandbox, runnable_environment
from taskloom.sandbox.trial import EnvironmentSpec, TrialPlan

SERVER_SOURCE = Path(__file__).with_name("session_server.py")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_SESSIONS = itertools.count()


class Completed(Frozen):
    """What one command in a session did."""

    exit_code: int = Field(description="Exit status (-9 when killed at its deadline).")
    timed_out: bool = Field(description="True when its wall-clock limit killed it.")
    stdout: bytes = Field(description="What it wrote to stdout (beyond 16 MiB, the first "
                          "and last 8 MiB with a marker between).")
    stderr: bytes = Field(description="What it wrote to stderr (kept as stdout is).")


class BwrapSession:
    """One environment, set up once, that runs commands until `close()`."""

    def __init__(self, runtime: BwrapRuntime, spec: EnvironmentSpec) -> None:
        """Prepare (nothing runs until `start`).

        Raises:
            SandboxError: The environment cannot be made without Docker (another FROM, a
                multi-stage build, a prebuilt image); the message says why.
        """
        runnable, _ = runnable_environment(spec)
        if isinstance(runnable, str):
            raise SandboxError(f"the bwrap sandbox cannot make this environment: {runnable}",
                               fix="run the task with Harbor's docker environment")
        self.runtime = runtime
        self.spec = runnable
        self.directory = runtime.home / f"session-{next(_SESSIONS)}"
        self._sandbox: Sandbox | None = None
        self._pending: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self.server_log = ""

    def start(self) -> None:
        """Set the environment up (the emulated Dockerfile), then start the session.

        Raises:
            SandboxError: Setup failed (the message holds its log), or the session's server
                did not come up protected.
        """
        self.directory.mkdir()
        layer = self.directory / "setup"
        plan = TrialPlan(environment=self.spec, tests=(), phases=(), solution_timeout=1.0,
                         tests_timeout=1.0)
        report = self.runtime.set_up_layer(plan, self.spec, layer, scan_leaks=False)
        if not report.setup.ok:
            raise SandboxError(f"the environment's setup failed:\n{report.setup.log[-3000:]}",
                               fix="fix the Dockerfile; `taskloom validate TASK --runtime "
                                   "bwrap` shows the same setup")
        sandbox = Sandbox(self.runtime, self.directory / "session",
                           [layer / "upper", self.runtime.rootfs.path], self.spec,
                           keep_upper=False)
        sandbox.__enter__()
        self._sandbox = sandbox
        try:
            private = sandbox.root / ".taskloom"
            private.mkdir(mode=0o700, exist_ok=True)
            (private / "session.py").write_bytes(SERVER_SOURCE.read_bytes())
            # bubblewrap dies with the *thread* that started it (its parent-death signal
            # follows the thread), so a thread that lives as long as the session starts it,
            # then reads the answers.
            launched: Future = Future()
            self._reader = threading.Thread(target=self._serve, args=(sandbox, launched),
                                            daemon=True, name="bwrap-session")
            self._reader.start()
            _, ready = launched.result()
            if not ready or not json.loads(ready).get("protected"):
                raise SandboxError("the session server did not start protected: "
                                   f"{ready!r} {self.server_log!r}",
                                   fix="the root filesystem needs python3 with ctypes; "
                                       "check `taskloom doctor`")
        except BaseException:
            self.close()
            raise

    def run(self, argv: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None,
            user: str | int | None = None, timeout: float | None = None,
            stdin: bytes = b"") -> Completed:
        """Run `argv` in the session and wait for it.

        `cwd` defaults to the environment's working directory, `user` to its USER, and the
        environment's ENV (and PATH, HOME) come first, then `env`.

        Raises:
            SandboxError: The session is closed or its server is gone.
        """
        return self._ask({"argv": argv, "cwd": cwd or self.spec.workdir or "/",
                          "env": {"PATH": DEFAULT_PATH, **self.spec.env, **(env or {})},
                          "user": self.spec.user if user is None else str(user),
                          "timeout": timeout, "stdin": base64.b64encode(stdin).decode()})

    def put(self, directory: str, archive: bytes) -> Completed:
        """Unpack a tar `archive` into `directory` (made first), as root.

        The session's server does it itself, never the sandbox's own `tar`, which whatever
        ran as root inside may have replaced (a container engine copies from outside).
        """
        return self._ask({"op": "put", "dir": directory,
                          "tar": base64.b64encode(archive).decode()})

    def get(self, path: str) -> Completed:
        """A tar archive of `path` in `stdout`, made by the server as `put` unpacks.

        A folder's entries, or the file, are at the archive's top.
        """
        return self._ask({"op": "get", "path": path})

    def _ask(self, request: dict) -> Completed:
        """Send one request to the server and wait for its answer."""
        request_id = secrets.token_hex(16)
        future: Future = Future()
        line = (json.dumps({"id": request_id, **request}) + "\n").encode("utf-8")
        with self._lock:
            process = self._sandbox.process if self._sandbox else None
            if process is None or process.poll() is not None or self._reader is None:
                raise SandboxError("the session is closed", fix="start a new session")
            self._pending[request_id] = future
            try:
                process.stdin.write(line)
                process.stdin.flush()
            except OSError as exc:
                self._pending.pop(request_id, None)
                raise SandboxError(f"the session's server is gone: {exc}",
                                   fix="start a new session") from exc
        answer = future.result()
        if answer is None:
            raise SandboxError("the session ended while the command ran"
                               + (f": {self.server_log[-1000:]}" if self.server_log else ""),
                               fix="start a new session")
        return Completed(exit_code=answer["exit_code"], timed_out=answer["timed_out"],
                         stdout=base64.b64decode(answer["stdout"]),
                         stderr=base64.b64decode(answer["stderr"]))

    def close(self) -> None:
        """Kill everything in the session, then unmount and delete its folders."""
        with self._lock:
            sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            process = sandbox.process
            if process is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()  # the server kills everything and exits
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
            if self._reader is not None:
                self._reader.join(timeout=5)
            sandbox.__exit__(None, None, None)
        self._fail_pending()
        self.runtime.discard(self.directory)

    def _serve(self, sandbox: Sandbox, launched: Future) -> None:
        """Start the server, say so, then hand every answer to the command waiting for it."""
        try:
            process = sandbox.launch(["python3", "-S", "/.taskloom/session.py"], talk=True)
            # What the server prints on stderr (a traceback) must never fill the pipe.
            threading.Thread(target=self._drain, args=(process.stderr,), daemon=True,
                             name="bwrap-session-stderr").start()
            launched.set_result((process, process.stdout.readline()))
        except BaseException as exc:  # handed to start()
            launched.set_exception(exc)
            return
        with contextlib.suppress(OSError, ValueError):  # ValueError: closed under us
            for line in process.stdout:
                answer = json.loads(line)
                with self._lock:
                    future = self._pending.pop(answer.get("id"), None)
                if future is not None:
                    future.set_result(answer)
        self._fail_pending()

    def _drain(self, stream) -> None:
        """Keep the tail of the server's stderr (shown when the session dies)."""
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                self.server_log = (self.server_log + line.decode("utf-8", "replace"))[-4000:]

    def _fail_pending(self) -> None:
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for future in pending:
            if not future.done():
                future.set_result(None)
