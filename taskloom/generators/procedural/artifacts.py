"""Artifacts: typed, generation-time descriptions of what a step reads or writes.

An artifact says where a thing is and what it holds, in Python terms (lines, records,
rows, members, commits), so a primitive can compute its expected output exactly. `kind`
matches an artifact type of the skill graph; `phrase` is how the instruction refers to it
("the ERROR lines of /var/log/app/app.log").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from taskloom.generators.procedural.programs import Program
from taskloom.generators.procedural.world import lines_text


@dataclass(frozen=True, eq=False)
class Artifact:
    """Base of every artifact."""

    path: str
    phrase: str
    kind: ClassVar[str] = "artifact"


@dataclass(frozen=True, eq=False)
class TextFile(Artifact):
    """A text file as lines (without newlines)."""

    lines: tuple[str, ...] = ()
    kind: ClassVar[str] = "text_file"

    def text(self) -> str:
        """The file content, one line per line, newline-terminated."""
        return lines_text(self.lines)


@dataclass(frozen=True)
class AppRecord:
    """One application log record."""

    timestamp: str  # 2025-11-29T13:04:05Z
    level: str  # DEBUG INFO WARN ERROR
    component: str
    message: str

    def line(self) -> str:
        """The record in the shipped log format."""
        return f"{self.timestamp} {self.level} [{self.component}] {self.message}"


@dataclass(frozen=True, eq=False)
class AppLog(TextFile):
    """An application log: `TIMESTAMP LEVEL [component] message` per line, some malformed."""

    records: tuple[AppRecord, ...] = ()
    kind: ClassVar[str] = "app_log"


@dataclass(frozen=True)
class AccessRecord:
    """One web access log record (nginx combined format)."""

    ip: str
    time: str  # 29/Nov/2025:13:04:05 +0000
    method: str
    path: str
    status: int
    size: int
    agent: str

    def line(self) -> str:
        """The record in nginx's combined log format."""
        return (f'{self.ip} - - [{self.time}] "{self.method} {self.path} HTTP/1.1" '
                f'{self.status} {self.size} "-" "{self.agent}"')


@dataclass(frozen=True, eq=False)
class AccessLog(TextFile):
    """A web server access log, some lines malformed."""

    records: tuple[AccessRecord, ...] = ()
    kind: ClassVar[str] = "access_log"


@dataclass(frozen=True, eq=False)
class LogDir(Artifact):
    """A directory of application logs, one per service."""

    logs: tuple[AppLog, ...] = ()
    mtimes: tuple[int | None, ...] = ()  # per log; None when a step just rewrote it
    kind: ClassVar[str] = "log_dir"


@dataclass(frozen=True, eq=False)
class CsvTable(Artifact):
    """A CSV file with a header row; every value a string as written."""

    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    numeric: tuple[str, ...] = ()  # columns holding numbers
    kind: ClassVar[str] = "csv_table"

    def text(self) -> str:
        """The file content (no quoting: generated values never hold commas or quotes)."""
        return lines_text(",".join(row) for row in (self.header, *self.rows))

    def column(self, name: str) -> int:
        """Index of a column."""
        return self.header.index(name)


@dataclass(frozen=True, eq=False)
class JsonDoc(Artifact):
    """A JSON array of flat objects."""

    records: tuple[dict, ...] = ()
    kind: ClassVar[str] = "json_doc"


@dataclass(frozen=True, eq=False)
class SqliteDb(Artifact):
    """An SQLite database with one table of interest."""

    table: str = ""
    columns: tuple[tuple[str, str], ...] = ()  # (name, SQL type)
    rows: tuple[tuple, ...] = ()
    kind: ClassVar[str] = "sqlite_db"


@dataclass(frozen=True, eq=False)
class Archive(Artifact):
    """An archive file and the members it holds."""

    format: str = "tar.gz"  # tar.gz, tar, zip
    members: tuple[tuple[str, bytes], ...] = ()
    kind: ClassVar[str] = "archive"


@dataclass(frozen=True)
class TreeFile:
    """One file of a file tree, relative to the tree root."""

    relpath: str
    content: bytes
    mode: int = 0o644
    mtime: int | None = None
    owner: str = "root"
    group: str = "root"


@dataclass(frozen=True, eq=False)
class FileTree(Artifact):
    """A directory of files (the tree root is `path`)."""

    files: tuple[TreeFile, ...] = ()
    kind: ClassVar[str] = "file_tree"

    def names(self) -> list[str]:
        """Relative paths, sorted."""
        return sorted(f.relpath for f in self.files)


@dataclass(frozen=True, eq=False)
class ChecksumList(TextFile):
    """A sha256sum manifest, with the tree it describes."""

    tree: FileTree | None = None
    kind: ClassVar[str] = "checksum_list"


@dataclass(frozen=True)
class Commit:
    """One commit of a generated git history."""

    message: str
    author: str
    email: str
    date: int  # epoch seconds
    files: tuple[tuple[str, str], ...]  # (path, new content); content "" deletes

    def touched(self) -> list[str]:
        """Paths this commit changes."""
        return [path for path, _ in self.files]


@dataclass(frozen=True, eq=False)
class GitRepo(Artifact):
    """A git repository and its history (oldest commit first)."""

    commits: tuple[Commit, ...] = ()
    branch: str = "main"
    kind: ClassVar[str] = "git_repo"


@dataclass(frozen=True, eq=False)
class ConfigFile(TextFile):
    """An INI-style config: [section] then key = value lines."""

    entries: tuple[tuple[str, str, str], ...] = ()  # (section, key, value)
    kind: ClassVar[str] = "config_file"


@dataclass(frozen=True, eq=False)
class Script(TextFile):
    """An executable shell script."""

    group: str = ""  # the group whose members alone (with root) may run it, when one is
    kind: ClassVar[str] = "script"


@dataclass(frozen=True, eq=False)
class ProgramFile(Artifact):
    """A working program of the catalogue, installed at `path` (executable)."""

    program: Program | None = None
    kind: ClassVar[str] = "python_program"


@dataclass(frozen=True, eq=False)
class ToolScript(Script):
    """A script written by the agent to a contract; its text is unknown in advance."""

    sample: tuple[str, ...] = ()  # arguments of a typical run, on the example input
    sample_output: str = ""  # what that run prints
    sample_text: str = ""  # the example input's content


@dataclass(frozen=True, eq=False)
class Report(TextFile):
    """A computed result a person would read."""

    kind: ClassVar[str] = "text_report"


@dataclass(frozen=True, eq=False)
class CronJob(Artifact):
    """A scheduled job installed in a crontab."""

    user: str = "root"
    schedule: str = ""
    command: str = ""
    kind: ClassVar[str] = "cron_job"


@dataclass(frozen=True, eq=False)
class Accounts(Artifact):
    """Users that exist on the system after a step (path: where they are listed)."""

    users: tuple[tuple[str, str, tuple[str, ...]], ...] = field(default=())  # name, shell, groups
    kind: ClassVar[str] = "account_set"
