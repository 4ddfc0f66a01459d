"""Live environments: a task's environment for someone attempting it, and its check.

Used by people and agents who attempt a task: start it, work in it, run the task's tests
against the current state of the environment. A live environment is a session
(`taskloom.sandbox.session`) on either runtime, with the limits, the missing network and
the cleanup of a validation sandbox. `check` puts tests/ in only for the check and removes
them afterwards, as Harbor's verifier does.

    with session(task, "bwrap") as live: ...   # a started session on either runtime
    check_in(live, task)                        # the tests against its current state
    attempt_in(live, task, act)                 # act(instruction), then the check: step by
                                                # step for a multi-step task, as Harbor does
    check_task(task, runtime="bwrap")           # a fresh environment: the untouched state
    check_task(task, container="NAME")          # the state someone left in a container
    open_shell(task)                            # `taskloom make --shell` (Docker)
"""

from __future__ import annotations

import contextlib
import math
import re
import subprocess
from collections.abc import Callable, Iterator

from pydantic import Field

from taskloom.config import ValidationConfig
from taskloom.errors import SandboxError, SandboxUnavailable
from taskloom.models import Frozen, Task, TaskFile, sorted_files
from taskloom.sandbox.containers import docker_client, engine_errors, reward_in_tar, tar_files
from taskloom.sandbox.driver import lowest
from taskloom.sandbox.environment import environment_spec
from taskloom.sandbox.runtime import Runtime, RuntimeName, open_runtime
from taskloom.sandbox.session import Completed, Session

FAILED = re.compile(r"^FAILED (?:\S+::)?(test_\w+)", re.MULTILINE)
CHORE_SEC = 60.0  # the check's own commands (clear, clean up): the sandbox may have slowed them


class LiveCheck(Frozen):
    """The reward of a live environment's current state, and the checks that failed."""

    reward: float | None = Field(description="Reward the tests wrote (the lowest named one); "
                                 "None when none could be read.")
    rewards: dict[str, float] | None = Field(default=None, description="Every named reward "
                                             "(a multi-step task: its steps' combined).")
    reward_error: str | None = Field(description="Why no reward could be read (None when "
                                     "one was).")
    failed: tuple[str, ...] = Field(description="Names of the failing pytest checks, in "
                                    "order, each once.")
    log: str = Field(description="Tail of the tests' output.")


@contextlib.contextmanager
def session(task: Task, runtime: RuntimeName | Runtime = "docker", *,
            name: str | None = None) -> Iterator[Session]:
    """A started session in `task`'s environment, closed (everything removed) on exit.

    Args:
        task: The task whose environment to set up (its Dockerfile, or its docker_image).
        runtime: "docker" (a real build) or "bwrap" (the Dockerfile emulated, no daemon),
            or an open runtime of either kind to make the session with (left open).
        name: The container's name (Docker only); Docker picks one when None.

    Raises:
        SandboxError: The environment does not build, or the session does not start.
        SandboxUnavailable: The runtime cannot make sandboxes here.
    """
    spec, _ = environment_spec(task, ValidationConfig())
    owned = isinstance(runtime, str)
    sandboxes = open_runtime(runtime) if owned else runtime
    try:
        if sandboxes.name == "bwrap":
            from taskloom.sandbox.bwrap_session import BwrapSession

            opened: Session = BwrapSession(sandboxes, spec)
        else:
            from taskloom.sandbox.docker_session import DockerSession

            opened = DockerSession(sandboxes, spec, name=name)
    except BaseException:
        if owned:
            sandboxes.close()
        raise
    try:
        with opened:
            yield opened
    finally:
        if owned:
            sandboxes.close()


def check_in(live: Session | ContainerSession, task: Task, *, step: int | None = None,
             timeout: float | None = None) -> LiveCheck:
    """Run the task's tests against the session's current state and read the reward.

    A multi-step task is checked with one step's tests (its tests/ over the task's, its
    verifier's user, variables and limit): `step`, or the last one when None.

    Raises:
        SandboxError: The session ended during the check.
    """
    tests, env, user, limit = _verifier(task, step)
    limit = timeout or limit
    live.run(["sh", "-c", "rm -rf /logs/verifier /tests && mkdir -p /logs/verifier && "
                          "chmod 777 /logs/verifier"], user="root", timeout=CHORE_SEC)
    live.put("/tests", tar_files(tests))
    try:
        done = live.run(["bash", "/tests/test.sh"], timeout=limit, env=env, user=user)
        output = (done.stdout + done.stderr).decode("utf-8", "replace")
        if done.timed_out:
            output += f"\n[taskloom: the tests were killed after {limit:g} s]"
        verifier = live.get("/logs/verifier")
        rewards, error = reward_in_tar(verifier.stdout) if verifier.exit_code == 0 else \
            (None, "tests/test.sh wrote no /logs/verifier directory")
    finally:
        live.run(["rm", "-rf", "/tests"], user="root", timeout=CHORE_SEC)
    return LiveCheck(reward=lowest(rewards), rewards=rewards, reward_error=error,
                     failed=tuple(dict.fromkeys(FAILED.findall(output))), log=output[-6000:])


def _verifier(task: Task, step: int | None) -> tuple[tuple[TaskFile, ...], dict[str, str],
                                                      str | None, float]:
    """(tests, variables, user, limit) of the task's verifier, or of one of its steps'."""
    verifier = task.config.verifier
    if not task.steps:
        return (task.tests, dict(verifier.env),
                None if verifier.user is None else str(verifier.user), verifier.timeout_sec)
    index = len(task.steps) - 1 if step is None else step
    files, settings = task.steps[index], task.config.steps[index]
    tests = {f.path: f for f in task.tests} | {f.path: f for f in files.tests}
    user = settings.verifier.user
    # Harbor's step verifier keeps its own limit (600 s unless set), never the task's.
    return (sorted_files(tests.values()), {**verifier.env, **settings.verifier.env},
            None if user is None else str(user), settings.verifier.timeout_sec)


def attempt_in(live: Session, task: Task, act: Callable[[str], None]) -> LiveCheck:
    """`act(instruction)` works in the session, then the tests score it, as Harbor's trial.

    A multi-step task runs step by step in the one session: the step's workdir/ copied into
    the working directory and its setup.sh run, `act` with the step's instruction, then the
    step's tests. A step that leaves no reward, or misses its min_reward, ends the attempt;
    the rewards are the steps' combined by the task's strategy (`mean` over the steps that
    left rewards, a missing name counting 0; or the `final` step's).

    Raises:
        SandboxError: The session failed.
    """
    if not task.steps:
        act(task.instruction)
        return check_in(live, task)
    workdir = live.spec.workdir or "/"
    checks: list[LiveCheck] = []
    for index, (files, settings) in enumerate(zip(task.steps, task.config.steps, strict=True)):
        if files.workdir:
            live.put(workdir, tar_files(files.workdir))
        if any(f.path == "setup.sh" for f in files.workdir):
            agent = settings.agent
            setup = live.run(["bash", f"{workdir.rstrip('/')}/setup.sh"], cwd=workdir,
                             user=None if agent.user is None else str(agent.user),
                             timeout=agent.timeout_sec or task.config.agent.timeout_sec
                             or ValidationConfig().default_solution_timeout_sec)
            if setup.exit_code != 0:
                log = (setup.stdout + setup.stderr).decode("utf-8", "replace")[-6000:]
                checks.append(LiveCheck(reward=None, reward_error=(
                    f"steps/{files.name}/workdir/setup.sh exited {setup.exit_code}"),
                    failed=(), log=log))
                break
        act(files.instruction)
        checks.append(check_in(live, task, step=index))
        rewards = checks[-1].rewards
        if rewards is None or any(rewards.get(name, -math.inf) < value
                                  for name, value in settings.thresholds.items()):
            break
    left = [c.rewards for c in checks if c.rewards is not None]
    if task.config.reward_strategy == "final":
        combined = checks[-1].rewards
    else:
        names = sorted({name for rewards in left for name in rewards})
        combined = {name: sum(r.get(name, 0.0) for r in left) / len(left)
                    for name in names} if left else None
    last = checks[-1]
    return LiveCheck(reward=lowest(combined), rewards=combined,
                     reward_error=None if combined is not None else
                     f"step {task.steps[len(checks) - 1].name}: {last.reward_error}",
                     failed=tuple(dict.fromkeys(n for c in checks for n in c.failed)),
                     log=last.log)


def shell(container: str, live: Session | None = None) -> int:
    """An interactive bash in the container (needs a terminal); returns its exit code.

    With the session that made it, the shell starts as its commands do: the environment's
    USER, in its WORKDIR.
    """
    where = []
    if live is not None:
        where = ["-u", live.spec.user or "root", "-w", live.spec.workdir or "/"]
    return subprocess.call(["docker", "exec", "-it", *where, container, "bash", "-l"])


def open_shell(task: Task, *, ready: Callable[[str], None] | None = None) -> int:
    """Build a fresh environment, open a shell in it, and remove it when the shell exits.

    Args:
        task: The task whose environment to build.
        ready: Called with the container's name once it runs, before the shell opens (to
            say how to check it from another terminal).

    Returns:
        The shell's exit code.
    """
    import uuid

    name = f"taskloom-{task.name[:40]}-{uuid.uuid4().hex[:6]}"
    with session(task, "docker", name=name) as live:
        if ready is not None:
            ready(name)
        return shell(name, live)


class ContainerSession:
    """A running container someone left (`make --shell`), driven as a session by `docker exec`.

    Only what `check_in` needs: `run` (with `timeout -s KILL` for the limit), `put`, `get`.
    """

    def __init__(self, container: str) -> None:
        """Find the container.

        Raises:
            SandboxUnavailable: No container has that name.
        """
        import docker.errors

        try:
            self.found = docker_client().containers.get(container)
        except docker.errors.NotFound as exc:
            raise SandboxUnavailable(f"no container named {container}",
                                     fix="pass the name `taskloom make --shell` printed, or "
                                         "`docker ps` to list them") from exc
        self.name = container

    def run(self, argv: list[str], *, timeout: float | None = None, user: str | None = None,
            env: dict[str, str] | None = None, cwd: str | None = None) -> Completed:
        """Run a command in the container (killed at `timeout`)."""
        limited = ["timeout", "-s", "KILL", f"{timeout:g}", *argv] if timeout else argv
        result = self._engine(lambda: self.found.exec_run(
            limited, user=user or "", environment=env, workdir=cwd, demux=True))
        stdout, stderr = result.output
        return Completed(exit_code=result.exit_code,
                         timed_out=bool(timeout) and result.exit_code == 137,
                         stdout=stdout or b"", stderr=stderr or b"")

    def put(self, directory: str, archive: bytes) -> Completed:
        """Unpack a tar archive into `directory` (made if missing)."""
        self.run(["mkdir", "-p", directory], user="root", timeout=CHORE_SEC)
        self._engine(lambda: self.found.put_archive(directory, archive))
        return Completed(exit_code=0, timed_out=False, stdout=b"", stderr=b"")

    def get(self, path: str) -> Completed:
        """A tar archive of `path` (exit code 1 when it does not exist)."""
        import docker.errors

        try:
            stream, _ = self.found.get_archive(path)
            data = b"".join(stream)
        except docker.errors.NotFound:
            return Completed(exit_code=1, timed_out=False, stdout=b"",
                             stderr=f"{path}: not found".encode())
        except engine_errors() as exc:
            raise self._failed(exc) from exc
        return Completed(exit_code=0, timed_out=False, stdout=data, stderr=b"")

    def _engine(self, call: Callable):
        """`call()`, an engine failure raised as a SandboxError."""
        try:
            return call()
        except engine_errors() as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: BaseException) -> SandboxError:
        return SandboxError(f"the Docker engine failed while checking {self.name}: {exc}")


def check_task(task: Task, container: str | None = None, *, runtime: RuntimeName = "docker",
               timeout: float | None = None) -> LiveCheck:
    """Run the task's tests in a live environment: a running container, or a fresh one.

    Args:
        task: The task whose tests to run.
        container: A running Docker container (from `make --shell`) to check as it is;
            None sets up a fresh environment on `runtime`, checks it and removes it.
        runtime: Where a fresh environment runs: "docker" or "bwrap".
        timeout: Seconds the tests may take; the task's verifier timeout when None.

    Raises:
        SandboxUnavailable: No container has that name, or the runtime is unusable here.
        SandboxError: The environment does not build, or the sandbox failed.
    """
    if container is not None:
        return check_in(ContainerSession(container), task, timeout=timeout)
    with session(task, runtime) as live:
        return check_in(live, task, timeout=timeout)
