"""A live session in a bubblewrap sandbox (see `session` for what a session does).

The sandbox is the bwrap runtime's (`bwrap_runtime`): the environment's Dockerfile is
emulated once into a layer by the trial driver, and the session is a new overlay on that
layer with the same namespaces (no network), capabilities, seccomp filter, cgroup limits
and cleanup as a validation sandbox.
"""

from __future__ import annotations

import itertools
import subprocess

from taskloom.errors import SandboxError
from taskloom.sandbox.bwrap_runtime import BwrapRuntime, Sandbox, runnable_environment
from taskloom.sandbox.session import SERVER_COMMAND, SERVER_SOURCE, Session
from taskloom.sandbox.trial import EnvironmentSpec, TrialPlan

_SESSIONS = itertools.count()


class BwrapSession(Session):
    """One bubblewrap sandbox, set up once, that runs commands until `close()`."""

    runtime_name = "bwrap"

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
        # The image's ENV under the task's, as a container gets it: commands run by name
        # (Harbor's `bash -c`) are found on the image's PATH, as in Docker.
        super().__init__(runnable.model_copy(update={"env": {**runtime.rootfs.env,
                                                             **runnable.env}}))
        self.runtime = runtime
        self.directory = runtime.home / f"session-{next(_SESSIONS)}"
        self._sandbox: Sandbox | None = None

    def _prepare(self) -> None:
        """Emulate the Dockerfile into a layer, then mount the session's overlay on it."""
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
        private = sandbox.root / ".taskloom"
        private.mkdir(mode=0o700, exist_ok=True)
        (private / "session.py").write_bytes(SERVER_SOURCE.read_bytes())

    def _launch(self) -> subprocess.Popen:
        return self._sandbox.launch(SERVER_COMMAND, talk=True)

    def _teardown(self) -> None:
        """Unmount and delete the session's folders and cgroups."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.__exit__(None, None, None)
        self.runtime.discard(self.directory)
