"""Archive and backup primitives: tar and zip archives, dated backups, rsync mirrors.

Archive member names are given exactly in every instruction (`TOP/relative/path` or the
bare relative path, never a leading `./`), because the checks compare them. Listings skip
directory entries (names ending in `/`). Info-ZIP's `zip` stores UTF-8 names without the
UTF-8 flag, which Python's zipfile reads as cp437: `ArchiveMembers` undoes that.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Archive, FileTree, Report, TreeFile
from taskloom.generators.procedural.checks import (
    ArchiveMembers,
    FileText,
    TreeListing,
)
from taskloom.generators.procedural.primitives._trees import (
    basename,
    ends_with,
    ext_words,
    extension,
    extension_choice,
    first_step_only,
    is_hidden,
    moved_checks,
    mtime_check,
    name_tests,
    sha256,
    tree_input,
)
from taskloom.generators.procedural.primitives.base import StepContext, StepResult, primitive
from taskloom.generators.procedural.world import DAY, lines_text, q

# The alternatives below are written from the instruction sentences alone, with Python's
# tarfile/zipfile/os/shutil in place of tar, zip, find, sort and rsync.
_PACK_TAR = r"""import fnmatch, os, sys, tarfile
src, out, top, patterns = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with tarfile.open(out, 'w:gz') as archive:
    for folder, dirs, names in os.walk(src):
        for name in names:
            if any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, src)
            archive.add(path, arcname=os.path.join(top, rel) if top else rel, recursive=False)
"""

_READ_MEMBERS = r"""import os, sys, tarfile, zipfile
def members(path):
    # (name, bytes) of the file members; zip names without the UTF-8 flag are UTF-8 bytes
    # that zipfile decoded as cp437 (Info-ZIP writes them so)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = info.filename
                if not info.flag_bits & 0x800:
                    try:
                        name = name.encode('cp437').decode('utf-8')
                    except UnicodeError:
                        pass
                if not name.endswith('/'):
                    yield name, archive.read(info)
    else:
        with tarfile.open(path) as archive:
            for member in archive:
                if not member.isdir():
                    yield member.name, archive.extractfile(member).read()
"""

_EXTRACT = _READ_MEMBERS + r"""src, dest, top = sys.argv[1:4]
os.makedirs(dest, exist_ok=True)
for name, data in members(src):
    name = name.lstrip('/')
    while name.startswith('./'):
        name = name[2:].lstrip('/')
    if top:
        name = name.split('/', 1)[1]
    target = os.path.join(dest, name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, 'wb') as handle:
        handle.write(data)
"""

_LIST = _READ_MEMBERS + r"""src, out, top = sys.argv[1:4]
names = [name.split('/', 1)[1] if top else name for name, _ in members(src)]
names.sort(key=lambda name: name.encode('utf-8', 'surrogateescape'))
with open(out, 'wb') as handle:
    for name in names:
        handle.write(name.encode('utf-8', 'surrogateescape') + b'\n')
"""

_ZIP = r"""import os, sys, zipfile
src, out, top, endings = sys.argv[1], sys.argv[2], sys.argv[3], tuple(sys.argv[4:])
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as archive:
    for folder, dirs, names in os.walk(src):
        for name in names:
            if name.endswith(endings):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, src)
                archive.write(path, os.path.join(top, rel) if top else rel)
"""

_PRUNE = r"""import os, sys
folder, pattern, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
head, tail = pattern.split('YYYY-MM-DD')
def date(name):
    # the YYYY-MM-DD in a name of the series, else None
    if not (name.startswith(head) and name.endswith(tail)):
        return None
    middle = name[len(head):len(name) - len(tail)]
    parts = middle.split('-')
    sizes = [len(part) for part in parts]
    if sizes == [4, 2, 2] and all(c in '0123456789' for c in ''.join(parts)):
        return middle
    return None
series = [(date(name), name) for name in os.listdir(folder)
          if date(name) and os.path.isfile(os.path.join(folder, name))]
series.sort(reverse=True)
for _, name in series[keep:]:
    os.remove(os.path.join(folder, name))
"""

_MIRROR = r"""import fnmatch, os, shutil, sys
src, dest, patterns = sys.argv[1], sys.argv[2], sys.argv[3:]
wanted = set()
for folder, dirs, names in os.walk(src):
    for name in names:
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        rel = os.path.relpath(os.path.join(folder, name), src)
        wanted.add(rel)
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        elif os.path.lexists(target):
            os.remove(target)
        shutil.copy2(os.path.join(folder, name), target)
for folder, dirs, names in os.walk(dest, topdown=False):
    for name in names:
        path = os.path.join(folder, name)
        if os.path.relpath(path, dest) not in wanted:
            os.remove(path)
    for name in dirs:
        path = os.path.join(folder, name)
        if os.path.islink(path):
            os.remove(path)
        elif not os.path.isdir(os.path.join(src, os.path.relpath(path, dest))):
            shutil.rmtree(path)
"""


def _digests(members) -> tuple[tuple[str, str], ...]:
    return tuple((name, sha256(data)) for name, data in members)


def _archive_input(source) -> Archive:
    if not isinstance(source, Archive) or not source.members:
        raise NotApplicable("needs an archive with members")
    return source


def _clean(name: str) -> str:
    """Where a member lands when extracted: no leading `./` or `/`."""
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def _single_top(names: list[str]) -> str | None:
    """The one top folder every member is in, if there is one (and no `./` prefixes)."""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1 and all("/" in name and not name.startswith(".") for name in names):
        return tops.pop()
    return None


def _exclusions(ctx: StepContext, tree: FileTree) -> list[str]:
    """Glob patterns on file names that leave out part (not all) of the files."""
    visible = [f for f in tree.files if not is_hidden(f.relpath)]
    counts: dict[str, int] = {}
    for f in visible:
        if extension(f.relpath):
            counts[extension(f.relpath)] = counts.get(extension(f.relpath), 0) + 1
    options = sorted(ext for ext, n in counts.items() if n < len(visible))
    patterns = [f"*.{ctx.rng.choice(options)}"] if options else []
    if len(visible) < len(tree.files) and (not patterns or ctx.rng.random() < 0.6):
        patterns.append(".*")
    return patterns


def _excluded(relpath: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(basename(relpath), p) for p in patterns)


def _pattern_words(patterns: list[str]) -> str:
    words = ["dot files (names starting with `.`)" if p == ".*" else f"`{p}` files"
             for p in patterns]
    return " and ".join(words)


@primitive("archive.create_tar")
def create_tar(ctx: StepContext, source) -> StepResult:
    """Pack a directory into a .tar.gz, leaving out a pattern."""
    tree = tree_input(source)
    patterns = _exclusions(ctx, tree)
    kept = [f for f in tree.files if not _excluded(f.relpath, patterns)]
    if not kept:
        raise NotApplicable("the exclusions leave nothing to pack")
    top = basename(tree.path)
    parent = posixpath.dirname(tree.path)
    # Without a top folder a dot file would be `.name`, which ArchiveMembers cannot tell
    # from `name`; such archives always keep the top folder.
    with_top = ctx.rng.random() < 0.6 or any(is_hidden(f.relpath) for f in kept)
    members = tuple((f"{top}/{f.relpath}" if with_top else f.relpath, f.content)
                    for f in sorted(kept, key=lambda f: f.relpath))
    out = ctx.output_path(f"{top}-backup", "tar.gz")
    left_out = _pattern_words(patterns)
    naming = (f"each member named `{top}/` followed by its path relative to the directory "
              f"(the directory itself is the archive's top folder `{top}`)" if with_top else
              "each member named by its path relative to the directory, with no top folder "
              "and no leading `./`")
    leaving = f", leaving out the {left_out} (in any subfolder)" if patterns else ""
    but = f" except the {left_out}" if patterns else ", hidden files included"
    without = f" without its {left_out}, wherever they are" if patterns else ""
    sentence = ctx.phrase([
        f"Pack {tree.phrase} into the gzip-compressed tar archive `{out}`{leaving}, {naming}.",
        f"Create `{out}`, a .tar.gz backup of everything in {tree.phrase}{but}; {naming}.",
        f"Archive {tree.phrase} as `{out}` (tar + gzip){without}, {naming}.",
    ]) + ctx.hint("tar -czf with --exclude" if patterns else "tar -czf -C")
    if with_top:
        excludes = "".join(f" --exclude={q(p)}" for p in patterns)
        solution = f"tar -czf {q(out)}{excludes} -C {q(parent)} {q(top)}"
    else:
        tests = "".join(f" ! -name {q(p)}" for p in patterns)
        solution = (f"(cd {q(tree.path)} && find . -type f{tests} -printf '%P\\n' | "
                    f"LC_ALL=C sort | tar -czf {q(out)} -T -)")
    return StepResult(
        output=Archive(path=out, phrase=f"a .tar.gz of {tree.phrase}" +
                       (f" without its {left_out}" if patterns else "") +
                       (f" (members named `{top}/` + their path relative to it)" if with_top
                        else " (members named by their path relative to it)"),
                       format="tar.gz", members=members),
        instruction=sentence, solution=solution,
        alternative=ctx.python([tree.path, out, top if with_top else "", *patterns], _PACK_TAR),
        checks=[ArchiveMembers(f"`{out}` holds the files{but}", path=out,
                               format="tar.gz", members=_digests(members))],
        tools=("tar",) if with_top else ("find", "sort", "tar"))


@primitive("archive.extract")
def extract(ctx: StepContext, source) -> StepResult:
    """Unpack an archive into a new directory."""
    archive = _archive_input(source)
    names = [name for name, _ in archive.members]
    top = _single_top(names)
    strip = top is not None and archive.format != "zip" and ctx.rng.random() < 0.4
    contents: dict[str, bytes] = {}
    for name, data in archive.members:  # a later member of the same name wins, as in tar
        path = _clean(name)
        if strip:
            path = path.split("/", 1)[1]
        contents[path] = data
    files = tuple(TreeFile(path, contents[path]) for path in sorted(contents))
    dest = ctx.output_path("restored", "")
    if strip:
        layout = (f"with the archive's top folder `{top}/` removed from the paths, so that "
                  f"`{top}/a/b` becomes `{dest}/a/b`")
    else:
        layout = "keeping the member paths exactly as stored (folders included)"
    sentence = ctx.phrase([
        f"Extract {archive.phrase} into the new directory `{dest}`, {layout}.",
        f"Unpack every file of {archive.phrase} below `{dest}` (create it), {layout}.",
        f"Restore the contents of {archive.phrase} into `{dest}`, {layout}.",
    ]) + ctx.hint("unzip -d" if archive.format == "zip" else "tar -xf -C")
    if archive.format == "zip":
        solution = f"mkdir -p {q(dest)}\nunzip -q {q(archive.path)} -d {q(dest)}"
        tool = "unzip"
    else:
        option = " --strip-components=1" if strip else ""
        solution = f"mkdir -p {q(dest)}\ntar -xf {q(archive.path)} -C {q(dest)}{option}"
        tool = "tar"
    return StepResult(
        output=FileTree(path=dest, phrase=f"a folder holding the files extracted from "
                        f"{archive.phrase}",
                        files=files),
        instruction=sentence, solution=solution,
        alternative=ctx.python([archive.path, dest, top if strip else ""], _EXTRACT),
        checks=moved_checks(f"{dest} holds the extracted files", dest, list(files),
                            list(files)),
        tools=("mkdir", tool))


@primitive("archive.list_members")
def list_members(ctx: StepContext, source) -> StepResult:
    """List the files inside an archive."""
    archive = _archive_input(source)
    names = [name for name, _ in archive.members]
    top = _single_top(names)
    strip = top is not None and ctx.rng.random() < 0.4
    listed = sorted(name.split("/", 1)[1] if strip else name for name in names)
    out = ctx.output_path("members", "txt")
    fmt = (f"without the top folder `{top}/` they all share (so `{top}/a/b` is listed as "
           "`a/b`)" if strip else "exactly as stored in the archive")
    sentence = ctx.phrase([
        f"List the files inside {archive.phrase} in `{out}`: one member name per line, "
        f"{fmt}, directories left out, sorted in byte order.",
        f"Write to `{out}` the names of the regular files stored in {archive.phrase} "
        f"(no directory entries), {fmt}, one per line in C-locale sort order.",
        f"Without extracting it, record which files {archive.phrase} contains: `{out}` gets "
        f"one line per file member, {fmt}, sorted by byte value; skip directory entries.",
    ]) + ctx.hint("unzip -Z1" if archive.format == "zip" else "tar -tf")
    lister = (f"unzip -Z1 {q(archive.path)}" if archive.format == "zip"
              else f"tar -tf {q(archive.path)}")
    strip_cmd = " | sed 's|^[^/]*/||'" if strip else ""
    return StepResult(
        output=Report(path=out, phrase=f"the sorted names of the files in {archive.phrase}" +
                      (f" (without the top folder `{top}/`)" if strip else ""),
                      lines=tuple(listed)),
        instruction=sentence,
        solution=f"{lister} | grep -v '/$'{strip_cmd} | LC_ALL=C sort > {q(out)}",
        alternative=ctx.python([archive.path, out, top if strip else ""], _LIST),
        checks=[FileText(f"`{out}` lists the archive's files", path=out,
                         expected=lines_text(listed), compare=ctx.compare())],
        tools=("unzip" if archive.format == "zip" else "tar", "grep", "sort"))


@primitive("archive.zip_selected")
def zip_selected(ctx: StepContext, source) -> StepResult:
    """Zip the files of some extensions, keeping their paths."""
    tree = tree_input(source)
    extensions = extension_choice(ctx, tree, 2)
    chosen = sorted((f for f in tree.files if ends_with(f.relpath, extensions)),
                    key=lambda f: f.relpath)
    top = basename(tree.path)
    with_top = ctx.rng.random() < 0.4
    members = tuple((f"{top}/{f.relpath}" if with_top else f.relpath, f.content)
                    for f in chosen)
    words = ext_words(extensions)
    out = ctx.output_path("selected", "zip")
    naming = (f"each stored as `{top}/` followed by its path relative to the directory"
              if with_top else "each stored under its path relative to the directory (no "
              "top folder, no leading `./`)")
    sentence = ctx.phrase([
        f"Put every {words} file of {tree.phrase} (all subfolders) into the zip archive "
        f"`{out}`, {naming}. No other files go in.",
        f"Create the zip file `{out}` holding only the files of {tree.phrase} whose names end "
        f"in {words}, found recursively, {naming}.",
        f"Collect the {words} files from anywhere in {tree.phrase} into `{out}` (zip format), "
        f"{naming}.",
    ]) + ctx.hint("find ... | zip -@")
    if with_top:
        solution = (f"(cd {q(posixpath.dirname(tree.path))} && find {q(top)} -type f "
                    f"{name_tests(extensions)} -print | zip -q -@ {q(out)})")
    else:
        solution = (f"(cd {q(tree.path)} && find . -type f {name_tests(extensions)} "
                    f"-printf '%P\\n' | zip -q -@ {q(out)})")
    return StepResult(
        output=Archive(path=out, phrase=f"a zip of the {words} files of {tree.phrase}" +
                       (f" (members named `{top}/` + their path relative to it)" if with_top
                        else " (members named by their path relative to it)"),
                       format="zip", members=members),
        instruction=sentence, solution=solution,
        alternative=ctx.python([tree.path, out, top if with_top else "",
                                *(f".{ext}" for ext in extensions)], _ZIP),
        checks=[ArchiveMembers(f"`{out}` holds the {words} files", path=out, format="zip",
                               members=_digests(members))],
        tools=("find", "zip"))


DATED = re.compile(r"^(?P<prefix>[A-Za-z0-9][A-Za-z0-9_-]*?)-(?P<date>[0-9]{4}-[0-9]{2}-"
                   r"[0-9]{2})\.(?P<ext>[A-Za-z0-9.]+)$")


@primitive("backup.prune_dated")
def prune_dated(ctx: StepContext, source) -> StepResult:
    """Delete all but the N newest backups named by date."""
    first_step_only(ctx, "pruning backups changes the tree in place")
    tree = tree_input(source)
    series: dict[tuple[str, str, str], list[TreeFile]] = {}
    for f in tree.files:
        folder, _, name = f.relpath.rpartition("/")
        match = DATED.match(name)
        if match:
            series.setdefault((folder, match["prefix"], match["ext"]), []).append(f)
    options = sorted(key for key, group in series.items() if len(group) >= 4)
    if not options:
        raise NotApplicable("no series of at least four dated backups")
    folder, prefix, ext = ctx.rng.choice(options)
    group = sorted(series[(folder, prefix, ext)], key=lambda f: basename(f.relpath),
                   reverse=True)
    keep = ctx.pick_number(2, min(7, len(group) - 1), allowed=(1, len(group) - 1))
    doomed = {f.relpath for f in group[keep:]}
    remaining = tuple(f for f in tree.files if f.relpath not in doomed)
    where = f"{tree.path}/{folder}" if folder else tree.path
    pattern = f"{prefix}-YYYY-MM-DD.{ext}"
    sentence = ctx.phrase([
        f"The folder `{where}` holds backups named `{pattern}`. Keep the {keep} most recent "
        "of them, judged by the date in the name, and delete the older ones; every other "
        "file stays.",
        f"Prune the dated backups in `{where}`: of the files named exactly `{pattern}`, only "
        f"the {keep} with the latest dates in their names may remain. Do not touch files "
        "named differently.",
        f"Apply the retention policy \"keep the last {keep}\" to the `{pattern}` backups in "
        f"`{where}`: delete all but the {keep} newest (by the date in the file name) and "
        "leave other files alone.",
    ]) + ctx.hint("ls | grep -E | sort -r | tail -n +N | rm")
    regex = f"^{re.escape(prefix)}-[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}\\.{re.escape(ext)}$"
    solution = (f"ls {q(where)} | grep -E {q(regex)} | LC_ALL=C sort -r | "
                f"tail -n +{keep + 1} |\n"
                f"  while IFS= read -r f; do rm -- {q(where)}/\"$f\"; done")
    return StepResult(
        output=FileTree(path=tree.path, phrase=f"{tree.phrase} once pruned of the old "
                        f"`{pattern}` backups", files=remaining),
        instruction=sentence, solution=solution,
        alternative=ctx.python([where, pattern, str(keep)], _PRUNE),
        checks=[TreeListing(f"only the {keep} newest backups remain in {where}",
                            root=tree.path, expected=tuple(f.relpath for f in remaining))],
        tools=("ls", "grep", "sort", "tail", "rm"), side_effect=True)


def _stale_mirror(ctx: StepContext, kept: list[TreeFile], patterns: list[str],
                  dest: str) -> str:
    """An out-of-date mirror at `dest` (step 1 only): outdated, missing and stale files."""
    shuffled = list(kept)
    ctx.rng.shuffle(shuffled)
    outdated = shuffled[:ctx.rng.randint(1, 3)]
    missing = shuffled[len(outdated):len(outdated) + ctx.rng.randint(1, 2)]
    for f in kept:
        if f in missing:
            continue
        content, mtime = f.content, f.mtime
        if f in outdated:
            content = f.content[: len(f.content) // 2] + b"(older version)\n"
            mtime = (f.mtime or 0) - ctx.rng.randint(2, 40) * DAY
        ctx.world.add(f"{dest}/{f.relpath}", content, mode=f.mode, mtime=mtime)
    taken = {f.relpath for f in kept}
    folders = sorted({f.relpath.rpartition("/")[0] for f in kept})
    stale = 0
    for number in range(ctx.rng.randint(1, 2)):
        folder = ctx.rng.choice(folders)
        relpath = f"{folder}/removed-{number + 1}.txt".lstrip("/")
        if relpath in taken or _excluded(relpath, patterns):
            continue
        stale += 1
        ctx.world.add(f"{dest}/{relpath}", b"deleted from the source since the last run\n",
                      mtime=min(f.mtime or 0 for f in kept) + DAY)
    return (f"`{dest}` holds an older mirror: some files there are outdated, some are "
            f"missing{', and some no longer exist in the source' if stale else ''}")


@primitive("backup.mirror_rsync")
def mirror_rsync(ctx: StepContext, source) -> StepResult:
    """Mirror a tree to a backup location, excluding patterns."""
    tree = tree_input(source)
    patterns = _exclusions(ctx, tree)
    kept = sorted((f for f in tree.files if not _excluded(f.relpath, patterns)),
                  key=lambda f: f.relpath)
    if not kept:
        raise NotApplicable("the exclusions leave nothing to mirror")
    stale = ctx.step == 1 and len(kept) >= 4 and all(f.mtime for f in kept) \
        and ctx.rng.random() < 0.8
    if ctx.step == 1:
        ctx.world.mkdir("/mnt/backup")
        dest = ctx.output_path(basename(tree.path), "", directory="/mnt/backup")
    else:
        dest = ctx.output_path("mirror", "")
    state = _stale_mirror(ctx, kept, patterns, dest) + ". " if stale else ""
    left_out = _pattern_words(patterns)
    known = any(f.mtime for f in kept)
    times = ", contents and modification times" if known else " and contents"
    but = f" except the {left_out}, which are not copied" if patterns else ""
    minus = f" minus the {left_out}" if patterns else ""
    except_ = f" except the {left_out}" if patterns else ""
    sentence = state + ctx.phrase([
        f"Mirror {tree.phrase} to `{dest}` so that `{dest}` holds exactly the same files "
        f"(same relative paths{times}){but}; anything in `{dest}` that is not in the source "
        "must be deleted.",
        f"Make `{dest}` an exact copy of {tree.phrase} (same subfolders, file names{times})"
        f"{minus}; files in the mirror with no counterpart in the source are removed.",
        f"Synchronize {tree.phrase} into the backup location `{dest}`: every file{except_} "
        f"must be there with the same relative path{times}, and nothing else may be.",
    ]) + ctx.hint("rsync -a --delete" + (" --exclude" if patterns else ""))
    excludes = "".join(f" --exclude={q(p)}" for p in patterns)
    return StepResult(
        output=FileTree(path=dest, phrase=f"a mirror of {tree.phrase}" +
                        (f" without its {left_out}" if patterns else ""), files=tuple(kept)),
        instruction=sentence,
        solution=f"rsync -a --delete{excludes} {q(tree.path)}/ {q(dest)}/",
        alternative=ctx.python([tree.path, dest, *patterns], _MIRROR),
        checks=[*moved_checks(f"{dest} mirrors the source", dest, kept, kept),
                *mtime_check("the mirror keeps the modification times", dest, kept)],
        tools=("rsync",), side_effect=stale)  # updating an existing mirror changes the host
