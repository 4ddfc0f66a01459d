"""Live environments: build a task's environment, open a shell in it, check its state.

Used by people and agents who attempt a task: start it, work in it, run the task's tests
against the current state of the running environment.

A live environment is a real `docker build` of the task's environment/ and a container
with the sandbox's limits (no network, the same capabilities) that stays up while someone
works in it. `check` copies tests/ in only for the check and removes them afterwards, as
Harbor's verifier does.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import tarfile
import uuid
from dataclasses import dataclass

from taskloom.errors import SandboxError, SandboxUnavailable
from taskloom.models import Task
from taskloom.sandbox.containers import docker_client
from taskloom.sandbox.driver import parse_reward
from taskloom.sandbox.policy import KEPT_CAPABILITIES, LABEL, PIDS_LIMIT

FAILED = re.compile(r"^FAILED (?:\S+::)?(test_\w+)", re.MULTILINE)


@dataclass(frozen=True)
class CheckResult:
    """The reward of a live environment's current state, and the checks that failed."""

    reward: float | None
    reward_error: str | None
    failed: tuple[str, ...]
    log: str


def start(task: Task, *, name: str | None = None) -> str:
    """Build the task's environment and start a container that waits for a person.

    Returns:
        The container's name.
    """
    client = docker_client()
    image = f"taskloom-live:{uuid.uuid4().hex[:12]}"
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        for entry in task.environment:
            info = tarfile.TarInfo(entry.path)
            info.size, info.mode = len(entry.content), entry.mode
            archive.addfile(info, io.BytesIO(entry.content))
    import docker.errors

    try:
        client.images.build(fileobj=io.BytesIO(context.getvalue()), custom_context=True,
                            tag=image, rm=True, forcerm=True, network_mode="none",
                            labels={"taskloom.live": task.name})
    except docker.errors.BuildError as exc:
        log = "".join(str(chunk.get("stream", "")) for chunk in exc.build_log)[-3000:]
        raise SandboxError(f"the environment of {task.name} does not build:\n{log}") from exc
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"cannot build the environment: {exc}",
                                 fix="check `taskloom doctor`") from exc
    name = name or f"taskloom-{task.name[:40]}-{uuid.uuid4().hex[:6]}"
    memory = f"{task.config.environment.memory_mb or 2048}m"
    client.containers.run(
        image, ["sleep", "infinity"], name=name, detach=True, network_mode="none",
        mem_limit=memory, memswap_limit=memory, pids_limit=PIDS_LIMIT, cap_drop=["ALL"],
        cap_add=list(KEPT_CAPABILITIES), security_opt=["no-new-privileges"],
        labels={"taskloom.live": task.name, LABEL + ".live-image": image})
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
    image = (found.labels or {}).get(LABEL + ".live-image")
    found.remove(force=True)
    if image:
        with contextlib.suppress(docker.errors.DockerException):
            client.images.remove(image, force=True)


def check(task: Task, container: str, *, timeout: float | None = None) -> CheckResult:
    """Run the task's tests against the container's current state and read the reward."""
    import docker.errors

    client = docker_client()
    try:
        found = client.containers.get(container)
    except docker.errors.NotFound as exc:
        raise SandboxUnavailable(f"no container named {container}",
                                 fix="pass the name `taskloom make --shell` printed, or "
                                     "`docker ps` to list them") from exc
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for entry in task.tests:
            info = tarfile.TarInfo(f"tests/{entry.path}")
            info.size, info.mode = len(entry.content), entry.mode
            tar.addfile(info, io.BytesIO(entry.content))
    limit = int(timeout or task.config.verifier.timeout_sec)
    found.exec_run(["sh", "-c", "rm -rf /logs/verifier && mkdir -p /logs/verifier && "
                                "chmod 777 /logs/verifier"])
    found.put_archive("/", archive.getvalue())
    try:
        result = found.exec_run(["timeout", "-s", "KILL", str(limit), "bash",
                                 "/tests/test.sh"], workdir=None)
        output = result.output.decode("utf-8", "replace")
        files = {}
        try:
            stream, _ = found.get_archive("/logs/verifier")
            data = io.BytesIO(b"".join(stream))
            with tarfile.open(fileobj=data) as tar:
                for member in tar.getmembers():
                    if member.isfile() and member.name.rsplit("/", 1)[-1].startswith("reward"):
                        files[member.name.rsplit("/", 1)[-1]] = tar.extractfile(member).read()
        except docker.errors.NotFound:
            pass
    finally:
        found.exec_run(["rm", "-rf", "/tests"])
    reward, error = parse_reward(files)
    return CheckResult(reward=reward, reward_error=error,
                       failed=tuple(dict.fromkeys(FAILED.findall(output))), log=output[-6000:])
