"""The payload file beside a run store: large stage results, zlib-compressed, append-only.

A draft carries every file of its task and can be megabytes; DuckDB keeps strings that long
in overflow blocks that its checkpoints rewrite as the store grows. So payloads over
`PAYLOAD_INLINE_BYTES` are appended here, and the store keeps their offset and length.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

# Payloads over 4 KB (drafts, with their files) live compressed in the payload file, not in
# DuckDB: it keeps strings that long in overflow blocks, and its checkpoints rewrote them
# again and again as the store grew, so peak memory grew with the run.
# `benchmarks/pipeline_memory.py --small 100 --large 2000`: 326 vs 1,588 MiB with drafts
# inline, 193 vs 254 MiB with those over 64 KB compressed inline, 172 vs 223 MiB with this
# (146 vs 173 MiB once large buffers also stayed out of the heap: pipeline/allocator.py).
PAYLOAD_INLINE_BYTES = 4096

_ENCODE_SLICE = 1 << 18  # characters of a payload encoded and compressed at a time


class PayloadFile:
    """Append-only zlib-compressed payloads; the store keeps each one's offset and length.

    Bytes are appended before their row commits: a killed run leaves at most unreferenced
    bytes at the end. A row whose bytes are missing or damaged (the machine lost power
    before the OS wrote them) reads as absent, so its stage simply runs again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._append_fd: int | None = None
        self._read_fd: int | None = None

    def append(self, payload: str) -> tuple[int, int]:
        """Store a payload; its (offset, length) in the file."""
        compressor = zlib.compressobj(6)
        # Encoded a slice at a time: a multi-MB draft is not held a second time as bytes.
        packed = b"".join(compressor.compress(payload[start:start + _ENCODE_SLICE].encode())
                          for start in range(0, len(payload), _ENCODE_SLICE))
        packed += compressor.flush()
        if self._append_fd is None:
            self._append_fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        at = os.fstat(self._append_fd).st_size
        os.write(self._append_fd, packed)
        return at, len(packed)

    def read(self, at: int, size: int) -> str | None:
        """The payload at `at`, or None when its bytes are missing or damaged."""
        if self._read_fd is None:
            try:
                self._read_fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                return None
        packed = os.pread(self._read_fd, size, at)
        try:
            return zlib.decompress(packed).decode() if len(packed) == size else None
        except zlib.error:
            return None

    def close(self) -> None:
        """Close the file."""
        for fd in (self._append_fd, self._read_fd):
            if fd is not None:
                os.close(fd)
        self._append_fd = self._read_fd = None
