"""The batch run's allocator setting, checked against glibc itself in fresh processes."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from taskloom.pipeline.allocator import keep_large_buffers_out_of_heap

# In a fresh interpreter: free a 4 MiB block, then say whether a new 256 KiB block is
# mmapped (mallinfo2().hblkhd grows) or served from the heap.
PROBE = """
import ctypes, sys
from taskloom.pipeline.allocator import keep_large_buffers_out_of_heap
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "fixed":
    assert keep_large_buffers_out_of_heap()
libc.free(libc.malloc(4 << 20))
before = libc.mallinfo2().hblkhd
block = libc.malloc(256 << 10)
print("mmap" if libc.mallinfo2().hblkhd - before >= 256 << 10 else "heap")
"""

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")


def probe(mode: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


@glibc
def test_large_buffers_stay_mmapped_after_a_larger_one_was_freed():
    assert probe("dynamic") == "heap"  # glibc's default: the threshold rose to 4 MiB
    assert probe("fixed") == "mmap"


def test_a_threshold_the_user_set_is_left_alone(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert keep_large_buffers_out_of_heap() is False
