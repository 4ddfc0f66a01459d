"""A task folder as exact bytes: its files, a reproducible tar.gz, and Harbor's digest.

Exports carry each task folder byte for byte (a foreign task.toml is not re-serialized),
so importing an export gives back folders identical to the originals: same paths, same
bytes, same permission bits.

`harbor_digest` is the content hash Harbor pins tasks by in a dataset manifest
(`[[tasks]] digest = "sha256:<hex>"` in dataset.toml): SHA-256 over the sorted records
`<relative path> NUL <sha256 hex of the file> LF` of task.toml, instruction.md, README.md
and every file under environment/, solution/ and tests/ (the record format of Harbor's
package publisher, as documented by the Harbor-format loaders that verify it).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import stat
import tarfile
from pathlib import PurePosixPath

from taskloom.errors import TaskFolderError
from taskloom.models import TaskFile

_DIGEST_FILES = frozenset({"task.toml", "instruction.md", "README.md"})
_DIGEST_DIRS = ("environment/", "solution/", "tests/")


def harbor_digest(files: tuple[TaskFile, ...]) -> str:
    """Harbor's content hash of a task folder, `sha256:<hex>`."""
    records = sorted(f"{f.path}\0{hashlib.sha256(f.content).hexdigest()}\n"
                     for f in files if f.path in _DIGEST_FILES or f.path.startswith(_DIGEST_DIRS))
    return "sha256:" + hashlib.sha256("".join(records).encode("utf-8")).hexdigest()


def pack(name: str, files: tuple[TaskFile, ...]) -> bytes:
    """A reproducible tar.gz of a folder's files.

    Entries are `<name>/<path>`, sorted, owned by root, with zero timestamps, so the same
    files always give the same bytes.
    """
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as zipped, \
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(files, key=lambda f: f.path):
            info = tarfile.TarInfo(f"{name}/{entry.path}")
            info.size = len(entry.content)
            info.mode = entry.mode
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(entry.content))
    return buffer.getvalue()


def unpack(archive: bytes, *, source: str) -> tuple[str, tuple[TaskFile, ...]]:
    """The folder name and files inside an archive made by `pack`.

    Raises:
        TaskFolderError: An entry is not a regular file or would land outside the folder.
    """
    names: set[str] = set()
    files = []
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            if member.isdir():
                continue
            if (not member.isfile() or len(parts) < 2 or member.name.startswith("/")
                    or ".." in parts):
                raise TaskFolderError(f"unsafe archive entry {member.name!r}", path=source,
                                      fix="re-export the dataset with `taskloom export`")
            names.add(parts[0])
            content = tar.extractfile(member).read()
            files.append(TaskFile(path="/".join(parts[1:]), content=content,
                                    mode=stat.S_IMODE(member.mode)))
    if len(names) != 1:
        raise TaskFolderError(f"archive holds {len(names)} top-level folders, expected one",
                              path=source, fix="re-export the dataset with `taskloom export`")
    return names.pop(), tuple(sorted(files, key=lambda f: f.path))
