"""Live environments: build a task's environment, open a shell in it, check its state.

Used by people and agents who attempt a task: start it, work in it, run the task's tests
against the current state of the running environment.

A live environment is a real `docker build` of the task's environment/ and a container
made by the same factory as the Docker runtime's (`containers.create_container`: the
sandbox policy's limits, no network, the same capabilities) that stays up while someone
works in it. It is not labelled as a sandbox: a later validation run must not remove it
while someone works in it; `stop` does. `check` copies tests/ in only for the check and
removes them afterwards, as Harbor's verifier does.

    check_task(task)                    # a fresh environment: the untouched state
    check_task(task, container="NAME")  # the state someone left in a running one
    open_shell(task)                    # `taskloom make --shell`
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import uuid
from collections.abc import Callable

from pydantic import Field

from taskloom.errors import SandboxError, SandboxUnavailable
from taskloom.models import Frozen, Task
from taskloom.sandbox.containers import (
    create_container,
    docker_client,
    engine_errors,
    read_reward,
    tar_files,
)
from taskloom.sandbox.driver import lowest
from taskloom.sandbox.policy import LABEL

FAILED = re.compile(r"^FAILED (?:\S+::)?(test_\w+)", re.MULTILINE)
LIVE_LABEL = "taskloom.live"
# On the container: the image built for it, which `stop` removes with it.
_IMAGE_LABEL = LABEL + ".live-image"
_DEFAULT_MEMORY_MB = 2048


class LiveCheck(Frozen):
    """The reward of a live environment's current state, and the checks that failed."""

    reward: float | None = Field(description="Reward the tests wrote; None when none could "
                                 "be read.")
    reward_error: str | None = Field(description="Why no reward could be read (None when "
                                     "one was).")
    failed: tuple[str, ...] = Field(description="Names of the failing pytest checks, in "
                                    "order, each once.")
    log: str = Field(description="Tail of the tests' output.")


def start(task: Task, *, name: str | None = None) -> str:
    """Build the task's environment and start a container that waits for a person.

    Returns:
        The container's name.

    Raises:
        SandboxError: The environment does not build, or the container does not start.
        SandboxUnavailable: The engine cannot build at all.
    """
    import docker.errors

    client = docker_client()
    image = f"taskloom-live:{uuid.uuid4().hex[:12]}"
    try:
        client.images.build(fileobj=io.BytesIO(tar_files(task.environment)),
                            custom_context=True, tag=image, rm=True, forcerm=True,
                            network_mode="none", labels={LIVE_LABEL: task.name})
    except docker.errors.BuildError as exc:
        log = "".join(str(chunk.get("stream", "")) for chunk in exc.build_log)[-3000:]
        raise SandboxError(f"the environment of {task.name} does not build:\n{log}") from exc
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"cannot build the environment: {exc}",
                                 fix="check `taskloom doctor`") from exc
    name = name or f"taskloom-{task.name[:40]}-{uuid.uuid4().hex[:6]}"
    try:
        container = create_container(
            client, image, ["sleep", "infinity"],
            memory_mb=task.config.environment.memory_mb or _DEFAULT_MEMORY_MB,
            cpus=None, network=False, labels={LIVE_LABEL: task.name, _IMAGE_LABEL: image},
            name=name)
    except BaseException:
        with contextlib.suppress(docker.errors.DockerException):
            client.images.remove(image, force=True)
        raise
    try:
        client.api.start(container)
    except docker.errors.DockerException as exc:
        stop(name)
        raise SandboxError(f"the environment of {task.name} does not start: {exc}") from exc
    return name


def shell(container: str) -> int:
    """An interactive bash in the container (needs a terminal); returns its exit code."""
    return subprocess.call(["docker", "exec", "-it", container, "bash", "-l"])


def stop(container: str) -> None:
    """Remove the container and the image built for it."""
    import docker.errors

    client = docker_client()
    try:
        found = client.containers.get(container)
    except docker.errors.NotFound:
        return
    image = (found.labels or {}).get(_IMAGE_LABEL)
    found.remove(force=True)
    if image:
        with contextlib.suppress(docker.errors.DockerException):
            client.images.remove(image, force=True)


def open_shell(task: Task, *, ready: Callable[[str], None] | None = None) -> int:
    """Build a fresh environment, open a shell in it, and remove it when the shell exits.

    Args:
        task: The task whose environment to build.
        ready: Called with the container's name once it runs, before the shell opens (to
            say how to check it from another terminal).

    Returns:
        The shell's exit code.
    """
    name = start(task)
    try:
        if ready is not None:
            ready(name)
        return shell(name)
    finally:
        stop(name)


def check(task: Task, container: str, *, timeout: float | None = None) -> LiveCheck:
    """Run the task's tests against the container's current state and read the reward.

    Raises:
        SandboxUnavailable: No container has that name.
        SandboxError: The engine failed during the check.
    """
    import docker.errors

    client = docker_client()
    try:
        found = client.containers.get(container)
    except docker.errors.NotFound as exc:
        raise SandboxUnavailable(f"no container named {container}",
                                 fix="pass the name `taskloom make --shell` printed, or "
                                     "`docker ps` to list them") from exc
    limit = int(timeout or task.config.verifier.timeout_sec)
    try:
        found.exec_run(["sh", "-c", "rm -rf /logs/verifier && mkdir -p /logs/verifier && "
                                    "chmod 777 /logs/verifier"])
        found.put_archive("/", tar_files(task.tests, "tests/"))
        try:
            result = found.exec_run(["timeout", "-s", "KILL", str(limit), "bash",
                                     "/tests/test.sh"], workdir=None)
            output = result.output.decode("utf-8", "replace")
            rewards, error = read_reward(client, found.id)
        finally:
            found.exec_run(["rm", "-rf", "/tests"])
    except engine_errors() as exc:
        raise SandboxError(f"the Docker engine failed while checking {container}: "
                           f"{exc}") from exc
    return LiveCheck(reward=lowest(rewards), reward_error=error,
                     failed=tuple(dict.fromkeys(FAILED.findall(output))), log=output[-6000:])


def check_task(task: Task, container: str | None = None, *,
               timeout: float | None = None) -> LiveCheck:
    """Run the task's tests in a live environment: a running one, or a fresh one.

    Args:
        task: The task whose tests to run.
        container: A running environment (from `start` or `make --shell`) to check as it
            is; None builds a fresh one, checks it and removes it.
        timeout: Seconds the tests may take; the task's verifier timeout when None.

    Raises:
        SandboxUnavailable: No container has that name, or the engine cannot build.
        SandboxError: The environment does not build, or the engine failed.
    """
    name = container if container is not None else start(task)
    try:
        return check(task, name, timeout=timeout)
    finally:
        if container is None:
            stop(name)
