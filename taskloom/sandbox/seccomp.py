"""A seccomp filter for bwrap sandboxes: the kernel interfaces Docker's default profile shuts.

Docker's profile is an allow-list; this is a short deny-list of what matters when the
capabilities are already dropped: creating user namespaces (the door to mounting and to
most namespace exploits), keyrings, BPF, perf, userfaultfd, io_uring, module and kexec
loading, mount APIs, and the 32-bit and x32 system call ABIs (which would bypass the
numbers below). Denied calls fail with EPERM; `clone3` fails with ENOSYS so that the C
library falls back to `clone`, whose flags can be checked.

The program is classic BPF as bubblewrap's `--seccomp FD` reads it. Only x86_64 has a
filter (`program()` returns None elsewhere, and the sandbox runs without one).
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import struct
from collections.abc import Iterator

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000
SYS_CLONE, SYS_CLONE3 = 56, 435
# x86_64 numbers of the denied system calls.
DENIED = {
    "unshare": 272, "setns": 308, "keyctl": 250, "add_key": 248, "request_key": 249,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 246,
    "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "acct": 163, "swapon": 167, "swapoff": 168, "reboot": 169, "syslog": 103, "iopl": 172,
    "ioperm": 173, "quotactl": 179, "lookup_dcookie": 212, "open_by_handle_at": 304,
    "vhangup": 153, "fanotify_init": 300,
}

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE, _JSET = 0x15, 0x35, 0x45  # BPF_JMP | BPF_{JEQ,JGE,JSET} | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000


def program() -> bytes | None:
    """The compiled filter for this machine, or None where there is none (not x86_64)."""
    if platform.machine() != "x86_64":
        return None
    head = [(_LD_ABS, "", "", 4), (_JEQ, "", "eperm", AUDIT_ARCH_X86_64),
            (_LD_ABS, "", "", 0), (_JGE, "eperm", "", X32_SYSCALL_BIT),
            (_JEQ, "enosys", "", SYS_CLONE3), (_JEQ, "clone", "", SYS_CLONE)]
    head += [(_JEQ, "eperm", "", number) for number in sorted(DENIED.values())]
    tail = {"allow": (_RET, "", "", _ALLOW), "eperm": (_RET, "", "", _ERRNO | errno.EPERM),
            "enosys": (_RET, "", "", _ERRNO | errno.ENOSYS),
            "clone": (_LD_ABS, "", "", 16),  # low 32 bits of the flags argument
            "clone-flags": (_JSET, "clone-deny", "clone-allow", CLONE_NEWUSER),
            "clone-deny": (_RET, "", "", _ERRNO | errno.EPERM),  # BPF jumps only forward
            "clone-allow": (_RET, "", "", _ALLOW)}
    code = head + list(tail.values())
    where = {label: len(head) + i for i, label in enumerate(tail)}
    out = bytearray()
    for index, (op, true, false, k) in enumerate(code):
        jt = where[true] - index - 1 if true else 0
        jf = where[false] - index - 1 if false else 0
        out += struct.pack("=HBBI", op, jt, jf, k)
    return bytes(out)


@contextlib.contextmanager
def filter_fd(compiled: bytes) -> Iterator[int]:
    """A readable file descriptor holding `compiled`, for `bwrap --seccomp FD`."""
    read, write = os.pipe()
    try:
        os.write(write, compiled)  # a few hundred bytes: fits the pipe buffer
        os.close(write)
        write = -1
        yield read
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
