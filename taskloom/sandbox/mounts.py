"""Kernel overlay mounts for the bwrap runtime: mount, unmount, find leftovers.

Each sandbox root is an overlay: read-only lower layers (the exported root filesystem, and
for phases the layer that environment setup wrote) under a fresh writable upper layer.
bubblewrap 0.8 has no overlay options, so the host mounts it (as root) and binds it as the
sandbox's `/`. Mounts are made with `mount(2)` directly: no process per mount.
"""

from __future__ import annotations

import ctypes
import errno
import os
import time
from pathlib import Path

from taskloom.errors import SandboxError

MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)


def _call(function, *args: bytes | int) -> int:
    """Run a libc call; 0 on success, else the errno it set."""
    if function(*args) == 0:
        return 0
    return ctypes.get_errno()


def overlay_supported() -> bool:
    """True when the kernel has the overlay filesystem (built in or as a loaded module)."""
    try:
        return "overlay" in Path("/proc/filesystems").read_text().split()
    except OSError:
        return False


def mount_overlay(lowers: list[Path], upper: Path, work: Path, target: Path) -> None:
    """Mount an overlay of `lowers` (top first) with `upper` as its writable layer.

    The upper layer is thrown away after use, so the mount is `volatile` (no syncs) where
    the kernel supports it.

    Raises:
        SandboxError: The kernel refused the mount.
    """
    options = (f"lowerdir={':'.join(str(p) for p in lowers)},upperdir={upper},"
               f"workdir={work}")
    code = _call(_libc.mount, b"overlay", str(target).encode(), b"overlay", 0,
                 (options + ",volatile").encode())
    if code == errno.EINVAL:  # kernels before 5.10 have no `volatile`
        code = _call(_libc.mount, b"overlay", str(target).encode(), b"overlay", 0,
                     options.encode())
    if code:
        raise SandboxError(f"cannot mount an overlay on {target}: {os.strerror(code)}",
                           fix="the bwrap runtime needs root and the overlay filesystem "
                               "(`modprobe overlay`); see `taskloom doctor`")


def unmount(target: Path, *, attempts: int = 50) -> None:
    """Unmount `target`; retry while busy, then detach it lazily as a last resort."""
    for _ in range(attempts):
        code = _call(_libc.umount2, str(target).encode(), 0)
        if code in (0, errno.EINVAL, errno.ENOENT):  # EINVAL: not a mount point (any more)
            return
        if code != errno.EBUSY:
            break
        time.sleep(0.01)
    _call(_libc.umount2, str(target).encode(), MNT_DETACH)


def mounts_below(directory: Path) -> list[Path]:
    """Mount points at or below `directory`, deepest first (the order to unmount them)."""
    prefix = str(directory).rstrip("/") + "/"
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            point = _unescape(line.split()[4])
            if point == prefix.rstrip("/") or point.startswith(prefix):
                found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def unmount_below(directory: Path) -> int:
    """Unmount everything at or below `directory`; how many mount points there were."""
    points = mounts_below(directory)
    for point in points:
        unmount(point, attempts=5)
    return len(points)


def _unescape(field: str) -> str:
    r"""A path from /proc/self/mountinfo, where space, tab... are octal escapes (\040)."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)
