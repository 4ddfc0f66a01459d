"""Docker containers as every taskloom sandbox makes them.

The engine client, the container factory (the sandbox policy's host config), tar archives
in and rewards out, and the cleanup of what killed processes left.

Used by the Docker runtime (`taskloom.sandbox.docker_runtime`) and by live environments
(`taskloom.sandbox.live`), so a container someone works in is locked down exactly like one
that validates the task.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import tarfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from taskloom.errors import SandboxError, SandboxUnavailable
from taskloom.models import TaskFile
from taskloom.sandbox import base_image
from taskloom.sandbox.driver import parse_reward
from taskloom.sandbox.policy import LABEL, OWNER_LABEL, docker_host_config, parse_owner


def docker_client(timeout: float = 120.0):
    """A connected docker SDK client.

    Raises:
        SandboxUnavailable: The docker package is missing or the engine is unreachable.
    """
    try:
        import docker
        import docker.errors
    except ImportError as exc:  # pragma: no cover - docker is a core dependency
        raise SandboxUnavailable("the docker Python package is missing",
                                 fix="pip install docker") from exc
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"cannot reach the Docker engine ({exc})",
                                 fix="start it (as root: `dockerd &`, or `systemctl start "
                                     "docker`) and make sure this user may use "
                                     "/var/run/docker.sock") from exc
    return client


def create_container(client, image: str, command: list[str], *, memory_mb: int,
                     cpus: float | None, network: bool, labels: dict[str, str],
                     name: str | None = None, stdin_open: bool = False,
                     user: str | None = None, entrypoint: list[str] | None = None) -> str:
    """Create (not start) a locked-down container: the sandbox policy's host config.

    Args:
        client: A docker SDK client (`docker_client()`).
        image: The image to run.
        command: Its PID 1, a process of ours that tasks cannot kill.
        memory_mb: Memory limit in MiB (no swap on top).
        cpus: CPU quota in cores; None sets none.
        network: Give it the default bridge network (never the default).
        labels: Its labels; `policy.sandbox_labels()` for one `prune_stale` may remove.
        name: Its name; Docker picks one when None.
        stdin_open: Keep PID 1's stdin open for one attached client (closed when it detaches).
        user: Who PID 1 runs as; the image's USER when None.
        entrypoint: Replaces the image's ENTRYPOINT (then `command` is its arguments).

    Returns:
        The container's id.

    Raises:
        SandboxUnavailable: The image is not available locally.
        SandboxError: The engine refused.
    """
    import docker.errors

    try:
        created = client.api.create_container(
            image=image, command=command, labels=labels, name=name,
            network_disabled=not network, stdin_open=stdin_open, user=user,
            entrypoint=entrypoint,
            host_config=docker_host_config(client.api, memory_mb=memory_mb, cpus=cpus,
                                           network=network))
    except docker.errors.ImageNotFound as exc:
        raise SandboxUnavailable(f"image {image} is not available locally",
                                 fix=_image_fix(image)) from exc
    except docker.errors.DockerException as exc:
        raise SandboxError(f"could not create a container from {image}: {exc}") from exc
    return created["Id"]


def tar_files(files: Iterable[TaskFile], prefix: str = "") -> bytes:
    """An uncompressed tar of task files, each named `prefix` + its path, with its mode."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for file in files:
            add_tar_member(archive, prefix + file.path, io.BytesIO(file.content),
                           len(file.content), file.mode)
    return buffer.getvalue()


def read_reward(client, container: str) -> tuple[dict[str, float] | None, str | None]:
    """(reward, None) or (None, why) from the container's /logs/verifier, as Harbor reads it.

    Raises:
        docker.errors.DockerException: The engine failed (the caller translates it).
    """
    import docker.errors

    try:
        stream, _ = client.api.get_archive(container, "/logs/verifier")
    except docker.errors.NotFound:
        return None, "tests/test.sh wrote no /logs/verifier directory"
    return reward_in_tar(b"".join(stream))


def reward_in_tar(data: bytes) -> tuple[dict[str, float] | None, str | None]:
    """(reward, None) or (None, why) from a tar of /logs/verifier, as Harbor reads it."""
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        files = {Path(m.name).name: archive.extractfile(m).read(65536)
                 for m in archive.getmembers() if m.isfile()}
    return parse_reward(files)


def add_tar_member(archive: tarfile.TarFile, name: str, data: IO[bytes], size: int,
                   mode: int) -> None:
    """Add `size` bytes read from `data` to `archive` as a regular file `name`."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = mode
    info.mtime = int(time.time())
    archive.addfile(info, data)


def engine_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean the engine (not the task) failed, to catch and translate."""
    import docker.errors
    import requests

    return (docker.errors.DockerException, requests.exceptions.RequestException)


def _image_fix(image: str) -> str:
    if base_image.is_base_image(image):
        return "build it: `taskloom base-image build`"
    return f"pull or build {image} first (no registry is used during validation)"


def prune_stale(client) -> int:
    """Remove sandboxes and build images left by taskloom processes that no longer run."""
    import docker.errors

    host = socket.gethostname()
    removed = 0
    try:
        containers = client.api.containers(all=True, filters={"label": LABEL})
        images = client.api.images(filters={"label": LABEL})
    except docker.errors.DockerException:
        return 0
    for item in containers + images:
        owner_host, pid = parse_owner((item.get("Labels") or {}).get(OWNER_LABEL, ""))
        if owner_host != host or pid is None or _alive(pid):
            continue
        with contextlib.suppress(docker.errors.DockerException):
            if "Image" in item and "Names" in item:
                client.api.remove_container(item["Id"], force=True, v=True)
            else:
                client.api.remove_image(item["Id"], force=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
