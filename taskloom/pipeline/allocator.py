"""Keep large buffers out of the C heap during a long batch run (glibc only).

glibc serves allocations of 128 KiB and more with their own mmap and unmaps them on free,
but each time it frees such a block it raises that threshold to the block's size (up to
32 MiB). A batch run handles multi-MB drafts, their JSON and zlib forms and validation
plans, so after the first large task all of these come from the heap; the holes they
leave stay resident, and each rare coincidence of large tasks in flight grew the heap for
good: peak RSS crept with run length. Fixing the threshold (which also turns the raising
off) sends them back to mmap. `benchmarks/pipeline_memory.py --small 100 --large 2000`:
peak RSS 146.2 vs 172.9 MiB with it (and validation plans spooled through files), 171.9
vs 223.2 MiB before.
"""

from __future__ import annotations

import ctypes
import os

M_MMAP_THRESHOLD = -3  # mallopt parameter (malloc.h)
LARGE_BUFFER_BYTES = 128 * 1024  # glibc's default threshold, now fixed


def keep_large_buffers_out_of_heap() -> bool:
    """Fix glibc's mmap threshold for this process; False where that is not possible.

    A `MALLOC_MMAP_THRESHOLD_` the user set in the environment is left alone.
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows)
        return False
    return mallopt(M_MMAP_THRESHOLD, LARGE_BUFFER_BYTES) == 1
