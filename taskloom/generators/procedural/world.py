"""The world model: the environment a procedural task starts from, built up by its steps.

Sources and primitives add files (content, mode, owner, mtime), users and groups, and
setup commands (git history, SQLite loads) to the `World`; the assembler turns it into
`environment/` (files COPY'd to their absolute paths) plus one RUN that sets owners, modes,
times and runs the setup commands. Everything is deterministic: no clock, no global RNG.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field

# A fixed "now" for generated data: tasks must not depend on when they are built or run.
EPOCH_NOW = 1_764_460_800  # 2025-11-30T00:00:00Z
DAY = 86_400


# The accounts of the base image (taskloom/base:2, Debian bookworm minbase and cron), by
# name and id; tests/test_world.py reads them from the image. Checks hold accounts to these
# ids: an account the agent renamed, renumbered or took over is not the one asked for.
BASE_USERS = {"root": 0, "daemon": 1, "bin": 2, "sys": 3, "sync": 4, "games": 5, "man": 6,
              "lp": 7, "mail": 8, "news": 9, "uucp": 10, "proxy": 13, "www-data": 33,
              "backup": 34, "list": 38, "irc": 39, "_apt": 42, "nobody": 65534}
BASE_GROUPS = {"root": 0, "daemon": 1, "bin": 2, "sys": 3, "adm": 4, "tty": 5, "disk": 6,
               "lp": 7, "mail": 8, "news": 9, "uucp": 10, "man": 12, "proxy": 13, "kmem": 15,
               "dialout": 20, "fax": 21, "voice": 22, "cdrom": 24, "floppy": 25, "tape": 26,
               "sudo": 27, "audio": 29, "dip": 30, "www-data": 33, "backup": 34,
               "operator": 37, "list": 38, "irc": 39, "src": 40, "shadow": 42, "utmp": 43,
               "video": 44, "sasl": 45, "plugdev": 46, "staff": 50, "games": 60,
               "users": 100, "nogroup": 65534, "crontab": 101}
FIRST_GROUP_ID = 3000  # the world's groups, in the order declared
FIRST_USER_ID = 4000  # the world's users, each with its own group of the same id


def q(path: str) -> str:
    """Shell-quote a path or word for a generated script."""
    return shlex.quote(path)


def lines_text(lines) -> str:
    """Lines as file text: each line newline-terminated, so the last one too."""
    return "".join(line + "\n" for line in lines)


@dataclass
class FileSpec:
    """One file of the environment."""

    content: bytes
    mode: int = 0o644
    owner: str = "root"
    group: str = "root"
    mtime: int | None = None  # epoch seconds; None keeps the build time


@dataclass
class World:
    """Files, users and setup commands of a task's environment."""

    workdir: str = "/app"
    files: dict[str, FileSpec] = field(default_factory=dict)
    dirs: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    users: dict[str, tuple[str, ...]] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def add(self, path: str, content: str | bytes, *, mode: int = 0o644, owner: str = "root",
            group: str = "root", mtime: int | None = None) -> str:
        """Add a file at an absolute path (replacing one already there); returns the path."""
        if not path.startswith("/"):
            raise ValueError(f"world paths are absolute, got {path!r}")
        data = content.encode("utf-8") if isinstance(content, str) else content
        self.files[posixpath.normpath(path)] = FileSpec(data, mode, owner, group, mtime)
        return path

    def mkdir(self, path: str, *, mode: int = 0o755, owner: str = "root",
              group: str = "root") -> str:
        """Declare a directory (created even when empty)."""
        self.dirs[posixpath.normpath(path)] = (mode, owner, group)
        return path

    def add_group(self, name: str) -> None:
        """Declare a group (created before any file is owned by it)."""
        if name not in self.groups and name != "root":
            self.groups.append(name)

    def add_user(self, name: str, *groups: str) -> None:
        """Declare a user with supplementary groups."""
        for group in groups:
            self.add_group(group)
        self.users[name] = tuple(dict.fromkeys(self.users.get(name, ()) + groups))

    def exists(self, path: str) -> bool:
        """True when a file or declared directory is at `path` (or below it)."""
        path = posixpath.normpath(path)
        prefix = path.rstrip("/") + "/"
        return (path in self.files or path in self.dirs or
                any(p.startswith(prefix) for p in self.files))

    def image_accounts(self) -> tuple[dict[str, int], dict[str, int]]:
        """(users, groups) of the built image, name -> id: the base image's and the world's."""
        users, groups = dict(BASE_USERS), dict(BASE_GROUPS)
        for number, group in enumerate(g for g in self.groups if g not in BASE_GROUPS):
            groups[group] = FIRST_GROUP_ID + number
        for number, user in enumerate(u for u in self.users if u not in BASE_USERS):
            users[user] = FIRST_USER_ID + number
            groups.setdefault(user, users[user])
        return users, groups

    def setup_script(self) -> str:
        """Shell lines that set owners, modes and times, then run the setup commands."""
        lines = []
        users, groups = self.image_accounts()
        for group in self.groups:
            if group not in BASE_GROUPS:
                lines.append(f"groupadd -g {groups[group]} {q(group)}")
        for user, member_of in self.users.items():
            extra = f" -G {q(','.join(member_of))}" if member_of else ""
            if user not in BASE_USERS:
                primary = f"-g {q(user)}" if user in self.groups else "-U"
                lines.append(f"useradd -u {users[user]} {primary} -m -s /bin/bash{extra} "
                             f"{q(user)}")
            elif member_of:
                lines.append(f"usermod -a{extra} {q(user)}")
        for path, (mode, owner, group) in sorted(self.dirs.items()):
            lines.append(f"mkdir -p {q(path)} && chmod {mode:o} {q(path)} && "
                         f"chown {q(owner)}:{q(group)} {q(path)}")
        for path, spec in sorted(self.files.items()):
            if (spec.owner, spec.group) != ("root", "root"):
                lines.append(f"chown {q(spec.owner)}:{q(spec.group)} {q(path)}")
            # A git checkout keeps only 644 and 755, a copy under umask 022 drops group and
            # other write: any other mode is set here (after chown, which clears setuid).
            if spec.mode not in (0o644, 0o755):
                lines.append(f"chmod {spec.mode:o} {q(path)}")
        lines.extend(self.commands)
        for path, spec in sorted(self.files.items()):
            if spec.mtime is not None:
                lines.append(f"touch -h -d @{spec.mtime} {q(path)}")
        if any(path.startswith("/tmp/") for path in self.files):
            # COPY of the context's tmp/ folder made /tmp 0755: the image's is 1777, and a
            # job run as another user (or the agent's mktemp) needs it so.
            lines.append("chmod 1777 /tmp")
        return "\n".join(lines)
