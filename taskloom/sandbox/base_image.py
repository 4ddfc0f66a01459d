"""The toolbox image every generated task builds FROM: its name, version and contents.

Two ways to build it, same result:
- offline, from Debian packages: `debootstrap --variant=minbase --include=<toolbox>` into a
  folder, then `docker import` (needs root and debootstrap; no registry);
- from a registry image (`--from-registry debian:bookworm-slim`) plus `apt-get install`.

Bump `BASE_IMAGE_VERSION` whenever `TOOLBOX_PACKAGES` or `IMAGE_CHANGES` change: generated
tasks name the image by version, so old task folders keep pointing at the image they were
verified on.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from taskloom.errors import BaseImageError

BASE_IMAGE_NAME = "taskloom/base"
BASE_IMAGE_VERSION = "2"
BASE_IMAGE = f"{BASE_IMAGE_NAME}:{BASE_IMAGE_VERSION}"
DEBIAN_SUITE = "bookworm"

# The command-line toolbox of generated tasks (Debian package names).
TOOLBOX_PACKAGES = (
    "bash", "coreutils", "findutils", "grep", "sed", "gawk", "tar", "gzip", "bzip2",
    "xz-utils", "zip", "unzip", "sqlite3", "jq", "python3", "python3-pytest", "git",
    "procps", "tmux", "bc", "diffutils", "file", "less", "cron", "ca-certificates",
    "rsync", "logrotate", "patch", "passwd",
)
TOOLBOX_DIGEST = hashlib.sha256(" ".join(TOOLBOX_PACKAGES).encode()).hexdigest()[:12]
LABELS = {"taskloom.base-version": BASE_IMAGE_VERSION, "taskloom.toolbox": TOOLBOX_DIGEST}
# The system's own folders first: Harbor starts the verifier as `bash -c ...` found on the
# image's PATH, and Debian's order (/usr/local and the sbin folders before /usr/bin) lets an
# agent's `bash` planted there run instead of the tests (red-team round 7). Here only
# rewriting /usr/bin/bash itself reaches the verifier's shell, which a separate verifier
# stops. Commands an agent installs in /usr/local/bin are still found by name.
IMAGE_PATH = "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin:/usr/local/sbin"
IMAGE_CHANGES = (
    f"ENV PATH={IMAGE_PATH}",
    "ENV LANG=C.UTF-8",
    "WORKDIR /",
    'CMD ["bash"]',
    *(f"LABEL {key}={value}" for key, value in LABELS.items()),
)
# Emptied in the root filesystem before import: package caches and documentation.
_PRUNE = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
          "usr/share/info")

Log = Callable[[str], None]


def prune(root: Path) -> None:
    """Empty the package caches and documentation folders of a debootstrapped `root`.

    Every way of making the base image's files from Debian packages calls this, so the
    Docker image and the bwrap runtime's root filesystem hold the same files. The folders
    stay (apt expects them); apt's `lock` files stay too.
    """
    for relative in _PRUNE:
        target = root / relative
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                elif child.name != "lock":
                    child.unlink()


def build_offline(client, *, log: Log = print, workdir: Path | None = None) -> str:
    """Build the base image from Debian packages with debootstrap and import it.

    Returns:
        The image reference.

    Raises:
        BaseImageError: Not root, debootstrap missing, or a step failed (with its log).
    """
    if os.geteuid() != 0:
        raise BaseImageError("debootstrap needs root to build the base image",
                             fix="run `sudo taskloom base-image build`, or use "
                                 "`--from-registry debian:bookworm-slim` where a registry "
                                 "is reachable")
    if shutil.which("debootstrap") is None:
        raise BaseImageError("debootstrap is not installed",
                             fix="apt-get install -y debootstrap")
    parent = Path(workdir or tempfile.gettempdir())
    root = Path(tempfile.mkdtemp(prefix="taskloom-rootfs-", dir=parent))
    try:
        started = time.monotonic()
        log(f"debootstrap {DEBIAN_SUITE} with {len(TOOLBOX_PACKAGES)} packages into {root}")
        command = ["debootstrap", "--variant=minbase",
                   f"--include={','.join(TOOLBOX_PACKAGES)}", DEBIAN_SUITE, str(root)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr)[-3000:]
            raise BaseImageError(f"debootstrap failed (exit {done.returncode}):\n{tail}",
                                 fix="check that Debian's mirror is reachable; "
                                     f"full log in {root}/debootstrap/debootstrap.log")
        log(f"debootstrap done in {time.monotonic() - started:.0f} s; importing")
        prune(root)
        (root / "etc" / "taskloom-base").write_text(f"{BASE_IMAGE}\n{TOOLBOX_DIGEST}\n")
        with subprocess.Popen(["tar", "--numeric-owner", "-C", str(root), "-c", "."],
                              stdout=subprocess.PIPE) as tar:
            client.api.import_image_from_data(tar.stdout, repository=BASE_IMAGE_NAME,
                                              tag=BASE_IMAGE_VERSION,
                                              changes=list(IMAGE_CHANGES))
        if tar.returncode != 0:
            raise BaseImageError("tar of the root filesystem failed",
                                 fix="check free disk space")
        log(f"built {BASE_IMAGE} in {time.monotonic() - started:.0f} s")
        return BASE_IMAGE
    finally:
        shutil.rmtree(root, ignore_errors=True)


def registry_dockerfile(source: str) -> str:
    """Dockerfile that makes the base image from a Debian-based registry image."""
    packages = " ".join(TOOLBOX_PACKAGES)
    labels = " ".join(f"{key}={value}" for key, value in LABELS.items())
    return (
        f"FROM {source}\n"
        "RUN apt-get update \\\n"
        f" && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
        f"{packages} \\\n"
        " && rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man \\\n"
        f" && printf '%s\\n%s\\n' {BASE_IMAGE} {TOOLBOX_DIGEST} > /etc/taskloom-base\n"
        "ENV LANG=C.UTF-8\n"
        f"LABEL {labels}\n"
        'CMD ["bash"]\n'
    )


def build_from_registry(client, source: str, *, log: Log = print) -> str:
    """Build the base image from a registry image (needs the registry and Debian mirrors)."""
    import docker.errors

    started = time.monotonic()
    dockerfile = io.BytesIO(registry_dockerfile(source).encode())
    try:
        for chunk in client.api.build(fileobj=dockerfile, tag=BASE_IMAGE, rm=True,
                                      forcerm=True, decode=True, pull=True):
            if "stream" in chunk and chunk["stream"].strip():
                log(chunk["stream"].rstrip())
            if "error" in chunk:
                raise BaseImageError(f"docker build failed: {chunk['error']}",
                                     fix=f"check that {source} can be pulled, or build "
                                         "offline with `taskloom base-image build`")
    except docker.errors.APIError as exc:
        raise BaseImageError(f"docker build failed: {exc.explanation or exc}",
                             fix=f"check that {source} can be pulled") from exc
    log(f"built {BASE_IMAGE} from {source} in {time.monotonic() - started:.0f} s")
    return BASE_IMAGE


def base_image_status(client) -> tuple[bool, str]:
    """(usable, description) of the local base image."""
    import docker.errors

    try:
        image = client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        return False, f"{BASE_IMAGE} is not built"
    labels = image.labels or {}
    if labels.get("taskloom.toolbox") != TOOLBOX_DIGEST:
        return False, f"{BASE_IMAGE} was built from another package list"
    size_mb = (image.attrs.get("Size") or 0) / 1e6
    return True, f"{BASE_IMAGE} ({image.short_id}, {size_mb:.0f} MB)"


def is_base_image(reference: str) -> bool:
    """True when `reference` names a version of the taskloom base image."""
    return reference.split(":")[0] == BASE_IMAGE_NAME
