"""git's hash model: the trees and commits of a generated history, hashed as git does.

What the git and security families share: a history whose authors, committers and dates
are fixed when the image is built has every commit hash known here; a commit the task makes
(`NewCommit`) gets its date when the agent runs git, so its hash, and every one after it, is
unknown. And what every step that changes a repository leaves: a clean working tree.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from taskloom.generators.procedural.artifacts import Commit, GitRepo
from taskloom.generators.procedural.checks import Assertion


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



# What a git command half done leaves in `.git` (a REVERT_HEAD, a paused rebase, a
# MERGE_HEAD and a CHERRY_PICK_HEAD each earned 1: forger).
IN_PROGRESS = ("REVERT_HEAD", "CHERRY_PICK_HEAD", "MERGE_HEAD", "sequencer", "rebase-merge",
               "rebase-apply", "BISECT_LOG")


@dataclass(frozen=True)
class CleanTree(Assertion):
    """The repository is left clean.

    Its working tree and index match HEAD, nothing untracked or ignored either (an
    untracked `.gitignore` of `*` hid junk from a plain `git status --porcelain`), no git
    command is half done. HEAD is one of `branches` when they are given, else with
    `attached` some branch (a HEAD detached at the old tip kept a reverted change in the
    files): only the last step says, since a later step may check out another branch.
    """

    repo: str = ""
    branches: tuple[str, ...] = ()
    attached: bool = False

    def body(self) -> list[str]:
        heads = [f"## {branch}" for branch in self.branches]
        lines = [
            f"status = _run(['git', '-C', {self.repo!r}, 'status', '--porcelain', "
            "'--ignored', '--branch']).splitlines()",
            "assert status[1:] == [], status[1:]"]
        if heads:
            lines.append(f"assert status[0] in {heads!r}, status[0]")
        elif self.attached:
            lines.append("assert status[0] != '## HEAD (no branch)', 'HEAD is detached'")
        return [
            *lines,
            f"for mark in {list(IN_PROGRESS)!r}:",
            f"    assert not os.path.lexists(os.path.join({self.repo!r}, '.git', mark)), "
            "f'{mark}: a git command is half done'"]

    def reads(self) -> tuple[str, ...]:
        """The repository."""
        return (self.repo,)


def clean_tree(repo: str, *branches: str, attached: bool = False) -> CleanTree:
    """The check that `repo` is left clean, on one of `branches` if any are given."""
    if branches:
        where = " or ".join(branches)
        return CleanTree(f"{where} is checked out and the working tree is clean", repo=repo,
                         branches=branches)
    if attached:
        return CleanTree("a branch is checked out and the working tree is clean", repo=repo,
                         attached=True)
    return CleanTree("the working tree is clean", repo=repo)
