"""Write a folder so that readers see it complete or not at all.

The folder is written as a hidden sibling `.NAME.partial-PID` and renamed into place when
the writer is done. A writer killed mid-way leaves only that sibling; the next writer of
the same folder removes it (whatever PID wrote it), so nothing half-written is left behind
after a resume.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """Yield an empty staging folder that replaces `target` when the block ends.

    If the block raises, the staging folder is removed and `target` is left as it was.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{glob.escape(target.name)}.partial-*"):
        shutil.rmtree(stale, ignore_errors=True)  # left by a killed writer
    staging = target.with_name(f".{target.name}.partial-{os.getpid()}")
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
