"""Archive and backup primitives: tar and zip archives, dated backups, rsync mirrors.

Archive member names are given exactly in every instruction (`TOP/relative/path` or the
bare relative path), because the checks compare them; a leading `./` is free where no
later step reads the archive (`ctx.bare`), and the member checks drop it. Listings skip
directory entries (names ending in `/`). Info-ZIP's `zip` stores UTF-8 names without the
UTF-8 flag, which Python's zipfile reads as cp437: `ArchiveMembers` undoes that.
"""

from __future__ import annotations

import fnmatch
import io
import posixpath
import re
import tarfile
import zipfile

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
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    primitive,
)
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


def _exclusion_rules(tree: FileTree, patterns: list[str], solve) -> list[Rule]:
    """A rule per exclusion pattern that leaves out a file no other pattern does.

    `solve(patterns)` is the step's solution with only these exclusions.
    """
    rules = []
    for pattern in patterns:
        others = [p for p in patterns if p != pattern]
        if any(_excluded(f.relpath, [pattern]) and not _excluded(f.relpath, others)
               for f in tree.files):
            slug = re.sub(r"[^a-z0-9]+", "-", pattern.lower()).strip("-")
            name = "dotfiles" if pattern == ".*" else f"exclude-{slug or 'pattern'}"
            rules.append(Rule(name, f"that the {_pattern_words([pattern])} are left out",
                              solve(others)))
    return rules


def _pack_tar(tree: FileTree, out: str, with_top: bool, patterns: list[str]) -> str:
    """Pack the tree as a .tar.gz at `out` without the files matching `patterns` (in any folder)."""
    top, parent = basename(tree.path), posixpath.dirname(tree.path)
    if with_top:
        excludes = "".join(f" --exclude={q(p)}" for p in patterns)
        return f"tar -czf {q(out)}{excludes} -C {q(parent)} {q(top)}"
    tests = "".join(f" ! -name {q(p)}" for p in patterns)
    return (f"(cd {q(tree.path)} && find . -type f{tests} -printf '%P\\n' | "
            f"LC_ALL=C sort | tar -czf {q(out)} -T -)")


def _pack_tar_top_level(tree: FileTree, out: str, with_top: bool, patterns: list[str]) -> str:
    """`_pack_tar`, wrong: the patterns leave out files of the top folder only."""
    top = basename(tree.path)
    where, start, fmt = ((posixpath.dirname(tree.path), q(top), "-print") if with_top else
                         (tree.path, ".", "-printf '%P\\n'"))
    tests = "".join(f" ! -name {q(p)}" for p in patterns)
    return (f"(cd {q(where)} && {{ find {start} -maxdepth 1 -type f{tests} {fmt}; "
            f"find {start} -mindepth 2 -type f {fmt}; }} | LC_ALL=C sort | "
            f"tar -czf {q(out)} -T -)")


@primitive("archive.create_tar")
def create_tar(ctx: StepContext, source) -> StepResult:
    """Pack a directory into a .tar.gz, leaving out a pattern."""
    tree = tree_input(source)
    patterns = _exclusions(ctx, tree)
    kept = [f for f in tree.files if not _excluded(f.relpath, patterns)]
    if not kept:
        raise NotApplicable("the exclusions leave nothing to pack")
    top = basename(tree.path)
    # Without a top folder a dot file would be `.name`, which ArchiveMembers cannot tell
    # from `name`; such archives always keep the top folder.
    with_top = ctx.rng.random() < 0.6 or any(is_hidden(f.relpath) for f in kept)
    members = tuple((f"{top}/{f.relpath}" if with_top else f.relpath, f.content)
                    for f in sorted(kept, key=lambda f: f.relpath))
    out = ctx.output_path(f"{top}-backup", "tar.gz")
    left_out = _pattern_words(patterns)
    naming = (f"each member named `{top}/` followed by its path relative to the directory "
              f"(the directory itself is the archive's top folder `{top}`)" if with_top else
              "each member named by its path relative to the directory, with no top folder" +
              ctx.bare(" and no leading `./`"))
    leaving = f", leaving out the {left_out} (in any subfolder)" if patterns else ""
    but = f" except the {left_out}" if patterns else ", hidden files included"
    without = f" without its {left_out}, wherever they are" if patterns else ""
    sentence = ctx.phrase([
        f"Pack {tree.phrase} into the gzip-compressed tar archive `{out}`{leaving}, {naming}.",
        f"Create `{out}`, a .tar.gz backup of everything in {tree.phrase}{but}; {naming}.",
        f"Archive {tree.phrase} as `{out}` (tar + gzip){without}, {naming}.",
    ]) + ctx.hint("tar -czf with --exclude" if patterns else "tar -czf -C")
    solution = _pack_tar(tree, out, with_top, patterns)
    rules = _exclusion_rules(tree, patterns, lambda some: _pack_tar(tree, out, with_top, some))
    if any("/" in f.relpath for f in tree.files if _excluded(f.relpath, patterns)):
        rules.append(Rule("subfolders", f"that the {left_out} in subfolders are left out too",
                          _pack_tar_top_level(tree, out, with_top, patterns)))
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
        tools=("tar",) if with_top else ("find", "sort", "tar"), rules=tuple(rules))


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
        tools=("mkdir", tool), rules=_extract_rules(archive, dest, top, strip, list(contents)))


def _extract_rules(archive: Archive, dest: str, top: str | None, strip: bool,
                   paths: list[str]) -> tuple[Rule, ...]:
    """The layout rule: the top folder removed, or the member paths kept as stored."""
    unpack = (f"unzip -q {q(archive.path)} -d" if archive.format == "zip" else
              f"tar -xf {q(archive.path)} -C")
    if strip:
        return (Rule("strip-top", f"that the top folder `{top}/` is removed from the paths",
                     f"mkdir -p {q(dest)}\n{unpack} {q(dest)}"),)
    if top is not None:  # the likeliest slip: unpacking the top folder's contents only
        if archive.format == "zip":
            wrong = (f"t=$(mktemp -d)\n{unpack} \"$t\"\nmkdir -p {q(dest)}\n"
                     f"cp -a \"$t\"/{q(top)}/. {q(dest)}/\nrm -rf \"$t\"")
        else:
            wrong = f"mkdir -p {q(dest)}\n{unpack} {q(dest)} --strip-components=1"
    elif any("/" in path for path in paths):  # or every file straight into dest
        wrong = (f"t=$(mktemp -d)\n{unpack} \"$t\"\nmkdir -p {q(dest)}\n"
                 f"find \"$t\" -type f -exec mv -f {{}} {q(dest)}/ \\;\nrm -rf \"$t\"")
    else:
        return ()
    return (Rule("keep-paths", "that the member paths are kept exactly as stored, folders "
                 "included", wrong),)


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
        f"{fmt}, directories left out, {ctx.order('sorted in byte order')}.",
        f"Write to `{out}` the names of the regular files stored in {archive.phrase} "
        f"(no directory entries), {fmt}, one per line {ctx.order('in C-locale sort order')}.",
        f"Without extracting it, record which files {archive.phrase} contains: `{out}` gets "
        f"one line per file member, {fmt}, {ctx.order('sorted by byte value')}; skip directory "
        "entries.",
    ]) + ctx.hint("unzip -Z1" if archive.format == "zip" else "tar -tf")
    lister = (f"unzip -Z1 {q(archive.path)}" if archive.format == "zip"
              else f"tar -tf {q(archive.path)}")
    strip_cmd = " | sed 's|^[^/]*/||'" if strip else ""
    rules = []
    if strip:
        rules.append(Rule("strip-top", f"that the top folder `{top}/` is left out of the names",
                          f"{lister} | grep -v '/$' | LC_ALL=C sort > {q(out)}"))
    stored = _stored_names(ctx, archive)
    if any(name.endswith("/") for name in stored):
        rules.append(Rule("no-dirs", "that directory entries are left out",
                          f"{lister}{strip_cmd} | LC_ALL=C sort > {q(out)}"))
    as_stored = [re.sub(r"^[^/]*/", "", name, count=1) if strip else name
                 for name in stored if not name.endswith("/")]
    if ctx.compare() != "set" and as_stored and as_stored != listed:
        rules.append(Rule("byte-order", "that the names are sorted in byte order",
                          f"{lister} | grep -v '/$'{strip_cmd} > {q(out)}"))
    return StepResult(
        output=Report(path=out, phrase=f"the sorted names of the files in {archive.phrase}" +
                      (f" (without the top folder `{top}/`)" if strip else ""),
                      lines=tuple(listed)),
        instruction=sentence,
        solution=f"{lister} | grep -v '/$'{strip_cmd} | LC_ALL=C sort > {q(out)}",
        alternative=ctx.python([archive.path, out, top if strip else ""], _LIST),
        checks=[FileText(f"`{out}` lists the archive's files", path=out,
                         expected=lines_text(listed), compare=ctx.compare())],
        tools=("unzip" if archive.format == "zip" else "tar", "grep", "sort"),
        rules=tuple(rules))


def _stored_names(ctx: StepContext, archive: Archive) -> list[str]:
    """The member names as `tar -tf` / `unzip -Z1` list them, in the archive's order.

    Known for an input file (a source's); [] for an archive an earlier step writes, whose
    order and directory entries depend on the tool that made it.
    """
    spec = ctx.world.files.get(posixpath.normpath(archive.path))
    if spec is None:
        return []
    raw = io.BytesIO(spec.content)
    if archive.format == "zip":
        with zipfile.ZipFile(raw) as handle:
            return [info.filename for info in handle.infolist()]
    with tarfile.open(fileobj=raw) as handle:
        return [m.name + "/" if m.isdir() else m.name for m in handle.getmembers()]


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
              f"top folder{ctx.bare(', no leading `./`')})")
    sentence = ctx.phrase([
        f"Put every {words} file of {tree.phrase} (all subfolders) into the zip archive "
        f"`{out}`, {naming}. No other files go in.",
        f"Create the zip file `{out}` holding only the files of {tree.phrase} whose names end "
        f"in {words}, found recursively, {naming}.",
        f"Collect the {words} files from anywhere in {tree.phrase} into `{out}` (zip format), "
        f"{naming}.",
    ]) + ctx.hint("find ... | zip -@")
    def zip_found(tests: str) -> str:
        if with_top:
            return (f"(cd {q(posixpath.dirname(tree.path))} && find {q(top)}{tests} -type f "
                    f"{name_tests(extensions)} -print | zip -q -@ {q(out)})")
        return (f"(cd {q(tree.path)} && find .{tests} -type f {name_tests(extensions)} "
                f"-printf '%P\\n' | zip -q -@ {q(out)})")

    solution = zip_found("")
    rules = [Rule("extension", f"that only the {words} files go in",
                  solution.replace(f" {name_tests(extensions)} ", " "))]
    if any("/" in f.relpath for f in chosen):
        rules.append(Rule("subfolders", f"that the {words} files in subfolders go in too",
                          zip_found(" -maxdepth 1")))
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
        tools=("find", "zip"), rules=tuple(rules))


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

    def prune(listing: str, select: str, order: str, first: int) -> str:
        return (f"{listing} {q(where)} | {select} | {order}tail -n +{first} |\n"
                f"  while IFS= read -r f; do rm -- {q(where)}/\"$f\"; done")

    exact, newest = f"grep -E {q(regex)}", "LC_ALL=C sort -r | "
    solution = prune("ls", exact, newest, keep + 1)
    rules = [Rule("newest", "that the newest backups are the ones kept",
                  prune("ls", exact, "LC_ALL=C sort | ", keep + 1)),
             Rule("keep-count", f"that {keep} backups are kept",
                  prune("ls", exact, newest, keep))]
    by_mtime = _kept_by_mtime(group, keep)
    if by_mtime is not None and by_mtime != {f.relpath for f in group[:keep]}:
        rules.append(Rule("date-in-name", "that the date in the name, not the modification "
                          "time, tells which backups are newest",
                          prune("ls -t", exact, "", keep + 1)))
    loose = f"grep -F -- {q(prefix + '-')}"
    by_prefix = _doomed_by_prefix(tree, folder, prefix, keep)
    if by_prefix is not None and by_prefix != doomed:
        rules.append(Rule("exact-name", f"that only the files named exactly `{pattern}` are "
                          "pruned", prune("ls", loose, newest, keep + 1)))
    return StepResult(
        output=FileTree(path=tree.path, phrase=f"{tree.phrase} once pruned of the old "
                        f"`{pattern}` backups", files=remaining),
        instruction=sentence, solution=solution,
        alternative=ctx.python([where, pattern, str(keep)], _PRUNE),
        checks=[TreeListing(f"only the {keep} newest backups remain in {where}",
                            root=tree.path, expected=tuple(f.relpath for f in remaining))],
        tools=("ls", "grep", "sort", "tail", "rm"), side_effect=True, rules=tuple(rules))


def _kept_by_mtime(group: list[TreeFile], keep: int) -> set[str] | None:
    """The backups `ls -t` lists first (newest modification time, ties by name)."""
    if any(f.mtime is None for f in group):
        return None
    ranked = sorted(group, key=lambda f: (-(f.mtime or 0), basename(f.relpath)))
    return {f.relpath for f in ranked[:keep]}


def _doomed_by_prefix(tree: FileTree, folder: str, prefix: str, keep: int) -> set[str] | None:
    """What the pruning deletes when it takes every name containing `PREFIX-` for a backup.

    None when a subfolder's name would be taken too (rm would fail on it).
    """
    inside = f"{folder}/" if folder else ""
    names = {f.relpath[len(inside):].split("/", 1)[0]: "/" in f.relpath[len(inside):]
             for f in tree.files if f.relpath.startswith(inside)}
    taken = sorted((name for name in names if f"{prefix}-" in name), reverse=True)
    if any(names[name] for name in taken):
        return None
    return {inside + name for name in taken[keep:]}


def _stale_mirror(ctx: StepContext, kept: list[TreeFile], patterns: list[str],
                  dest: str) -> tuple[str, set[str], int]:
    """An out-of-date mirror at `dest` (step 1 only): outdated, missing and gone files.

    Returns the sentence saying so, the files a sync must copy (outdated or missing) and
    how many stale files (gone from the source) the mirror holds.
    """
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
    stale = _gone_files(ctx, kept, patterns, dest)
    return (f"`{dest}` holds an older mirror: some files there are outdated, some are "
            f"missing{', and some no longer exist in the source' if stale else ''}",
            {f.relpath for f in outdated + missing}, stale)


def _gone_files(ctx: StepContext, kept: list[TreeFile], patterns: list[str],
                dest: str) -> int:
    """Put at `dest` one or two files of an older mirror that the source no longer has.

    Returns how many. Their names match no exclusion (rsync --delete keeps excluded ones).
    """
    taken = {f.relpath for f in kept}
    folders = sorted({f.relpath.rpartition("/")[0] for f in kept})
    stale = 0
    times = [f.mtime for f in kept]
    mtime = min(times) + DAY if all(times) else None
    ext = next(ext for ext in ("txt", "old", "bak") if not _excluded(f"a.{ext}", patterns))
    for number in range(ctx.rng.randint(1, 2)):
        folder = ctx.rng.choice(folders)
        relpath = f"{folder}/removed-{number + 1}.{ext}".lstrip("/")
        if relpath in taken:
            continue
        stale += 1
        ctx.world.add(f"{dest}/{relpath}", b"deleted from the source since the last run\n",
                      mtime=mtime)
    return stale


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
    state, copied, gone, after = "", {f.relpath for f in kept}, 0, ""
    if stale:
        state, copied, gone = _stale_mirror(ctx, kept, patterns, dest)
        state += ". "
    elif ctx.step > 1 and ctx.rng.random() < 0.8:
        # the source is made by an earlier step, so only files gone from it can be in the
        # mirror from the start (without them the delete rule went unexercised)
        gone = _gone_files(ctx, kept, patterns, dest)
        if gone:
            after = f" `{dest}` already holds files of an older mirror that the source lacks."
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
    ]) + ctx.hint("rsync -a --delete" + (" --exclude" if patterns else "")) + after
    def sync(options: str, some: list[str]) -> str:
        excludes = "".join(f" --exclude={q(p)}" for p in some)
        return f"rsync {options}{excludes} {q(tree.path)}/ {q(dest)}/"

    rules = _exclusion_rules(tree, patterns, lambda some: sync("-a --delete", some))
    if gone:
        rules.append(Rule("delete", "that files no longer in the source are deleted from the "
                          "mirror", sync("-a", patterns)))
    kept_times = mtime_check("the mirror keeps the modification times", dest, kept)
    if any(path.removeprefix(f"{dest}/") in copied
           for check in kept_times for path in check.reads()):
        # rsync -r skips files of the same size and time, so only a copied file tells
        rules.append(Rule("mtimes", "that the modification times are kept",
                          sync("-r --delete", patterns)))
    return StepResult(
        output=FileTree(path=dest, phrase=f"a mirror of {tree.phrase}" +
                        (f" without its {left_out}" if patterns else ""), files=tuple(kept)),
        instruction=sentence,
        solution=sync("-a --delete", patterns),
        alternative=ctx.python([tree.path, dest, *patterns], _MIRROR),
        checks=[*moved_checks(f"{dest} mirrors the source", dest, kept, kept), *kept_times],
        # updating an existing mirror changes the host
        tools=("rsync",), side_effect=stale or bool(gone), rules=tuple(rules))
