"""The base image's root filesystem as a plain folder, for the bwrap runtime.

The bwrap runtime needs no image store: it mounts overlays over a folder that holds the
base image's files. Two ways to make that folder, same contents:
- `export_from_docker`: `docker export` of a container of `taskloom/base:2` (~3 s);
- `build_with_debootstrap`: the base image's package list from Debian packages, for
  machines without Docker (root, debootstrap and a Debian mirror; ~1 min).

Folders live in `/var/lib/taskloom/rootfs/<image>/`, with `<image>.json` beside them (its
presence marks a complete export). Make one with:

    taskloom base-image export [--from docker|debootstrap] [--force]
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field

from taskloom.errors import BaseImageError, SandboxUnavailable
from taskloom.models import Frozen
from taskloom.sandbox import base_image
from taskloom.sandbox.policy import sandbox_labels

ROOTFS_ROOT = Path("/var/lib/taskloom/rootfs")
EXPORT_COMMAND = "taskloom base-image export"
HOSTNAME = "sandbox"
_HOSTS = (f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
          f"127.0.1.1\t{HOSTNAME}\n")

Log = Callable[[str], None]


class RootFilesystem(Frozen):
    """An image's files unpacked in a folder, ready to be an overlay's lower layer."""

    image: str = Field(description="Image reference the files come from (taskloom/base:2).")
    path: Path = Field(description="The folder holding the files.")
    source: Literal["docker-export", "debootstrap"] = Field(description="How it was made.")
    image_id: str | None = Field(default=None, description="Docker image id, when exported.")
    toolbox: str = Field(description="Toolbox digest of the package list it holds.")
    env: dict[str, str] = Field(description="The image's ENV (PATH, LANG...).")
    created: str = Field(description="When it was made (UTC, ISO 8601).")


def folder_name(image: str) -> str:
    """File-system-safe name of an image reference: taskloom/base:2 -> taskloom_base_2."""
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in image)


def find(image: str = base_image.BASE_IMAGE, root: Path = ROOTFS_ROOT) -> RootFilesystem | None:
    """The complete root filesystem of `image` under `root`, or None."""
    meta = root / f"{folder_name(image)}.json"
    try:
        found = RootFilesystem.model_validate_json(meta.read_text())
    except (OSError, ValueError):
        return None
    return found if found.path.is_dir() else None


def require(image: str = base_image.BASE_IMAGE, root: Path = ROOTFS_ROOT) -> RootFilesystem:
    """Like `find`, but a missing or outdated root filesystem is an error that says the fix.

    Raises:
        SandboxUnavailable: Not exported yet, or exported from another package list.
    """
    found = find(image, root)
    if found is None:
        raise SandboxUnavailable(f"the root filesystem of {image} is not exported yet "
                                 f"(looked in {root})", fix=export_hint())
    if base_image.is_base_image(image) and found.toolbox != base_image.TOOLBOX_DIGEST:
        raise SandboxUnavailable(f"the root filesystem in {found.path} was made from another "
                                 "package list than this taskloom's base image",
                                 fix=export_hint() + " --force")
    return found


def export_hint() -> str:
    """The command that makes the base root filesystem."""
    return (f"{EXPORT_COMMAND}  (as root; from the Docker image, or add --from debootstrap "
            "where there is no Docker)")


def export_from_docker(client, image: str = base_image.BASE_IMAGE, *,
                       root: Path = ROOTFS_ROOT, force: bool = False,
                       log: Log = print) -> RootFilesystem:
    """Unpack the files of a local Docker image into `root` (once; `force` redoes it).

    Raises:
        SandboxUnavailable: The image is not available locally.
        BaseImageError: Not root, or the export failed.
    """
    import docker.errors

    existing = find(image, root)
    if existing is not None and not force:
        return existing
    _need_root()
    try:
        image_id = client.images.get(image).id
        env = client.api.inspect_image(image)["Config"].get("Env") or []
    except docker.errors.ImageNotFound as exc:
        raise SandboxUnavailable(f"{image} is not available locally",
                                 fix="build it first: `taskloom base-image build`") from exc
    staging = _staging(root, image)
    # Labelled as a sandbox: if this process is killed mid-export, a later run removes it.
    container = client.api.create_container(image, command=["true"],
                                            labels=sandbox_labels())["Id"]
    try:
        log(f"exporting {image} ({image_id[7:19]}) into {root / folder_name(image)}")
        with tempfile.TemporaryFile() as errors, subprocess.Popen(
                ["tar", "-C", str(staging), "-x", "-p", "--numeric-owner", "--xattrs",
                 "--xattrs-include=*"], stdin=subprocess.PIPE, stderr=errors) as tar:
            try:
                for chunk in client.api.export(container):
                    tar.stdin.write(chunk)
            finally:
                tar.stdin.close()
            if tar.wait() != 0:
                errors.seek(0)
                raise BaseImageError(f"unpacking {image} failed: "
                                     f"{errors.read()[-2000:].decode(errors='replace')}",
                                     fix=f"check free space in {root}")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            client.api.remove_container(container, force=True)
    return _publish(staging, image, root, source="docker-export", image_id=image_id,
                    env=dict(item.split("=", 1) for item in env if "=" in item))


def build_with_debootstrap(*, root: Path = ROOTFS_ROOT, force: bool = False,
                           log: Log = print) -> RootFilesystem:
    """Make the base root filesystem from Debian packages, as `taskloom base-image build`.

    Raises:
        BaseImageError: Not root, debootstrap missing, or debootstrap failed (with its log).
    """
    image = base_image.BASE_IMAGE
    existing = find(image, root)
    if existing is not None and not force:
        return existing
    _need_root()
    if shutil.which("debootstrap") is None:
        raise BaseImageError("debootstrap is not installed", fix="apt-get install -y debootstrap")
    staging = _staging(root, image)
    try:
        log(f"debootstrap {base_image.DEBIAN_SUITE} with {len(base_image.TOOLBOX_PACKAGES)} "
            f"packages into {staging}")
        done = subprocess.run(["debootstrap", "--variant=minbase",
                               f"--include={','.join(base_image.TOOLBOX_PACKAGES)}",
                               base_image.DEBIAN_SUITE, str(staging)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BaseImageError(f"debootstrap failed (exit {done.returncode}):\n"
                                 f"{(done.stdout + done.stderr)[-3000:]}",
                                 fix="check that Debian's mirror is reachable")
        base_image.prune(staging)
        (staging / "etc" / "taskloom-base").write_text(
            f"{image}\n{base_image.TOOLBOX_DIGEST}\n")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    env = dict(change[4:].split("=", 1) for change in base_image.IMAGE_CHANGES
               if change.startswith("ENV "))
    return _publish(staging, image, root, source="debootstrap", image_id=None, env=env)


def _need_root() -> None:
    if os.geteuid() != 0:
        raise BaseImageError("making the root filesystem needs root (file owners must be "
                             "kept)", fix=f"sudo {EXPORT_COMMAND}")


def _staging(root: Path, image: str) -> Path:
    """A fresh folder to unpack into; clears what killed exports left."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    prefix = f".staging-{folder_name(image)}-"
    for old in root.glob(prefix + "*"):
        pid = old.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(old, ignore_errors=True)
    staging = root / f"{prefix}{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    return staging


def _publish(staging: Path, image: str, root: Path, *, source: str, image_id: str | None,
             env: dict[str, str]) -> RootFilesystem:
    """Make the unpacked files a sandbox root, then move them into place atomically."""
    (staging / ".dockerenv").unlink(missing_ok=True)
    etc = staging / "etc"
    for name, text in (("hosts", _HOSTS), ("hostname", HOSTNAME + "\n"), ("resolv.conf", "")):
        target = etc / name
        target.unlink(missing_ok=True)
        target.write_text(text)
        target.chmod(0o644)
    final = root / folder_name(image)
    meta = root / f"{folder_name(image)}.json"
    found = RootFilesystem(
        image=image, path=final, source=source, image_id=image_id,
        toolbox=base_image.TOOLBOX_DIGEST if base_image.is_base_image(image) else "",
        env=env or {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
    meta.unlink(missing_ok=True)
    if final.exists():  # --force: running sandboxes keep the old inodes they hold open
        retired = root / f".staging-{folder_name(image)}-old-{os.getpid()}"
        final.rename(retired)
        shutil.rmtree(retired, ignore_errors=True)
    staging.rename(final)
    partial = meta.with_suffix(".json.partial")
    partial.write_text(found.model_dump_json(indent=2) + "\n")
    partial.rename(meta)
    return found
