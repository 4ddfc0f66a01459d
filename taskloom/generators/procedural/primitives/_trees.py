"""File-tree helpers shared by the families that work on a `FileTree`.

The files, archives and integrity primitives read trees one way: the same input test
(`tree_input`), the same first-step rule for steps that change a tree in place
(`first_step_only`), the same name and extension tests, and the same checks of a tree's
listing, bytes and modification times. The perms and script primitives hash file bytes
with `sha256` too.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

from taskloom.errors import Misplaced, NotApplicable
from taskloom.generators.procedural.artifacts import FileTree, TreeFile
from taskloom.generators.procedural.checks import Assertion, FileDigests, TreeListing
from taskloom.generators.procedural.primitives.base import Rule, StepContext, differs
from taskloom.generators.procedural.world import q


@dataclass(frozen=True)
class Mtimes(Assertion):
    """Files have these modification times (whole epoch seconds)."""

    mtimes: tuple[tuple[str, int], ...] = ()  # (path, epoch)

    def body(self) -> list[str]:
        """Lines of the test function body."""
        return [f"for path, mtime in {list(self.mtimes)!r}:",
                "    assert int(os.stat(path).st_mtime) == mtime, (path, os.stat(path).st_mtime)"]

    def reads(self) -> tuple[str, ...]:
        """The files (artifacts keep modification times, as tar does)."""
        return tuple(path for path, _ in self.mtimes)


def mtime_check(label: str, root: str, files, most: int = 6) -> list[Assertion]:
    """A check of preserved modification times on some files (none when times are unknown)."""
    known = [f for f in files if f.mtime is not None][:most]
    return [Mtimes(label, mtimes=tuple((f"{root}/{f.relpath}", f.mtime) for f in known))] \
        if known else []


def tree_input(source, *, mtimes: bool = False) -> FileTree:
    """The input as a non-empty file tree (with known mtimes when asked)."""
    if not isinstance(source, FileTree) or not source.files:
        raise NotApplicable("needs a non-empty file tree")
    if mtimes and any(f.mtime is None for f in source.files):
        raise NotApplicable("needs files whose modification times are known")
    return source


def first_step_only(ctx: StepContext, why: str) -> None:
    """Refuse to work on a tree that an earlier step made (and checks)."""
    if ctx.step != 1:
        raise Misplaced(f"{why}; only as the first step")


def basename(relpath: str) -> str:
    """The file name part of a relative path."""
    return relpath.rpartition("/")[2]


def extension(relpath: str) -> str:
    """The text after the last dot of the file name ('' when there is none)."""
    name = basename(relpath)
    return name.rpartition(".")[2] if "." in name.lstrip(".") else ""


def is_hidden(relpath: str) -> bool:
    """True for a dot file (a name starting with a dot)."""
    return basename(relpath).startswith(".")


def sha256(data: bytes) -> str:
    """Hex sha256 of some bytes."""
    return hashlib.sha256(data).hexdigest()


def moved_checks(label: str, root: str, files: list[TreeFile],
                 changed: list[TreeFile]) -> list[Assertion]:
    """The listing of a tree after a step, and the bytes of the files it moved or wrote."""
    checks: list[Assertion] = [TreeListing(label, root=root,
                                       expected=tuple(f.relpath for f in files))]
    if changed:
        checks.append(FileDigests.of(f"the files under {root} keep their content",
                                     {f"{root}/{f.relpath}": f.content for f in changed}))
    return checks


def extension_choice(ctx: StepContext, tree: FileTree, most: int) -> list[str]:
    """One or more extensions that match some files of the tree but not all."""
    counts: dict[str, int] = defaultdict(int)
    for f in tree.files:
        if extension(f.relpath):
            counts[extension(f.relpath)] += 1
    options = sorted(ext for ext in counts if counts[ext] < len(tree.files))
    if not options:
        raise NotApplicable("no extension matches only part of the files")
    chosen = ctx.rng.sample(options, min(len(options), ctx.rng.randint(1, most)))
    if sum(counts[ext] for ext in chosen) >= len(tree.files):
        chosen = chosen[:1]
    return sorted(chosen)


def ends_with(relpath: str, extensions: list[str]) -> bool:
    """True when the file name ends in `.EXT` for one of the extensions."""
    return any(basename(relpath).endswith("." + ext) for ext in extensions)


def name_tests(extensions: list[str]) -> str:
    """The find tests selecting file names that end in one of the extensions."""
    tests = " -o ".join(f"-name {q('*.' + ext)}" for ext in extensions)
    return f"\\( {tests} \\)" if len(extensions) > 1 else tests


def report_rules(compare: str, expected, wrong) -> tuple[Rule, ...]:
    """The rules of a report step that its data exercises.

    `wrong` holds (name, stated, solution ignoring the rule, the lines that solution
    writes); a rule counts when those lines fail the check of the `expected` ones.
    """
    return tuple(Rule(name, stated, ignored) for name, stated, ignored, naive in wrong
                 if differs(naive, expected, compare))


def top_level(relpath: str) -> bool:
    """True for a file directly in the tree's root (what `find -maxdepth 1` sees)."""
    return "/" not in relpath


def ext_words(extensions: list[str]) -> str:
    """The extensions for a sentence: `.a`, `.b` or `.c`."""
    names = [f"`.{ext}`" for ext in extensions]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


# The stdlib Python that alternative solutions of tree steps start with: the other tool
# family than find/sort/sha256sum. Paths are bytes (`os.fsencode`), so sorting them is byte
# order and names with spaces or non-ASCII letters go through unchanged. Passed as the
# prelude of `ctx.python`; reports end with a newline (`END`) only where the instruction
# demands exact bytes (strictness 3).
PY_TREE = r'''import calendar, fnmatch, hashlib, os, shutil, stat, sys, time
ARGS = [os.fsencode(arg) for arg in sys.argv[1:]]
def regular(base):
    """(path, path relative to base) of every regular file below base, hidden ones too."""
    for folder, _, names in os.walk(base):
        for name in names:
            path = os.path.join(folder, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                yield path, os.path.relpath(path, base)
def write(path, lines):
    with open(path, 'wb') as handle:
        handle.write(b'\n'.join(lines) + (END.encode() if lines else b''))
def epoch(text):
    """'YYYY-MM-DD HH:MM UTC' as epoch seconds."""
    return calendar.timegm(time.strptime(text, '%Y-%m-%d %H:%M UTC'))
def sha(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest().encode()
'''
