"""Live sessions: one environment, set up once, that runs commands until `close()`.

What an agent or a person attempting a task works in, on either runtime: `start`, then any
number of `run` calls (commands with a time limit, output capped), `put` and `get` (tar
archives in and out), then `close`, which kills everything and removes what the session
made. The Harbor plugin drives one per trial; `make --shell` and `check` work in one.

Both runtimes share one protocol: the sandbox's PID 1 is `session_server.py`, which runs
each command in its own thread (so what a command leaves in the background lives on until
`close`, as in a container), enforces the time limits and output caps from inside, and moves
files itself, never with the sandbox's own `tar`. A session talks to it over the pipes of
the process that runs the sandbox: bubblewrap (`bwrap_session`) or `docker start --attach`
(`docker_session`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import subprocess
import threading
from concurrent.futures import Future
from pathlib import Path

from pydantic import Field

from taskloom.errors import SandboxError
from taskloom.models import Frozen
from taskloom.sandbox.trial import EnvironmentSpec

SERVER_SOURCE = Path(__file__).with_name("session_server.py")
# Where the server lives inside the sandbox (a folder only root may read).
SERVER_PATH = "/.taskloom/session.py"
SERVER_COMMAND = ["python3", "-S", SERVER_PATH]
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# How long the server may take to say it is ready, to answer beyond a command's own limit,
# and to move files, before the session counts as broken (a command without a limit is
# waited for as long as it runs).
READY_SEC = 120.0
ANSWER_MARGIN_SEC = 60.0
TRANSFER_SEC = 600.0


class Completed(Frozen):
    """What one command in a session did."""

    exit_code: int = Field(description="Exit status (-9 when killed at its deadline).")
    timed_out: bool = Field(description="True when its wall-clock limit killed it.")
    stdout: bytes = Field(description="What it wrote to stdout (beyond 16 MiB, the first "
                          "and last 8 MiB with a marker between).")
    stderr: bytes = Field(description="What it wrote to stderr (kept as stdout is).")


class Session:
    """A started sandbox whose PID 1 is the session server; subclasses make the sandbox.

    A subclass implements `_prepare` (set the environment up and place the server at
    `SERVER_PATH`), `_launch` (start the sandbox with `SERVER_COMMAND` as PID 1, its stdin,
    stdout and stderr piped) and `_teardown` (remove what `_prepare` made; it may run after a
    failed or partial `_prepare`).
    """

    runtime_name = ""

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.spec = spec
        self._process: subprocess.Popen | None = None
        self._pending: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._closed = False
        self.server_log = ""

    def _prepare(self) -> None:
        raise NotImplementedError

    def _launch(self) -> subprocess.Popen:
        raise NotImplementedError

    def _teardown(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Set the environment up, then start the session.

        Raises:
            SandboxError: Setup failed (the message holds its log), or the session's server
                did not come up protected.
            SandboxUnavailable: The runtime cannot make sandboxes here.
        """
        try:
            self._prepare()
            # A thread that lives as long as the session launches it, then reads the
            # answers (bubblewrap dies with the *thread* that started it).
            launched: Future = Future()
            self._reader = threading.Thread(target=self._serve, args=(launched,), daemon=True,
                                            name=f"{self.runtime_name}-session")
            self._reader.start()
            try:
                ready = launched.result(timeout=READY_SEC)
                protected = bool(ready) and json.loads(ready).get("protected") is True
            except (TimeoutError, ValueError, AttributeError):
                ready, protected = "(no ready line)", False
            if not protected:
                raise SandboxError("the session server did not start protected: "
                                   f"{ready!r} {self.server_log!r}",
                                   fix="the environment needs python3 (with ctypes) on its "
                                       "PATH for a live session; check `taskloom doctor`")
        except BaseException:
            self.close()
            raise

    def run(self, argv: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None,
            user: str | int | None = None, timeout: float | None = None,
            stdin: bytes = b"") -> Completed:
        """Run `argv` in the session and wait for it.

        `cwd` defaults to the environment's working directory, `user` to its USER, and the
        environment's ENV (and PATH, HOME) come first, then `env`. At `timeout` seconds the
        command and everything it started are killed (`timed_out`, exit code -9); the session
        lives on.

        Raises:
            SandboxError: The session is closed or its server is gone.
        """
        return self._ask({"argv": argv, "cwd": cwd or self.spec.workdir or "/",
                          "env": {"PATH": DEFAULT_PATH, **self.spec.env, **(env or {})},
                          "user": self.spec.user if user is None else str(user),
                          "timeout": timeout, "stdin": base64.b64encode(stdin).decode()},
                         wait=None if timeout is None else timeout + ANSWER_MARGIN_SEC)

    def put(self, directory: str, archive: bytes) -> Completed:
        """Unpack a tar `archive` into `directory` (made first), as root.

        The session's server does it itself, never the sandbox's own `tar`, which whatever
        ran as root inside may have replaced (a container engine copies from outside).
        """
        return self._ask({"op": "put", "dir": directory,
                          "tar": base64.b64encode(archive).decode()}, wait=TRANSFER_SEC)

    def get(self, path: str) -> Completed:
        """A tar archive of `path` in `stdout`, made by the server as `put` unpacks.

        A folder's entries, or the file, are at the archive's top.
        """
        return self._ask({"op": "get", "path": path}, wait=TRANSFER_SEC)

    def close(self) -> None:
        """Kill everything in the session, then remove what it made. Safe to call twice."""
        with self._lock:
            process, self._process = self._process, None
            already, self._closed = self._closed, True
        if process is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()  # the server kills everything and exits
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        if self._reader is not None:
            self._reader.join(timeout=5)
        self._fail_pending()
        if not already:
            self._teardown()

    def __enter__(self) -> Session:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the channel ----------------------------------------------------------------------

    def _ask(self, request: dict, wait: float | None) -> Completed:
        """Send one request to the server and wait for its answer.

        Raises:
            SandboxError: The session is closed, its server is gone, or it did not answer
                within `wait` seconds (None: no limit).
        """
        request_id = secrets.token_hex(16)
        future: Future = Future()
        line = (json.dumps({"id": request_id, **request}) + "\n").encode("utf-8")
        with self._lock:
            process = self._process
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
        try:
            answer = future.result(timeout=wait)
        except TimeoutError:
            with self._lock:
                self._pending.pop(request_id, None)
            raise SandboxError(f"the session's server did not answer in {wait:g} s",
                               fix="start a new session") from None
        if answer is None:
            raise SandboxError("the session ended while the command ran"
                               + (f": {self.server_log[-1000:]}" if self.server_log else ""),
                               fix="start a new session")
        return Completed(exit_code=answer["exit_code"], timed_out=answer["timed_out"],
                         stdout=base64.b64decode(answer["stdout"]),
                         stderr=base64.b64decode(answer["stderr"]))

    def _serve(self, launched: Future) -> None:
        """Start the server, say so, then hand every answer to the command waiting for it."""
        try:
            process = self._launch()
            # What the server prints on stderr (a traceback) must never fill the pipe.
            threading.Thread(target=self._drain, args=(process.stderr,), daemon=True,
                             name=f"{self.runtime_name}-session-stderr").start()
            with self._lock:
                self._process = process
            launched.set_result(process.stdout.readline())
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
