"""What the bwrap runtime needs of the machine, and removing what killed runtimes left.

A runtime names everything it makes (sandbox folders under `STATE_ROOT`, overlay mounts,
cgroups) after its process, `<pid>-<start time>-<instance>`: a process that no longer runs
under that name was killed before it could clean up, and `prune_stale` removes its things.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from taskloom.sandbox import base_image, cgroups, mounts, rootfs

STATE_ROOT = Path("/var/lib/taskloom/sandboxes")


def unavailable_reasons(rootfs_root: Path = rootfs.ROOTFS_ROOT) -> list[tuple[str, str]]:
    """Why the bwrap runtime cannot run here, as (reason, fix) pairs; empty when it can."""
    reasons = []
    if shutil.which("bwrap") is None:
        reasons.append(("bubblewrap is not installed", "apt-get install -y bubblewrap"))
    if os.geteuid() != 0:
        userns = "available" if _user_namespaces() else "disabled"
        reasons.append((f"not root (unprivileged user namespaces are {userns} here, but "
                        "the runtime mounts overlays and cgroups as root; rootless mode is "
                        "not implemented)", "run taskloom as root (sudo)"))
    else:
        if not mounts.overlay_supported():
            reasons.append(("the kernel has no overlay filesystem", "modprobe overlay"))
        missing = cgroups.missing_controllers()
        if missing:
            reasons.append((f"no cgroup v1 {', '.join(missing)} controller (cgroup v2-only "
                            "hosts are not supported yet)", "use --runtime docker"))
    if shutil.which("unshare") is None:
        reasons.append(("unshare (util-linux) is missing", "apt-get install -y util-linux"))
    found = rootfs.find(base_image.BASE_IMAGE, rootfs_root)
    if found is None:
        reasons.append((f"the root filesystem of {base_image.BASE_IMAGE} is not exported yet",
                        rootfs.export_hint()))
    elif found.toolbox != base_image.TOOLBOX_DIGEST:
        reasons.append((f"{found.path} holds another package list than {base_image.BASE_IMAGE}",
                        rootfs.export_hint() + " --force"))
    return reasons


def _user_namespaces() -> bool:
    try:
        if int(Path("/proc/sys/user/max_user_namespaces").read_text()) == 0:
            return False
        knob = Path("/proc/sys/kernel/unprivileged_userns_clone")
        return not knob.exists() or knob.read_text().strip() == "1"
    except (OSError, ValueError):
        return False


def process_name(pid: int) -> str | None:
    """`<pid>-<start time>`: names a process uniquely even after its pid is reused."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return f"{pid}-{fields[19]}"


def _alive(owner: str) -> bool:
    """Is the process that made `owner` (see `BwrapRuntime.owner`) still running?"""
    pid, start, *_ = [*owner.split("-"), ""]
    return pid.isdigit() and process_name(int(pid)) == f"{pid}-{start}"


def remove_tree(directory: Path) -> None:
    """Unmount everything below `directory`, then delete it."""
    mounts.unmount_below(directory)
    shutil.rmtree(directory, ignore_errors=True)


def prune_stale(state_root: Path = STATE_ROOT) -> int:
    """Remove the sandboxes (processes, mounts, folders, cgroups) of dead taskloom processes.

    Returns:
        How many dead processes' leftovers were removed.
    """
    names = set(cgroups.owners())
    with contextlib.suppress(OSError):
        names.update(p.name for p in state_root.iterdir() if p.is_dir())
    removed = 0
    for name in sorted(names):
        if _alive(name):
            continue
        cgroups.remove_tree(name)
        remove_tree(state_root / name)
        removed += 1
    return removed
