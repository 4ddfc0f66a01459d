"""File-tree sources: a directory of files, a tree with a sha256 manifest, a .tar.gz.

Trees hold duplicates and dated backups so search and pruning steps always apply, and
names stay unique after `normalized_name` so renaming never makes two files collide.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import posixpath
import string
import tarfile

from taskloom.generators.procedural.artifacts import Archive, ChecksumList, FileTree, TreeFile
from taskloom.generators.procedural.primitives.base import StepContext, source
from taskloom.generators.procedural.sources.common import data_dir, day, noisy, spaced
from taskloom.generators.procedural.world import DAY, EPOCH_NOW, lines_text

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_lower(text: str) -> str:
    """Text with A-Z made lowercase and every other character kept.

    What `tr 'A-Z' 'a-z'` and `find -iname` do to a name (str.lower also folds `Ä`).
    """
    return text.translate(_ASCII_LOWER)


def normalized_name(name: str) -> str:
    """A file name made lowercase (ASCII letters) with dashes for spaces.

    The rule of `files.rename_normalize`; sources keep these unique within a tree so the
    renaming never makes two files collide.
    """
    return ascii_lower(name).replace(" ", "-")


def _needs_normalizing(relpath: str) -> bool:
    name = relpath.rsplit("/", 1)[-1]
    return normalized_name(name) != name


TREE_BYTES = 1536 * 1024
"""Bytes of sizeable files one tree may hold; the files after that have at most 4 KiB.
Large trees get more files, not more megabytes: a task of 25 MB (200 files of up to
300 KiB, copied once by a backup step) cost ~1 GB of run memory and slowed every stage
that moves it, for no extra skill."""


def tree_files(ctx: StepContext, count: int) -> list[TreeFile]:
    """Files of a project/document tree: nested folders, sizes, ages and extensions.

    Sizes spread from empty to 300 KiB until the tree holds `TREE_BYTES`; the files after
    that are small.

    Some names are capitalized (as people name files); at edge-case level 2+ some have
    spaces, non-ASCII letters or upper case. Names stay unique after `normalized_name`.
    """
    domain = ctx.domain
    folders = ["", *ctx.rng.sample(("docs", "archive", "incoming", "shared", "2025", "old",
                                    "drafts", "exports"), 3)]
    files: dict[str, TreeFile] = {}
    taken: set[str] = set()
    spent = 0
    while len(files) < count:
        folder = ctx.rng.choice(folders)
        stem = ctx.rng.choice(domain.file_stems)
        number = ctx.rng.randint(1, 99)
        ext = ctx.rng.choice(domain.extensions)
        name = f"{stem}-{number:02d}.{ext}"
        roll = ctx.rng.random()
        if ctx.difficulty.edge_cases >= 2 and roll < 0.25:
            name = ctx.rng.choice([f"{stem} {number}.{ext}", f"{stem}-ñ{number}.{ext}",
                                   f"{stem.upper()}_{number}.{ext}"])
        elif roll > 0.85:
            name = f"{stem.capitalize()}-{number:02d}.{ext}"
        relpath = f"{folder}/{name}".lstrip("/")
        if normalized_name(relpath) in taken:
            continue
        taken.add(normalized_name(relpath))
        size = ctx.rng.choice((0, 1, 2, 5, 12, 40, 130, 300)) * 1024 + ctx.rng.randint(0, 900)
        if size == 0 and ctx.difficulty.edge_cases < 3:
            size = ctx.rng.randint(10, 900)
        if spent + size > TREE_BYTES:  # the budget is spent: only small files from here on
            size = ctx.rng.randint(10, 4096)
        spent += size
        word = ctx.rng.choice(domain.words)
        line = f"{word} {stem} {number}\n".encode()
        content = (line * (size // len(line) + 1))[:size]
        mtime = EPOCH_NOW - ctx.rng.randint(0, 400) * DAY - ctx.rng.randint(0, 86_000)
        files[relpath] = TreeFile(relpath, content, 0o644, mtime)
    if count >= 2 and not any(_needs_normalizing(name) for name in files):
        # Someone always saved a file with a capital letter (name normalization needs one).
        victim = files.pop(ctx.rng.choice(sorted(files)))
        folder, _, name = victim.relpath.rpartition("/")
        relpath = f"{folder}/{name[:1].upper()}{name[1:]}".lstrip("/")
        files[relpath] = TreeFile(relpath, victim.content, victim.mode, victim.mtime)
    return [files[name] for name in sorted(files)]


def _duplicates(ctx: StepContext, files: list[TreeFile]) -> list[TreeFile]:
    """Copies of some files under other names or folders (same bytes, later mtime).

    The biggest file is always copied (so two large files have the same size); from noise
    level 2 a top-level editor backup `NAME.EXT.bak` is a copy too (a name that contains
    an extension without ending in it).
    """
    taken = {normalized_name(f.relpath) for f in files}
    folders = sorted({f.relpath.rpartition("/")[0] for f in files})
    originals = [f for f in files if f.content]
    if not originals:
        return []
    biggest = max(originals, key=lambda f: (len(f.content), f.relpath))
    copies: list[TreeFile] = []
    attempts = min(len(originals), ctx.count((1, 2), (2, 4), (3, 6)))
    for number in range(attempts + 4):  # the first ones until the biggest file is copied
        if number >= attempts and copies:
            break
        original = ctx.rng.choice(originals) if copies else biggest
        name = original.relpath.rpartition("/")[2]
        base, dot, ext = name.partition(".")
        folder = ctx.rng.choice(folders)
        choices = [name, f"{base}-copy{dot}{ext}", f"{base}-2{dot}{ext}"]
        if ctx.difficulty.edge_cases >= 2:
            choices.append(f"{base} (1){dot}{ext}")
        relpath = f"{folder}/{ctx.rng.choice(choices)}".lstrip("/")
        if normalized_name(relpath) in taken:
            continue
        taken.add(normalized_name(relpath))
        mtime = min(EPOCH_NOW - 3600, (original.mtime or EPOCH_NOW) +
                    ctx.rng.randint(1, 30) * DAY)
        copies.append(TreeFile(relpath, original.content, original.mode, mtime))
    if ctx.difficulty.noise >= 2:
        original = ctx.rng.choice(originals)
        relpath = original.relpath.rpartition("/")[2] + ".bak"
        if normalized_name(relpath) not in taken:
            copies.append(TreeFile(relpath, original.content, original.mode,
                                   min(EPOCH_NOW - 3600, (original.mtime or EPOCH_NOW) + DAY)))
    return copies


def _round_size(ctx: StepContext, files: list[TreeFile]) -> list[TreeFile]:
    """The files, one of the biggest (not the biggest) cut to a power-of-two KiB.

    A preallocated image or a padded export: a size threshold may then fall exactly on a
    file, where "larger than" and "at least" differ.
    """
    sizeable = sorted((f for f in files if len(f.content) >= 1024),
                      key=lambda f: (-len(f.content), f.relpath))
    if len(sizeable) < 2:
        return files
    victim = sizeable[ctx.rng.randint(1, min(3, len(sizeable) - 1))]
    size = 1024 << ((len(victim.content) // 1024).bit_length() - 1)
    cut = TreeFile(victim.relpath, victim.content[:size], victim.mode, victim.mtime)
    return [cut if f is victim else f for f in files]


def _empty_files(ctx: StepContext, files: list[TreeFile]) -> list[TreeFile]:
    """Two empty `untitled.txt` placeholders (empty files all have the same bytes)."""
    taken = {normalized_name(f.relpath) for f in files}
    folders = sorted({f.relpath.rpartition("/")[0] for f in files})
    empty = []
    for folder in ctx.rng.sample(folders, min(2, len(folders))):
        for name in ("untitled.txt", "untitled-2.txt", "untitled-3.txt"):
            relpath = f"{folder}/{name}".lstrip("/")
            if normalized_name(relpath) not in taken:
                taken.add(normalized_name(relpath))
                empty.append(TreeFile(relpath, b"", 0o644,
                                      EPOCH_NOW - ctx.rng.randint(1, 200) * DAY))
                break
    return empty


def _dated_backups(ctx: StepContext) -> list[TreeFile]:
    """A folder of backups named `PREFIX-YYYY-MM-DD.EXT` (one per day or week)."""
    folder = ctx.rng.choice(("backups", "snapshots", "nightly", "Backups", "Snapshots"))
    if ctx.difficulty.edge_cases == 3:
        folder = f"{folder} (nas)"
    prefix = f"{ctx.domain.name}-{ctx.rng.choice(('db', 'site', 'data', 'config'))}"
    ext = ctx.rng.choice(("tar.gz", "sql.gz", "zip"))
    every = ctx.rng.choice((1, 1, 2, 7)) * DAY
    moment = EPOCH_NOW - ctx.rng.randint(1, 3) * DAY
    moment -= moment % DAY
    series = []
    for _ in range(ctx.count((5, 7), (8, 14), (15, 30))):
        stamp = day(moment)
        content = f"{prefix} backup taken {stamp}\n".encode() * ctx.rng.randint(20, 400)
        series.append(TreeFile(f"{folder}/{prefix}-{stamp}.{ext}", content, 0o644,
                               moment + 2 * 3600 + ctx.rng.randint(0, 3000)))
        moment -= every
    extras = []
    if ctx.difficulty.noise >= 2:  # look-alikes that are not dated backups
        newest = series[0]
        extras.append(TreeFile(f"{folder}/{prefix}-latest.{ext}", newest.content, 0o644,
                               newest.mtime))
        extras.append(TreeFile(f"{folder}/README.txt",
                               b"Nightly backups are written here by the backup job.\n",
                               0o644, EPOCH_NOW - 200 * DAY))
    if ctx.difficulty.noise == 3:
        partial = series[ctx.rng.randrange(len(series))]
        extras.append(TreeFile(f"{partial.relpath}.partial", partial.content[:100], 0o644,
                               partial.mtime))
    return series + extras


@source("file_tree")
def file_tree(ctx: StepContext) -> FileTree:
    """A directory of assorted files with realistic sizes and ages.

    Besides the domain's files it holds a few duplicates (same bytes, another name or
    folder) and a folder of dated backups, so search and pruning skills always apply; one
    file has a round size, and from edge-case level 2 two empty files are placeholders.
    """
    root = data_dir(ctx, ctx.rng.choice(("files", "share", "library", "storage")))
    files = _round_size(ctx, tree_files(ctx, ctx.count((6, 10), (20, 45), (80, 200))))
    files += _duplicates(ctx, files)
    if ctx.difficulty.edge_cases >= 2:
        files += _empty_files(ctx, files)
    files += _dated_backups(ctx)
    for item in files:
        ctx.world.add(f"{root}/{item.relpath}", item.content, mode=item.mode, mtime=item.mtime)
    for index in range(noisy(ctx)):
        hidden = TreeFile(f".cache-{index}.tmp", b"temporary\n", 0o644, EPOCH_NOW - DAY)
        files.append(hidden)
        ctx.world.add(f"{root}/{hidden.relpath}", hidden.content, mtime=hidden.mtime)
    return FileTree(path=root, phrase=f"the directory `{root}`",
                    files=tuple(sorted(files, key=lambda f: f.relpath)))


@source("checksum_list")
def checksum_list(ctx: StepContext) -> ChecksumList:
    """A tree with a sha256 manifest made before some files were corrupted or removed.

    The manifest lists the files in walk order (as `find -exec sha256sum` writes it), so a
    report that must be sorted is not sorted already.
    """
    tree = file_tree(ctx)
    listed = [f for f in tree.files if not f.relpath.startswith(".")]
    content = {f.relpath: f.content for f in listed}
    manifest = tuple(f"{hashlib.sha256(content[name]).hexdigest()}  {name}"
                     for name in _walk_order(ctx, list(content)) if not name.endswith("/"))
    victims = ctx.rng.sample(listed, k=min(len(listed), 3, len(listed) // 5 + 1))
    changed, removed = (victims[:-1], victims[-1:]) if len(victims) > 1 else (victims, [])
    files = {f.relpath: f for f in tree.files}
    for victim in changed:
        damaged = victim.content[:-1] + b"#" if victim.content else b"#"
        files[victim.relpath] = TreeFile(victim.relpath, damaged, victim.mode, victim.mtime)
        ctx.world.add(f"{tree.path}/{victim.relpath}", damaged, mtime=victim.mtime)
    for victim in removed:
        del files[victim.relpath]
        del ctx.world.files[posixpath.normpath(f"{tree.path}/{victim.relpath}")]
    path = f"{tree.path}/SHA256SUMS"
    text = lines_text(manifest)
    ctx.world.add(path, text)
    current = FileTree(path=tree.path, phrase=tree.phrase,
                       files=tuple(files[name] for name in sorted(files)))
    return ChecksumList(path=path, phrase=f"the checksum manifest `{path}`", lines=manifest,
                        tree=current)


def _walk_order(ctx: StepContext, relpaths: list[str]) -> list[str]:
    """The paths in the order `tar` or `find` walks their folders.

    Depth first, a folder's entries in an arbitrary (readdir) order, each folder as a
    `name/` entry before its contents.
    """
    children: dict[str, set[str]] = {}
    for relpath in relpaths:
        parts = relpath.split("/")
        for depth in range(len(parts)):
            entry = "/".join(parts[:depth + 1]) + ("/" if depth < len(parts) - 1 else "")
            children.setdefault("/".join(parts[:depth]), set()).add(entry)
    order: list[str] = []

    def walk(folder: str) -> None:
        entries = sorted(children.get(folder, ()))
        ctx.rng.shuffle(entries)
        for entry in entries:
            order.append(entry)
            if entry.endswith("/"):
                walk(entry[:-1])

    walk("")
    return order


def tar_gz(members: list[tuple[str, bytes]], mtime: int = EPOCH_NOW) -> bytes:
    """A deterministic .tar.gz (fixed times, owners and gzip header).

    A member whose name ends in `/` is a directory entry (as `tar -c` of a folder stores).
    """
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            if name.endswith("/"):
                info.type, info.size, info.mode = tarfile.DIRTYPE, 0, 0o755
            info.uname = info.gname = "root"
            archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return gzip.compress(raw.getvalue(), mtime=0)


@source("archive")
def archive(ctx: StepContext) -> Archive:
    """A .tar.gz backup of a folder of the domain's files.

    Made as `tar -czf` of the folder makes it: directory entries included, members in walk
    order (not sorted). `members` are the file members in that order.
    """
    files = tree_files(ctx, ctx.count((4, 8), (15, 30), (50, 120)))
    top = ctx.rng.choice(("export", "backup", "bundle"))
    content = {f"{top}/{f.relpath}": f.content for f in files}
    stored = [(name, content.get(name, b"")) for name in _walk_order(ctx, list(content))]
    members = [(name, data) for name, data in stored if not name.endswith("/")]
    stamp = day(EPOCH_NOW - ctx.rng.randint(1, 30) * DAY)
    path = f"{data_dir(ctx, 'backups')}/{spaced(ctx, f'{top}-{stamp}.tar.gz')}"
    ctx.world.add(path, tar_gz(stored))
    return Archive(path=path, phrase=f"the archive `{path}`", format="tar.gz",
                   members=tuple(members))
