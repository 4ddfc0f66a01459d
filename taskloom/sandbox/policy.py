"""The sandbox policy: what every sandbox gets, whichever runtime or live environment runs it.

The Docker runtime, the bubblewrap runtime and live environments (`make --shell`, `check`)
each enforce these; keeping them in one place is what makes a task that passes in one
sandbox meet the same limits in the others:

- the in-sandbox driver they run (`DRIVER_SOURCE`);
- the capabilities kept after dropping all (`KEPT_CAPABILITIES`), no-new-privileges;
- the pids limit, and how much of a sandbox's output the host keeps;
- the host knobs below /proc a sandbox sees read-only or not at all (Docker's defaults,
  which the bwrap runtime applies itself);
- the labels that mark Docker objects as taskloom's and name the process that owns them,
  so a later run can remove what a killed process left (`containers.prune_stale`);
- the host config of a locked-down Docker container (`docker_host_config`).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

DRIVER_SOURCE = Path(__file__).with_name("driver.py")
LABEL = "taskloom.sandbox"
OWNER_LABEL = "taskloom.owner"
# Capabilities kept: what chown/chmod/useradd/su-style task steps need. Everything else
# (NET_RAW, MKNOD, SYS_CHROOT, SETFCAP, AUDIT_WRITE, NET_BIND_SERVICE, SETPCAP) is dropped.
KEPT_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID")
PIDS_LIMIT = 512
# Bytes of a sandbox's output (the driver's report included) the host keeps: a phase that
# prints without end cannot fill the host's memory. Docker's own log file is capped to match.
OUTPUT_LIMIT = 4 * 1024 * 1024
_DOCKER_LOG_MAX_SIZE = "4m"
# Paths below /proc that Docker makes read-only or hides, and the bwrap runtime too. Without a
# user namespace, uid 0 in a bwrap sandbox is uid 0 on the host: a writable
# /proc/sys/kernel/core_pattern would be the host's. (bwrap covers some of these only when it
# judges them writable.)
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs")
PROC_HIDDEN_FILES = ("kcore", "keys", "latency_stats", "timer_list", "timer_stats",
                     "sched_debug")
PROC_HIDDEN_DIRS = ("acpi", "asound", "scsi")


def owner() -> str:
    """`<host>:<pid>`: the process that owns the Docker objects it creates (OWNER_LABEL)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def parse_owner(value: str) -> tuple[str, int | None]:
    """(host, pid) of an OWNER_LABEL value; pid None when the value is not one of ours."""
    host, _, pid = value.rpartition(":")
    return host, int(pid) if pid.isdigit() else None


def sandbox_labels() -> dict[str, str]:
    """Labels of every container and image a runtime creates and removes itself."""
    return {LABEL: "1", OWNER_LABEL: owner()}


def docker_host_config(api, *, memory_mb: int, cpus: float | None, network: bool) -> dict:
    """The Docker host config of a locked-down container.

    Args:
        api: The docker SDK's low-level client (`client.api`).
        memory_mb: Memory limit in MiB; swap is not allowed on top of it.
        cpus: CPU quota in cores; None sets none.
        network: Give the container the default bridge network (never the default).

    Returns:
        The `host_config` argument of `create_container`.
    """
    from docker.types import LogConfig

    limits = {} if cpus is None else {"nano_cpus": int(cpus * 1e9)}
    return api.create_host_config(
        network_mode="bridge" if network else "none",
        mem_limit=f"{memory_mb}m", memswap_limit=f"{memory_mb}m", pids_limit=PIDS_LIMIT,
        cap_drop=["ALL"], cap_add=list(KEPT_CAPABILITIES),
        security_opt=["no-new-privileges"], init=False,
        log_config=LogConfig(type="json-file",
                             config={"max-size": _DOCKER_LOG_MAX_SIZE, "max-file": "1"}),
        **limits,
    )
