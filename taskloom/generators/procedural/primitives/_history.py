"""git's hash model: the trees and commits of a generated history, hashed as git does.

What the git and security families share: a history whose authors, committers and dates
are fixed when the image is built has every commit hash known here; a commit the task makes
(`NewCommit`) gets its date when the agent runs git, so its hash, and every one after it, is
unknown.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from taskloom.generators.procedural.artifacts import Commit, GitRepo


@dataclass(frozen=True)
class NewCommit(Commit):
    """A commit the task makes: its date, and so its hash, is only known at run time."""


def tree_at(commits: tuple[Commit, ...] | list[Commit]) -> dict[str, str]:
    """Path -> content after applying the commits in order (content "" deletes)."""
    state: dict[str, str] = {}
    for commit in commits:
        for path, content in commit.files:
            if content:
                state[path] = content
            else:
                state.pop(path, None)
    return state


def tree_id(files: dict[str, str]) -> str:
    """The git tree id of regular files (mode 100644) at these paths."""
    root: dict = {}
    for path, content in files.items():
        node = root
        *folders, name = path.split("/")
        for folder in folders:
            node = node.setdefault(folder, {})
        node[name] = content

    def write(node: dict) -> bytes:
        entries = []
        for name, value in node.items():
            raw = name.encode()
            if isinstance(value, dict):
                entries.append((raw + b"/", b"40000 " + raw + b"\0" + write(value)))
            else:
                data = value.encode()
                blob = hashlib.sha1(b"blob %d\0" % len(data) + data).digest()
                entries.append((raw, b"100644 " + raw + b"\0" + blob))
        body = b"".join(entry for _, entry in sorted(entries))
        return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()

    return write(root).hex()


def commit_hashes(repo: GitRepo) -> list[str | None]:
    """The hash of every commit of the branch, oldest first.

    None from the first commit the task makes on: its date is not known in advance.
    """
    hashes: list[str | None] = []
    parent: str | None = None
    for index, commit in enumerate(repo.commits):
        if isinstance(commit, NewCommit) or (index and parent is None):
            hashes.append(None)
            parent = None
            continue
        person = f"{commit.author} <{commit.email}> {commit.date} +0000"
        header = f"tree {tree_id(tree_at(repo.commits[:index + 1]))}\n"
        if parent:
            header += f"parent {parent}\n"
        body = f"{header}author {person}\ncommitter {person}\n\n{commit.message}\n".encode()
        parent = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        hashes.append(parent)
    return hashes
