"""Prebuilt images for exported tasks (`taskloom export --images`).

Runners that cannot build Dockerfiles (Prime Intellect's verifiers, most cloud sandboxes)
need `[environment] docker_image`. Each task's `environment/` is built once with Docker
and named by its content, `taskloom/<task_id>:<sha256 of environment/, 16 hex>` (with
`REGISTRY/` before it when pushed): an image that exists is not built again, and a
changed environment gets a new name. The exported `task.toml` names the image (the
Dockerfile stays, so `--force-build` still works); the images are pushed to `--registry`
or, without one, saved to `images.tar` beside the tasks, which `docker load -i
images.tar` reads.
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

import tomli_w

from taskloom.errors import InfrastructureError, InputError, SandboxUnavailable
from taskloom.models import TaskFile
from taskloom.sandbox.containers import docker_client, tar_files

ARCHIVE_NAME = "images.tar"
REGISTRY = r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*$"


def check_registry(registry: str) -> str:
    """Return `registry` (HOST[:PORT][/PATH]) if Docker accepts it as a name prefix.

    Raises:
        InputError: It is not one.
    """
    if not re.match(REGISTRY, registry):
        raise InputError(f"{registry!r} is not a registry", field="--registry",
                         fix="write it as HOST[:PORT][/PATH] in lowercase, e.g. "
                             "ghcr.io/my-org or localhost:5000")
    return registry


def image_name(task_id: str, files: tuple[TaskFile, ...]) -> str:
    """The local name of a task's image: its id, and the digest of its environment/ files."""
    digest = hashlib.sha256()
    for entry in sorted(files, key=lambda f: f.path):
        if entry.path.startswith("environment/"):
            digest.update(f"{entry.path}\0{entry.mode:o}\0".encode())
            digest.update(hashlib.sha256(entry.content).digest())
    return f"taskloom/{task_id.lower()}:{digest.hexdigest()[:16]}"


def in_registry(local: str, registry: str | None) -> str:
    """The name a local image is pushed under (itself without a registry)."""
    return f"{registry.rstrip('/')}/{local}" if registry else local


def naming(files: tuple[TaskFile, ...], image: str) -> tuple[TaskFile, ...]:
    """The task's files with `[environment] docker_image = image` in task.toml."""
    changed = []
    for entry in files:
        if entry.path == "task.toml":
            document = tomllib.loads(entry.content.decode("utf-8"))
            document.setdefault("environment", {})["docker_image"] = image
            entry = entry.model_copy(update={"content": tomli_w.dumps(document).encode()})
        changed.append(entry)
    return tuple(changed)


def build_image(files: tuple[TaskFile, ...], local: str, image: str) -> bool:
    """Build the task's environment/ as `local` unless it exists; True when built.

    It is tagged `image` too (the name it is exported under). The build is cached under
    the local name (`image_name`), so naming the same environment for another registry
    only adds a tag.

    Raises:
        SandboxUnavailable: Docker cannot be reached.
        InfrastructureError: The build failed (its log in the message).
    """
    import docker.errors

    client = docker_client()
    repository, tag = image.rsplit(":", 1)
    try:
        client.images.get(local).tag(repository, tag)
        return False
    except docker.errors.ImageNotFound:
        pass
    context = tuple(TaskFile(path=f.path[len("environment/"):], content=f.content, mode=f.mode)
                    for f in files if f.path.startswith("environment/"))
    try:
        built, _ = client.images.build(fileobj=io.BytesIO(tar_files(context)),
                                       custom_context=True, tag=local, rm=True, forcerm=True,
                                       network_mode="none")
        built.tag(repository, tag)
    except docker.errors.BuildError as exc:
        log = "".join(str(chunk.get("stream", "")) for chunk in exc.build_log)[-3000:]
        raise InfrastructureError(f"the environment of {image} does not build:\n{log}",
                                  fix="the task validated: check the Docker engine with "
                                      "`taskloom doctor`") from exc
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"cannot build images: {exc}",
                                 fix="--images needs Docker; check `taskloom doctor`") from exc
    return True


def push_images(images: list[str], progress: Callable[[str], None] | None = None) -> None:
    """Push every image to the registry its name starts with.

    Raises:
        InfrastructureError: The registry cannot be reached or refused an image.
    """
    import docker.errors

    client = docker_client()
    for image in images:
        repository, tag = image.rsplit(":", 1)
        try:
            for event in client.images.push(repository, tag=tag, stream=True, decode=True):
                if "error" in event:
                    raise InfrastructureError(
                        f"cannot push {image}: {event['error']}",
                        fix="log in first (`docker login REGISTRY`) and check that the "
                            "registry is reachable; the export is complete without it")
        except docker.errors.DockerException as exc:
            raise InfrastructureError(f"cannot push {image}: {exc}",
                                      fix="check that the registry is reachable") from exc
        if progress is not None:
            progress(image)


def save_images(images: list[str], path: Path) -> Path:
    """Save every image into one archive that `docker load -i` reads.

    Raises:
        InfrastructureError: `docker save` failed.
    """
    done = subprocess.run(["docker", "save", "-o", str(path), *images], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise InfrastructureError(f"docker save failed: {done.stderr.strip()[-2000:]}",
                                  fix="check the Docker engine with `taskloom doctor`")
    return path
