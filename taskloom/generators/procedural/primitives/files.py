"""File search and organisation primitives: find, sort into folders, rename, prune, copy.

Every input is a `FileTree` (a root and its files with bytes, mode and mtime). Reports give
paths relative to the tree's root unless they say otherwise, and sort in byte order:
`LC_ALL=C sort` in bash, `sorted` on str in Python (UTF-8 byte order is code point order).
Times are absolute (`find -newermt @EPOCH`), never relative to the container's clock.

A step that moves or deletes files in place runs only as the first step: its checks test
the final state, so a later in-place change would break the checks of the step that made
the tree. From step 2 on, renaming and sorting by extension work on a copy instead.

One module, though long, because it is one family: its nine primitives share these
rules and the cutoff and time helpers below; what other families use is in `_trees`.
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from datetime import UTC, datetime

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import FileTree, Report, TreeFile
from taskloom.generators.procedural.checks import FileText, TreeListing
from taskloom.generators.procedural.primitives._trees import (
    PY_TREE,
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
    report_rules,
    sha256,
    top_level,
    tree_input,
)
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    primitive,
)
from taskloom.generators.procedural.sources.trees import ascii_lower, normalized_name
from taskloom.generators.procedural.world import DAY, lines_text, q

SIZE_STEPS_KIB = (1, 2, 4, 8, 10, 16, 32, 50, 64, 100, 128, 200, 256)


def stamp(epoch: int) -> str:
    """UTC date and time for an instruction."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def utc_day(epoch: int) -> str:
    """UTC date as YYYY-MM-DD."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


def absolute_allowed(ctx: StepContext) -> bool:
    """Absolute paths in a report are fair when the instruction names the tree's root."""
    return ctx.step == 1 or ctx.difficulty.specification < 3


def midnight_cutoff(ctx: StepContext, tree: FileTree) -> int:
    """A UTC midnight with files modified both before and after it (none exactly at it).

    One with a file modified later that same day when there is one: the cutoff is then a
    moment, not a day ("before" that day's end would take that file too).
    """
    mtimes = [f.mtime for f in tree.files if f.mtime is not None]
    midnights = {m - m % DAY + shift for m in mtimes for shift in (0, DAY)}
    older = {c: sum(m < c for m in mtimes) for c in sorted(midnights)}
    usable = [c for c, n in older.items() if 0 < n <= 0.7 * len(mtimes) and c not in mtimes]
    if not usable:
        raise NotApplicable("no date separates old files from new ones")
    same_day = [c for c in usable if any(c < m <= c + DAY for m in mtimes)]
    return ctx.rng.choice(same_day or usable)


def cutoff_day_rule(cutoff: int) -> str:
    """What a day-late cutoff ignores."""
    return (f"that the cutoff is the moment {stamp(cutoff)} (a file modified later on "
            f"{utc_day(cutoff)} is not older)")


@primitive("files.find_large")
def find_large(ctx: StepContext, source) -> StepResult:
    """List the files above a size threshold, largest first."""
    tree = tree_input(source)
    sizes = [len(f.content) for f in tree.files]
    steps = [kib for kib in SIZE_STEPS_KIB
             if 0 < sum(size > kib * 1024 for size in sizes) <= max(1, len(sizes) // 2)]
    if not steps:
        raise NotApplicable("no size threshold separates large files from the rest")
    # A file of exactly the threshold's size makes "larger than" differ from "at least".
    on_bound = [kib for kib in steps if kib * 1024 in sizes]
    kib = ctx.rng.choice(on_bound or steps)
    limit = kib * 1024
    absolute = absolute_allowed(ctx) and ctx.rng.random() < 0.3
    shown = (lambda f: f"{tree.path}/{f.relpath}") if absolute else (lambda f: f.relpath)

    def report(files, order: str = "reference") -> list[str]:
        """`SIZE PATH` lines of some files; `order` as sort orders them (wrong ones too)."""
        rows = [(len(f.content), f"{len(f.content)} {shown(f)}") for f in files]
        if order == "ascending":  # sort -k1,1n -k2
            rows.sort(key=lambda row: (row[0], row[1].split(" ", 1)[1]))
        elif order == "reverse":  # sort -rn: equal sizes by the whole line, reversed
            rows.sort(reverse=True)
        else:
            rows.sort(key=lambda row: (-row[0], row[1].split(" ", 1)[1]))
        return [line for _, line in rows]

    large = [f for f in tree.files if len(f.content) > limit]
    lines = tuple(report(large))
    where = (f"PATH the absolute path (starting with `{tree.path}/`)" if absolute else
             f"PATH relative to that directory{ctx.bare(', without a leading `./`')}")
    out = ctx.output_path("large-files", "txt")
    sentence = ctx.phrase([
        f"Find every regular file below {tree.phrase} (all subfolders, hidden files "
        f"included) that is larger than {kib} KiB, i.e. more than {limit} bytes, and write "
        f"one `SIZE PATH` line per file to `{out}`: SIZE in bytes, {where}; largest first, "
        "equal sizes ordered by PATH in byte order.",
        f"Write to `{out}` the files of {tree.phrase} (recursively, dot files too) whose size "
        f"exceeds {limit} bytes ({kib} KiB), one per line as `SIZE PATH` with the size in "
        f"bytes and {where}, sorted by size descending and then by PATH (C locale).",
        f"Which files in {tree.phrase} take more than {kib} KiB ({limit} bytes)? List them "
        f"in `{out}` as `SIZE PATH` lines (SIZE in bytes, {where}), biggest first; ties by "
        "PATH in ascending byte order. Search all subfolders and include hidden files.",
    ]) + ctx.hint("find -size +Nc -printf and sort")
    fmt = "%s %p\\n" if absolute else "%s %P\\n"
    compare = ctx.compare(order_matters=True)

    def listing(tests: str = f"-size +{limit}c", order: str = "-k1,1nr -k2",
                depth: str = "") -> str:
        return (f"find {q(tree.path)}{depth} -type f {tests} -printf '{fmt}' | "
                f"LC_ALL=C sort {order} > {q(out)}")

    wrong = [  # (name, stated, solution ignoring it, the lines it writes)
        ("strictly-larger", f"that only files of more than {limit} bytes count (a file of "
         "exactly that size is not larger)", listing(tests=f"-size +{limit - 1}c"),
         report([f for f in tree.files if len(f.content) >= limit])),
        ("largest-first", "that the largest files come first",
         listing(order="-k1,1n -k2"), report(large, "ascending")),
        ("tie-order", "that equal sizes are ordered by path in ascending byte order",
         listing(order="-rn"), report(large, "reverse")),
        ("subfolders", "that files in subfolders count too", listing(depth=" -maxdepth 1"),
         report([f for f in large if top_level(f.relpath)])),
    ]
    return StepResult(
        output=Report(path=out, phrase=f"the list of the files larger than {kib} KiB in "
                      f"{tree.phrase} as `SIZE PATH` lines (size in bytes, "
                      f"{'absolute path' if absolute else 'path relative to it'}), largest "
                      "first", lines=lines),
        instruction=sentence,
        solution=listing(),
        alternative=ctx.python(
            [tree.path, out, str(limit), "absolute" if absolute else "relative",
             ctx.dot_slash], r'''
root, out, limit, shown, dot = ARGS
rows = []
for path, rel in regular(root):
    size = os.lstat(path).st_size
    if size > int(limit):
        rows.append((-size, path if shown == b'absolute' else dot + rel))
write(out, [b'%d %s' % (-size, name) for size, name in sorted(rows)])
''', prelude=PY_TREE),
        checks=[FileText(f"`{out}` lists the files larger than {kib} KiB", path=out,
                         expected=lines_text(lines), compare=compare, form=ctx.path_form)],
        tools=("find", "sort"),
        rules=report_rules(compare, lines, wrong))


@primitive("files.find_old")
def find_old(ctx: StepContext, source) -> StepResult:
    """List the files not modified since a date."""
    tree = tree_input(source, mtimes=True)
    cutoff = midnight_cutoff(ctx, tree)
    layout = ctx.rng.choice(("paths", "dated", "oldest"))

    def report(files, by_path: bool = False) -> list[str]:
        """The lines for some files (`by_path`: oldest-first ones sorted by path instead)."""
        if layout == "dated":
            return sorted(f"{utc_day(f.mtime)} {f.relpath}" for f in files)
        if layout == "oldest" and not by_path:
            return [f.relpath for f in sorted(files, key=lambda f: (f.mtime, f.relpath))]
        return sorted(f.relpath for f in files)

    out = ctx.output_path("stale-files", "txt")

    def listing(cut: int = cutoff, depth: str = "", by_path: bool = False) -> str:
        tests = f"{q(tree.path)}{depth} -type f ! -newermt @{cut}"
        if layout == "dated":
            return (f"TZ=UTC find {tests} -printf '%TY-%Tm-%Td %P\\n' | LC_ALL=C sort "
                    f"> {q(out)}")
        if layout == "oldest" and not by_path:
            return (f"find {tests} -printf '%T@ %P\\n' | LC_ALL=C sort -k1,1n -k2 | "
                    f"cut -d' ' -f2- > {q(out)}")
        return f"find {tests} -printf '%P\\n' | LC_ALL=C sort > {q(out)}"

    old = [f for f in tree.files if f.mtime < cutoff]
    lines = tuple(report(old))
    if layout == "dated":
        fmt = ("one `YYYY-MM-DD PATH` line per file (the UTC date of its last modification, "
               f"a space, its path relative to that directory"
               f"{ctx.bare(' without a leading `./`')}), "
               "sorted in byte order (so by date, then path)")
        shape = "as `YYYY-MM-DD PATH` lines (date of last change, relative path), sorted"
    elif layout == "oldest":
        fmt = (f"one path per line, relative to that directory{ctx.bare(' (no leading `./`)')}"
               ", the least recently modified file first (equal times ordered by path in byte "
               "order)")
        shape = "one relative path per line, oldest first"
    else:
        fmt = (f"one path per line, relative to that directory{ctx.bare(' (no leading `./`)')}"
               ", sorted in byte order")
        shape = "one relative path per line, sorted"
    compare = ctx.compare(order_matters=layout == "oldest")
    wrong = [  # (name, stated, solution ignoring it, the lines it writes)
        ("cutoff-day", cutoff_day_rule(cutoff), listing(cut=cutoff + DAY),
         report([f for f in tree.files if f.mtime <= cutoff + DAY])),
        ("subfolders", "that files in subfolders count too", listing(depth=" -maxdepth 1"),
         report([f for f in old if top_level(f.relpath)])),
    ]
    if layout == "oldest":
        wrong.append(("oldest-first", "that the least recently modified file comes first",
                      listing(by_path=True), report(old, by_path=True)))
    sentence = ctx.phrase([
        f"List the files below {tree.phrase} (all subfolders, hidden files included) that "
        f"were last modified before {stamp(cutoff)} in `{out}`: {fmt}.",
        f"Find every file of {tree.phrase} not modified since {stamp(cutoff)} (its "
        f"modification time is earlier) and write them to `{out}`, {fmt}.",
        f"Write to `{out}` the files in {tree.phrase}, searched recursively and including dot "
        f"files, whose modification time is before {stamp(cutoff)}: {fmt}.",
    ]) + ctx.hint("find ! -newermt with an absolute date")
    return StepResult(
        output=Report(path=out, phrase=f"the list of the files of {tree.phrase} last modified "
                      f"before {stamp(cutoff)} ({shape})", lines=lines),
        instruction=sentence,
        solution=listing(),
        alternative=ctx.python([tree.path, out, stamp(cutoff), layout, ctx.dot_slash], r'''
root, out, cutoff, layout, dot = ARGS
old = []
for path, rel in regular(root):
    mtime = os.lstat(path).st_mtime
    if mtime < epoch(cutoff.decode()):
        old.append((mtime, dot + rel))
if layout == b'dated':
    lines = sorted(time.strftime('%Y-%m-%d ', time.gmtime(m)).encode() + r for m, r in old)
elif layout == b'oldest':
    lines = [rel for _, rel in sorted(old)]
else:
    lines = sorted(rel for _, rel in old)
write(out, lines)
''', prelude=PY_TREE),
        checks=[FileText(f"`{out}` lists the files older than the cutoff", path=out,
                         expected=lines_text(lines), compare=compare, form=ctx.path_form)],
        tools=("find", "sort", "cut") if layout == "oldest" else ("find", "sort"),
rules=report_rules(compare, lines, wrong))


@primitive("files.find_by_extension")
def find_by_extension(ctx: StepContext, source) -> StepResult:
    """List every file with given extensions, recursively."""
    tree = tree_input(source)
    extensions = extension_choice(ctx, tree, 2)
    # Prefer an extension some other name contains without ending in it (`a.pdf.bak`).
    decoys = sorted(ext for ext in {extension(f.relpath) for f in tree.files} - {""}
                    if any(f".{ext}." in basename(f.relpath) for f in tree.files) and
                    not all(ends_with(f.relpath, [ext]) for f in tree.files))
    if decoys and not set(decoys) & set(extensions):
        extensions = sorted({ctx.rng.choice(decoys), *extensions[1:]})
        if all(ends_with(f.relpath, extensions) for f in tree.files):
            extensions = extensions[:1]
    found = [f for f in tree.files if ends_with(f.relpath, extensions)]
    absolute = absolute_allowed(ctx) and ctx.rng.random() < 0.3
    shown = (lambda f: f"{tree.path}/{f.relpath}") if absolute else (lambda f: f.relpath)
    lines = tuple(sorted(shown(f) for f in found))
    contains = re.compile(r"\.(" + "|".join(re.escape(ext) for ext in extensions) + ")")
    where = (f"as absolute paths (starting with `{tree.path}/`)" if absolute else
             f"as paths relative to that directory{ctx.bare(' (no leading `./`)')}")
    words = ext_words(extensions)
    out = ctx.output_path("by-extension", "txt")
    sentence = ctx.phrase([
        f"List every file below {tree.phrase} (searching all subfolders) whose name ends in "
        f"{words} in `{out}`, one per line, {where}, {ctx.order('sorted in byte order')}.",
        f"Find all {words} files in {tree.phrase}, recursively, and write them to `{out}` "
        f"{where}, one per line, {ctx.order('in C-locale sort order')}.",
        f"Write to `{out}` the recursive list of files of {tree.phrase} with the extension "
        f"{words} (case-sensitive), one path per line {where}, "
        f"{ctx.order('sorted by byte value')}.",
    ]) + ctx.hint("find -name '*.ext' -printf")
    fmt = "%p\\n" if absolute else "%P\\n"
    compare = ctx.compare()
    wrong = [  # (name, stated, solution ignoring it, the lines it writes)
        ("extension-end", f"that the names must end in {words}",
         f"find {q(tree.path)} -type f -printf '{fmt}' | "
         f"grep -E {q(contains.pattern)} | LC_ALL=C sort > {q(out)}",
         sorted(shown(f) for f in tree.files if contains.search(shown(f)))),
        ("subfolders", "that files in subfolders count too",
         f"find {q(tree.path)} -maxdepth 1 -type f {name_tests(extensions)} -printf '{fmt}' | "
         f"LC_ALL=C sort > {q(out)}", sorted(shown(f) for f in found if top_level(f.relpath))),
    ]
    return StepResult(
        output=Report(path=out, phrase=f"the sorted list of the {words} files of "
                      f"{tree.phrase}, one {'absolute' if absolute else 'relative'} path per "
                      "line", lines=lines),
        instruction=sentence,
        solution=(f"find {q(tree.path)} -type f {name_tests(extensions)} -printf '{fmt}' | "
                  f"LC_ALL=C sort > {q(out)}"),
        alternative=ctx.python(
            [tree.path, out, "absolute" if absolute else "relative", ctx.dot_slash,
             *extensions], r'''
root, out, shown, dot, *extensions = ARGS
ends = tuple(b'.' + ext for ext in extensions)
write(out, sorted(path if shown == b'absolute' else dot + rel for path, rel in regular(root)
                  if os.path.basename(path).endswith(ends)))
''', prelude=PY_TREE),
        checks=[FileText(f"`{out}` lists the {words} files", path=out, expected=lines_text(lines),
                         compare=compare, form=ctx.path_form)],
        tools=("find", "sort"),
        rules=report_rules(compare, lines, wrong))


@primitive("files.organize_by_extension")
def organize_by_extension(ctx: StepContext, source) -> StepResult:
    """Move (or, after step 1, copy) the top-level files into folders named by extension."""
    tree = tree_input(source)
    loose = [f for f in tree.files if "/" not in f.relpath and not is_hidden(f.relpath)
             and extension(f.relpath)]
    if len(loose) < 2:
        raise NotApplicable("fewer than two files at the top of the tree")
    in_place = ctx.step == 1
    root = tree.path if in_place else ctx.output_path("sorted", "")
    moved = [TreeFile(f"{extension(f.relpath)}/{f.relpath}", f.content, f.mode, f.mtime,
                      f.owner, f.group) for f in loose]
    sorted_out = {f.relpath for f in loose}
    kept = [f for f in tree.files if f.relpath not in sorted_out] if in_place else []
    if {f.relpath for f in moved} & {f.relpath for f in kept}:
        raise NotApplicable("an extension folder already holds a file of the same name")
    files = sorted(kept + moved, key=lambda f: f.relpath)
    rule = ("folders named after their extensions: each file goes into the folder named by "
            "the text after the last dot of its name (`clip.2024.mp4` would go to "
            "`mp4/clip.2024.mp4`)")
    if in_place:
        sentence = ctx.phrase([
            f"Tidy up the top level of {tree.phrase}: move every regular file that sits "
            f"directly in it into {rule}, creating the folders as needed inside the "
            "directory. Files in subfolders, hidden files and files without an extension "
            "stay where they are.",
            f"Sort the files directly inside {tree.phrase} (not those in its subfolders, and "
            f"not dot files) into {rule}; the folders go in that same directory. Move the "
            "files, do not copy them.",
            f"In {tree.phrase}, each non-hidden file at the top level (ignore the "
            f"subfolders) must end up in {rule}, created inside the directory. Move them; "
            "leave everything else alone.",
        ]) + ctx.hint("find -maxdepth 1, mkdir -p and mv")
        action = "mv"
        phrase = (f"{tree.phrase} once its top-level files are sorted into folders by "
                  "extension")
    else:
        sentence = ctx.phrase([
            f"Copy every non-hidden file that sits directly in {tree.phrase} (not those in "
            f"subfolders) into {rule}, with those folders created inside `{root}`. The "
            "source files stay where they are.",
            f"Build a by-type copy of the top level of {tree.phrase} in `{root}`: every regular "
            f"file directly inside it (dot files excluded, subfolders ignored) is copied to "
            f"{rule}, below `{root}`.",
            f"Under `{root}`, create one folder per extension and copy into it the top-level "
            f"files of {tree.phrase} (no hidden files, no subfolders): each file goes to "
            f"{rule}.",
        ]) + ctx.hint("find -maxdepth 1, mkdir -p and cp")
        action = "cp -p"
        phrase = (f"a folder holding copies of the top-level files of {tree.phrase}, sorted "
                  "into subfolders by extension")

    def organize(tests: str = "-maxdepth 1 -type f -name '*.*' ! -name '.*'",
                 ext: str = "${name##*.}", verb: str = action) -> str:
        # The files are listed before any is moved: find never sees a moved file again.
        return (f"mapfile -d '' paths < <(find {q(tree.path)} {tests} -print0)\n"
                "for f in \"${paths[@]}\"; do\n"
                f"  name=${{f##*/}}; ext={ext}\n"
                f"  mkdir -p {q(root)}/\"$ext\" && {verb} -- \"$f\" {q(root)}/\"$ext\"/\n"
                "done")

    def result(chosen, folder=extension, moving: bool = in_place) -> set[str]:
        """The paths below `root` once the `chosen` files went to `folder(relpath)`."""
        gone = {f.relpath for f in chosen} if moving else set()  # relpaths: one file each
        stay = {f.relpath for f in tree.files if f.relpath not in gone} if in_place else set()
        return stay | {f"{folder(f.relpath)}/{basename(f.relpath)}" for f in chosen}

    wrong = [  # (name, stated, solution ignoring it, the files it leaves below root)
        ("top-level", "that only the files directly in the directory are sorted",
         organize(tests="-type f -name '*.*' ! -name '.*'"),
         result([f for f in tree.files if "." in basename(f.relpath)
                 and not is_hidden(f.relpath)])),
        ("hidden", "that hidden files stay where they are",
         organize(tests="-maxdepth 1 -type f -name '*.*'"),
         result([f for f in tree.files if top_level(f.relpath) and "." in f.relpath],
                folder=lambda relpath: relpath.rpartition(".")[2])),
        ("last-dot", "that the extension is the text after the last dot",
         organize(ext="${name#*.}"),
         result(loose, folder=lambda relpath: basename(relpath).partition(".")[2])),
    ]
    if in_place:
        wrong.append(("move", "that the files are moved, not copied",
                      organize(verb="cp -p"), result(loose, moving=False)))
    solution = organize()
    # The copy variant does not ask for kept times or modes: plain copies are fine.
    alternative = ctx.python([tree.path, root, action], r'''
source, root, action = ARGS
for name in sorted(os.listdir(source)):
    path = os.path.join(source, name)
    ext = name.rpartition(b'.')[2] if b'.' in name else b''
    if name.startswith(b'.') or not ext or not stat.S_ISREG(os.lstat(path).st_mode):
        continue
    os.makedirs(os.path.join(root, ext), exist_ok=True)
    if action == b'mv':
        os.rename(path, os.path.join(root, ext, name))
    else:
        shutil.copyfile(path, os.path.join(root, ext, name))
''', prelude=PY_TREE)
    return StepResult(
        output=FileTree(path=root, phrase=phrase, files=tuple(files)),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=moved_checks(f"{root} holds the files sorted by extension", root, files,
                            moved),
        tools=("find", "mkdir", "mv" if in_place else "cp"), side_effect=in_place,
        rules=tuple(Rule(name, stated, ignored) for name, stated, ignored, left in wrong
                    if left != {f.relpath for f in files}))


def _duplicate_groups(files, *, empty: bool = False, hidden: bool = False,
                      nested: bool = True, singles: bool = False) -> list[list[TreeFile]]:
    """The files grouped by content: non-empty, not hidden, in any folder, by default.

    The keywords count what the task leaves out (`empty`, `hidden`), search only the top
    (`nested=False`) or keep the files without a copy (`singles`), as wrong solutions do.
    """
    by_content: dict[bytes, list[TreeFile]] = defaultdict(list)
    for f in files:
        if (f.content or empty) and (hidden or not is_hidden(f.relpath)) and \
                (nested or top_level(f.relpath)):
            by_content[f.content].append(f)
    return [sorted(group, key=lambda f: f.relpath) for group in by_content.values()
            if singles or len(group) > 1]


@primitive("files.find_duplicates")
def find_duplicates(ctx: StepContext, source) -> StepResult:
    """Group the files with identical content."""
    tree = tree_input(source)
    groups = _duplicate_groups(tree.files)
    if not groups:
        raise NotApplicable("no two files have the same content")
    scope = ("Only non-empty files count, hidden files (names starting with a dot) are "
             "ignored, and all subfolders are searched." +
             ctx.bare(" Paths have no leading `./`."))
    layout = ctx.rng.choice(("adjacent", "blocks", "redundant"))

    def report(groups, every: bool = False) -> list[str]:
        """The lines of the layout (`every`: redundant copies with the first one too)."""
        if layout == "blocks":
            blocks = sorted([f"{sha256(f.content)}  {f.relpath}" for f in group]
                            for group in groups)
            return [line for number, block in enumerate(blocks)
                    for line in ([""] if number else []) + block]
        if layout == "adjacent":
            return sorted(f"{sha256(f.content)}  {f.relpath}" for group in groups
                          for f in group)
        return sorted(f.relpath for group in groups for f in group[0 if every else 1:])

    def listing(tests: str = "! -name '.*' ! -empty", depth: str = "") -> str:
        return (f"(cd {q(tree.path)} && find .{depth} -type f {tests} -printf "
                "'%P\\0' | xargs -0 -r sha256sum) |\n  LC_ALL=C sort")

    lines = tuple(report(groups))
    if layout == "blocks":
        out = ctx.output_path("duplicate-groups", "txt")
        fmt = ("one block per set of identical files: a `HASH  PATH` line per file (sha256 in "
               "hex, two spaces, the path relative to that directory), lines of a block in "
               "byte order, blocks ordered by hash and separated by a single empty line (none "
               "before the first block or after the last)")
        sentence = ctx.phrase([
            f"Group the files of {tree.phrase} that have identical content and write the "
            f"groups to `{out}`: {fmt}. Files without a duplicate are not listed. {scope}",
            f"Find the sets of byte-for-byte identical files in {tree.phrase} and report them "
            f"in `{out}`, {fmt}. {scope}",
            f"Write to `{out}` the groups of duplicated files of {tree.phrase} ({fmt}); files "
            f"whose content is unique are left out. {scope}",
        ]) + ctx.hint("sha256sum | sort | uniq -w64 --all-repeated=separate")
        tail = "uniq -w64 --all-repeated=separate"
        wrong = [("duplicates-only", "that files without a duplicate are left out",
                  f"{listing()} | uniq -w64 --group=separate > {q(out)}",
                  report(_duplicate_groups(tree.files, singles=True)))]
        tool = "uniq"
        phrase = (f"the groups of duplicated files of {tree.phrase} (blocks of `HASH  PATH` "
                  "lines separated by empty lines)")
    elif layout == "adjacent":
        out = ctx.output_path("duplicates", "txt")
        sentence = ctx.phrase([
            f"Find the files of {tree.phrase} whose content is identical to at least one "
            f"other file and write them to `{out}` in `sha256sum` format (`HASH  PATH`: the "
            "sha256 in hex, two spaces, the path relative to that directory), lines sorted "
            f"in byte order, so that copies of the same content are adjacent. {scope}",
            f"Write to `{out}` one `HASH  PATH` line (sha256 hex digest, two spaces, path "
            f"relative to the directory) for every file in {tree.phrase} that has a "
            "duplicate, i.e. another file with exactly the same bytes; sort the lines in "
            f"byte order. Files without a duplicate are not listed. {scope}",
            f"List the duplicated files of {tree.phrase} in `{out}`: for each file whose bytes "
            "also occur in another file, a line `HASH  PATH` as sha256sum prints it (path "
            f"relative to that directory), all lines in C-locale sort order. {scope}",
        ]) + ctx.hint("sha256sum, sort, then uniq -w64 -D")
        tail = "uniq -w64 -D"
        wrong = [("duplicates-only", "that files without a duplicate are left out",
                  f"{listing()} > {q(out)}",
                  report(_duplicate_groups(tree.files, singles=True)))]
        tool = "uniq"
        phrase = (f"the `HASH  PATH` lines (sha256sum format, sorted) of the duplicated files "
                  f"of {tree.phrase}")
    else:
        out = ctx.output_path("redundant-copies", "txt")
        sentence = ctx.phrase([
            f"Some files in {tree.phrase} are byte-for-byte copies of each other. For each "
            "set of identical files, keep the path that sorts first (byte order) and write "
            f"the other paths to `{out}`, one per line, relative to that directory, sorted in "
            f"byte order. {scope}",
            f"Write to `{out}` the redundant copies in {tree.phrase}: among files with "
            "identical content, every one except the first in byte order of its path; one "
            f"path per line (relative to the directory), sorted in byte order. {scope}",
            f"List in `{out}` which files of {tree.phrase} could be deleted as duplicates: "
            "group files by identical content, drop the alphabetically (byte order) first "
            "path of each group and list the rest, one relative path per line, sorted in "
            f"byte order. {scope}",
        ]) + ctx.hint("sha256sum | sort, then awk 'seen[$1]++'")
        tail = "awk 'seen[$1]++' | cut -c67- | LC_ALL=C sort"
        wrong = [("keep-first", "that the first path of each set of identical files is kept "
                  "off the list", f"{listing()} | uniq -w64 -D | cut -c67- | "
                  f"LC_ALL=C sort > {q(out)}", report(groups, every=True))]
        tool = "awk"
        phrase = (f"the sorted list of the redundant copies among the files of {tree.phrase}, "
                  "one path relative to it per line")
    solution = f"{listing()} | {tail} > {q(out)}"
    visible = "! -name '.*'"
    compare = ctx.compare(order_matters=True)
    wrong += [
        ("non-empty", "that empty files do not count",
         f"{listing(tests=visible)} | {tail} > {q(out)}",
         report(_duplicate_groups(tree.files, empty=True))),
        ("hidden", "that hidden files are ignored", f"{listing(tests='! -empty')} | {tail} > "
         f"{q(out)}", report(_duplicate_groups(tree.files, hidden=True))),
        ("subfolders", "that files in subfolders count too",
         f"{listing(depth=' -maxdepth 1')} | {tail} > {q(out)}",
         report(_duplicate_groups(tree.files, nested=False))),
    ]
    alternative = ctx.python([tree.path, out, layout, ctx.dot_slash], r'''
root, out, layout, dot = ARGS
groups = {}
for path, rel in regular(root):
    if not os.path.basename(rel).startswith(b'.') and os.path.getsize(path):
        groups.setdefault(sha(path), []).append(dot + rel)
groups = {digest: sorted(rels) for digest, rels in groups.items() if len(rels) > 1}
if layout == b'redundant':
    lines = sorted(rel for rels in groups.values() for rel in rels[1:])
else:
    blocks = [[digest + b'  ' + rel for rel in groups[digest]] for digest in sorted(groups)]
    if layout == b'adjacent':
        lines = sorted(line for block in blocks for line in block)
    else:
        lines = [line for n, block in enumerate(blocks) for line in [b''][:n] + block]
write(out, lines)
''', prelude=PY_TREE)
    return StepResult(
        output=Report(path=out, phrase=phrase, lines=lines),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[FileText(f"`{out}` lists the duplicates", path=out, expected=lines_text(lines),
                         compare=compare, form=ctx.path_form)],
        tools=("find", "sha256sum", "sort", tool),
        rules=report_rules(compare, lines, wrong))


@primitive("files.rename_normalize")
def rename_normalize(ctx: StepContext, source) -> StepResult:
    """Rename files to lowercase with dashes instead of spaces (a copy after step 1)."""
    tree = tree_input(source)
    in_place = ctx.step == 1
    root = tree.path if in_place else ctx.output_path("normalized", "")
    renamed, files = [], []
    for f in tree.files:
        folder, _, name = f.relpath.rpartition("/")
        relpath = f"{folder}/{normalized_name(name)}".lstrip("/")
        files.append(TreeFile(relpath, f.content, f.mode, f.mtime, f.owner, f.group))
        if relpath != f.relpath:
            renamed.append(files[-1])
    if not renamed:
        raise NotApplicable("every file name is already normalized")
    if len({f.relpath for f in files}) != len(files):
        raise NotApplicable("two files would get the same name")
    files.sort(key=lambda f: f.relpath)
    rule = ("every ASCII capital letter A-Z becomes lowercase and every space becomes a dash "
            "`-`; other characters and the folder names stay as they are")
    if in_place:
        sentence = ctx.phrase([
            f"Normalize the file names in {tree.phrase} and all its subfolders by renaming "
            f"the files in place: {rule}.",
            f"Rename the files below {tree.phrase} (recursively) so their names follow the "
            f"convention: {rule}. Files already following it keep their names.",
            f"Clean up the file names of {tree.phrase}, subfolders included: rename each "
            f"file so that {rule}.",
        ]) + ctx.hint("find -print0, tr and mv")
        prefix = ""
        phrase = f"{tree.phrase} once its file names are normalized"
    else:
        sentence = ctx.phrase([
            f"Copy {tree.phrase} to `{root}` (same subfolders, contents and times), then "
            f"normalize the file names in the copy: {rule}. Leave the original untouched.",
            f"Make a copy of {tree.phrase} at `{root}`, keeping the files' modification "
            f"times, in which the file names are normalized ({rule}); the original directory "
            "keeps its names.",
            f"Publish {tree.phrase} to `{root}`: copy the whole tree there with the files' "
            f"modification times preserved and rename the copied files so that {rule}.",
        ]) + ctx.hint("cp -a, then find -print0, tr and mv")
        prefix = f"cp -a {q(tree.path)} {q(root)}\n"
        phrase = f"a copy of {tree.phrase} with normalized file names"

    def rename(copy: str = prefix, tests: str = "-type f", tr: str = "'A-Z ' 'a-z-'") -> str:
        return (copy +
                f"mapfile -d '' paths < <(find {q(root)} {tests} -print0)\n"
                "for f in \"${paths[@]}\"; do\n"
                "  base=${f##*/}\n"
                f"  new=$(printf '%s' \"$base\" | tr {tr})\n"
                "  if [ \"$new\" != \"$base\" ]; then mv -- \"$f\" \"${f%/*}/$new\"; fi\n"
                "done")

    def names(convert, folders: bool = False) -> set[str]:
        """The file paths once each name (and each folder's, with `folders`) is converted."""
        return {"/".join(convert(part) if folders or last == len(parts) else part
                         for last, part in enumerate(parts, start=1))
                for parts in (f.relpath.split("/") for f in tree.files)}

    wrong = [  # (name, stated, solution ignoring it, the paths it leaves below root)
        ("lowercase", "that capital letters become lowercase", rename(tr="' ' '-'"),
         names(lambda name: name.replace(" ", "-"))),
        ("spaces", "that spaces become dashes", rename(tr="'A-Z' 'a-z'"),
         names(ascii_lower)),
        ("folders", "that folder names stay as they are",
         rename(tests="-mindepth 1 -depth"), names(normalized_name, folders=True)),
    ]
    rules = [Rule(name, stated, ignored) for name, stated, ignored, left in wrong
             if left != {f.relpath for f in files}]
    if not in_place and any(f.mtime is not None for f in files):  # the times are checked
        rules.append(Rule("mtimes", "that the copy keeps the files' modification times",
                          rename(copy=f"cp -r {q(tree.path)} {q(root)}\n")))
    solution = rename()
    # In place: rename bottom-up; for a copy: copy each file straight to its new name.
    alternative = ctx.python([tree.path, root], r'''
source, root = ARGS
upper = bytes(range(ord('A'), ord('Z') + 1))
table = bytes.maketrans(upper + b' ', upper.lower() + b'-')
folders = []
for folder, _, names in os.walk(source):
    target = os.path.join(root, os.path.relpath(folder, source))
    folders.append((folder, target))
    os.makedirs(target, exist_ok=True)
    for name in names:
        path = os.path.join(folder, name)
        if source == root:
            if name.translate(table) != name:
                os.rename(path, os.path.join(folder, name.translate(table)))
        else:
            shutil.copy2(path, os.path.join(target, name.translate(table)),
                         follow_symlinks=False)
if source != root:
    for folder, target in reversed(folders):
        shutil.copystat(folder, target)
''', prelude=PY_TREE)
    return StepResult(
        output=FileTree(path=root, phrase=phrase, files=tuple(files)),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[*moved_checks(f"{root} holds the normalized names", root, files, renamed),
                *([] if in_place else
                  mtime_check("the copy keeps the modification times", root, files))],
        tools=("find", "tr", "mv") if in_place else ("cp", "find", "tr", "mv"),
        side_effect=in_place, rules=tuple(rules))


@primitive("files.usage_by_folder")
def usage_by_folder(ctx: StepContext, source) -> StepResult:
    """Report the disk usage (apparent bytes) of each top-level folder."""
    tree = tree_input(source)
    totals: dict[str, int] = defaultdict(int)
    for f in tree.files:
        if "/" in f.relpath:
            totals[f.relpath.split("/", 1)[0]] += len(f.content)
    if len(totals) < 2:
        raise NotApplicable("fewer than two folders hold files")
    scope = ("Count every regular file below each folder (recursively, hidden files "
             "included) by its apparent size in bytes, as `du -b` does, not disk blocks; "
             "folders without files are left out, files lying directly in the directory "
             "are not counted.")
    out = ctx.output_path("usage-by-folder", "txt")
    aggregate = "awk -F'\\t' '{split($2, p, \"/\"); t[p[2]] += $1} END {for (d in t) "
    with_top = dict(totals)  # a search from depth 1 takes each top-level file as a folder
    for f in tree.files:
        if top_level(f.relpath):
            with_top[f.relpath] = len(f.content)

    def report(sizes: dict[str, int], order: str = "reference") -> list[str]:
        """The lines for some totals; `order` as sort orders them (wrong ones too)."""
        if bytes_first:
            rows = sorted(sizes.items(), key=lambda item: (item[1], item[0]) if
                          order == "ascending" else (-item[1], item[0]))
            return [f"{size}\t{folder}" for folder, size in rows]
        if order == "size":  # sort -rn of `BYTES FOLDER`: equal sizes by folder, reversed
            rows = sorted(((size, f"{size} {folder}", folder) for folder, size
                           in sizes.items()), reverse=True)
            return [f"{folder} {size}" for size, _, folder in rows]
        return [f"{folder} {size}" for folder, size in sorted(sizes.items())]

    def usage(depth: int = 2, order: str = "") -> str:
        """The reference's pipeline (from `depth`, lines sorted by sort's `order`)."""
        files = f"find . -mindepth {depth} -type f -print0 | du -b --files0-from=-"
        if bytes_first:
            return (f"(cd {q(tree.path)} && {files}) |\n"
                    f"  {aggregate}printf \"%d\\t%s\\n\", t[d], d}}' |\n"
                    f"  LC_ALL=C sort -t $'\\t' {order or '-k1,1nr -k2,2'} > {q(out)}")
        return (f"(cd {q(tree.path)} && {files}) |\n"
                f"  {aggregate}printf \"%s %d\\n\", d, t[d]}}' |\n"
                f"  LC_ALL=C sort {order or '-k1,1'} > {q(out)}")

    bytes_first = ctx.rng.random() < 0.5
    if bytes_first:
        line_format = "`BYTES<TAB>FOLDER`"
        lines = tuple(report(totals))
        sentence = ctx.phrase([
            f"Report how much data each top-level folder of {tree.phrase} holds: write one "
            f"line per folder to `{out}` in du's format, the size in bytes, a tab, the folder "
            "name; largest first, equal sizes by folder name in byte order. " + scope,
            f"Write to `{out}` the disk usage of every folder directly inside {tree.phrase} as "
            "`BYTES<TAB>FOLDER` lines (folder name only, no path), sorted by size, biggest "
            "first, ties by name (byte order). " + scope,
            f"For each subfolder at the top of {tree.phrase}, put `SIZE<TAB>NAME` in `{out}`, "
            "SIZE being the total bytes it holds; order the lines from the largest folder to "
            "the smallest, equal sizes by NAME in byte order. " + scope,
        ]) + ctx.hint("du -b --files0-from and sort")
        order = ("largest-first", "that the largest folder comes first",
                 usage(order="-k1,1n -k2,2"), report(totals, "ascending"))
    else:
        line_format = "`FOLDER BYTES`"
        lines = tuple(report(totals))
        if list(lines) != sorted(lines):  # `sort -k1,1` would then tie-break differently
            raise NotApplicable("a folder name is a prefix of another one")
        sentence = ctx.phrase([
            f"Write the size of each top-level folder of {tree.phrase} to `{out}`: one "
            "`FOLDER BYTES` line per folder (its name, a space, the total size in bytes), "
            "sorted by folder name in byte order. " + scope,
            f"How much does each folder directly inside {tree.phrase} weigh? Put `NAME "
            f"BYTES` lines in `{out}`, one per folder, ordered by NAME (C locale). " + scope,
            f"Produce `{out}` with the disk usage in bytes of every folder at the top of "
            f"{tree.phrase}, as `FOLDER BYTES` lines sorted by folder name (byte order). "
            + scope,
        ]) + ctx.hint("du -b --files0-from, awk and sort")
        order = ("by-name", "that the lines are sorted by folder name",
                 f"(cd {q(tree.path)} && find . -mindepth 2 -type f -print0 | "
                 "du -b --files0-from=-) |\n"
                 f"  {aggregate}printf \"%d %s\\n\", t[d], d}}' | LC_ALL=C sort -rn |\n"
                 f"  sed -E 's/^([0-9]+) (.*)$/\\2 \\1/' > {q(out)}", report(totals, "size"))
    solution = usage()
    compare = ctx.compare(order_matters=True)
    wrong = [order, ("top-level-files", "that files lying directly in the directory are not "
                     "counted", usage(depth=1), report(with_top))]
    alternative = ctx.python([tree.path, out, line_format], r'''
root, out, line_format = ARGS
totals = {}
for name in os.listdir(root):
    folder = os.path.join(root, name)
    if os.path.isdir(folder) and not os.path.islink(folder):
        sizes = [os.lstat(path).st_size for path, _ in regular(folder)]
        if sizes:
            totals[name] = sum(sizes)
if line_format.startswith(b'`BYTES'):
    rows = sorted((-size, name) for name, size in totals.items())
    write(out, [b'%d\t%s' % (-size, name) for size, name in rows])
else:
    write(out, [b'%s %d' % (name, totals[name]) for name in sorted(totals)])
''', prelude=PY_TREE)
    return StepResult(
        output=Report(path=out, phrase=f"the bytes held by each top-level folder of "
                      f"{tree.phrase}, as {line_format} lines", lines=lines),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[FileText(f"`{out}` reports the usage of each folder", path=out,
                         expected=lines_text(lines), compare=compare)],
        tools=("find", "du", "awk", "sort"),
        rules=report_rules(compare, lines, wrong))


@primitive("files.delete_old")
def delete_old(ctx: StepContext, source) -> StepResult:
    """Remove the files last modified before a cutoff."""
    first_step_only(ctx, "deleting files changes the tree in place")
    tree = tree_input(source, mtimes=True)
    cutoff = midnight_cutoff(ctx, tree)
    kept = [f for f in tree.files if f.mtime >= cutoff]

    def delete(cut: int = cutoff, depth: str = "") -> str:
        return f"find {q(tree.path)}{depth} -type f ! -newermt @{cut} -delete"

    wrong = [  # (name, stated, solution ignoring it, the files it keeps)
        ("cutoff-day", cutoff_day_rule(cutoff), delete(cut=cutoff + DAY),
         [f for f in tree.files if f.mtime > cutoff + DAY]),
        ("subfolders", "that files in subfolders are deleted too",
         delete(depth=" -maxdepth 1"),
         [f for f in tree.files if f.mtime >= cutoff or not top_level(f.relpath)]),
    ]
    sentence = ctx.phrase([
        f"Delete every file below {tree.phrase} (all subfolders, hidden files included) "
        f"that was last modified before {stamp(cutoff)}. Keep the newer files and leave "
        "the folders in place, even if they become empty.",
        f"Apply the retention cutoff {stamp(cutoff)} to {tree.phrase}: remove each file, in "
        "any subfolder, whose modification time is earlier than that; newer files and all "
        "directories stay.",
        f"Remove from {tree.phrase}, recursively, the files not modified since "
        f"{stamp(cutoff)}. Do not touch newer files and do not remove directories.",
    ]) + ctx.hint("find ! -newermt @EPOCH -delete")
    return StepResult(
        output=FileTree(path=tree.path, phrase=f"{tree.phrase} once the files older than "
                        f"{stamp(cutoff)} are deleted", files=tuple(kept)),
        instruction=sentence,
        solution=delete(),
        alternative=ctx.python([tree.path, stamp(cutoff)], r'''
root, cutoff = ARGS
for path, _ in list(regular(root)):
    if os.lstat(path).st_mtime < epoch(cutoff.decode()):
        os.remove(path)
''', prelude=PY_TREE),
        checks=[TreeListing(f"only files newer than the cutoff remain in {tree.path}",
                            root=tree.path, expected=tuple(f.relpath for f in kept))],
        tools=("find",), side_effect=True,
        rules=tuple(Rule(name, stated, ignored) for name, stated, ignored, left in wrong
                    if len(left) != len(kept)))


@primitive("files.copy_matching")
def copy_matching(ctx: StepContext, source) -> StepResult:
    """Copy the files matching a pattern into another directory, keeping subfolders."""
    tree = tree_input(source)
    visible = [f for f in tree.files if not is_hidden(f.relpath)]
    prefixes = sorted({basename(f.relpath).split("-")[0].split(" ")[0].split("_")[0]
                       for f in visible})
    patterns = [f"*.{ext}" for ext in sorted({extension(f.relpath) for f in visible} - {""})]
    patterns += [f"{prefix}*" for prefix in prefixes if len(prefix) >= 3 and prefix.isalnum()]
    usable = [p for p in patterns
              if 0 < sum(fnmatch.fnmatchcase(basename(f.relpath), p) for f in tree.files)
              < len(tree.files)]
    if not usable:
        raise NotApplicable("no name pattern selects part of the files")
    # Mostly a pattern whose case matters (`Report*` beside `report-03.pdf`).
    folded = [p for p in usable if any(
        fnmatch.fnmatchcase(ascii_lower(basename(f.relpath)), ascii_lower(p)) !=
        fnmatch.fnmatchcase(basename(f.relpath), p) for f in tree.files)]
    pattern = ctx.rng.choice(folded if folded and ctx.rng.random() < 0.7 else usable)
    chosen = [f for f in tree.files if fnmatch.fnmatchcase(basename(f.relpath), pattern)]
    dest = ctx.output_path("selection", "")
    sentence = ctx.phrase([
        f"Copy every file of {tree.phrase} whose name matches the shell pattern "
        f"`{pattern}` (case-sensitive; search all subfolders) into `{dest}`, keeping each "
        "file's subfolder path relative to the source directory and its modification "
        "time. Copy nothing else.",
        f"Gather the files named `{pattern}` (a case-sensitive glob on the file name) from "
        f"anywhere in {tree.phrase} into `{dest}`, preserving the folder layout below the source "
        "directory (e.g. `a/b/x` is copied to `a/b/x` under the destination) and the "
        "timestamps.",
        f"Create `{dest}` holding a copy of each file in {tree.phrase} matching `{pattern}` "
        "(a shell pattern, case-sensitive), at the same relative path as in the source "
        "(recreate the subfolders) and with the same modification time; other files are not "
        "copied.",
    ]) + ctx.hint("find -name ... -exec cp -p --parents")
    files = tuple(sorted(chosen, key=lambda f: f.relpath))

    def copy(tests: str = f"-type f -name {q(pattern)}", keep: str = "-p --parents") -> str:
        return (f"mkdir -p {q(dest)}\n"
                f"(cd {q(tree.path)} && find . {tests} -exec cp {keep} -t {q(dest)} {{}} +)")

    expected = {f.relpath for f in files}
    wrong = [  # (name, stated, solution ignoring it, the paths it copies)
        ("case-sensitive", "that the pattern is case-sensitive",
         copy(tests=f"-type f -iname {q(pattern)}"),
         {f.relpath for f in tree.files
          if fnmatch.fnmatchcase(ascii_lower(basename(f.relpath)), ascii_lower(pattern))}),
        ("subfolders", "that files in subfolders are copied too",
         copy(tests=f"-maxdepth 1 -type f -name {q(pattern)}"),
         {f.relpath for f in files if top_level(f.relpath)}),
        ("keep-folders", "that each copy keeps its subfolder path", copy(keep="-p"),
         {basename(f.relpath) for f in files}),
    ]
    rules = [Rule(name, stated, ignored) for name, stated, ignored, copied in wrong
             if copied != expected]
    if any(f.mtime is not None for f in files):  # the times are checked
        rules.append(Rule("mtimes", "that the copies keep their modification times",
                          copy(keep="--parents")))
    return StepResult(
        output=FileTree(path=dest, phrase=f"a folder holding copies of the `{pattern}` files "
                        f"of {tree.phrase} (same subfolders)",
                        files=files),
        instruction=sentence,
        solution=copy(),
        alternative=ctx.python([tree.path, dest, pattern], r'''
source, dest, pattern = ARGS
os.makedirs(dest, exist_ok=True)
for path, rel in regular(source):
    if fnmatch.fnmatchcase(os.path.basename(rel), pattern):
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(path, os.path.join(dest, rel))
''', prelude=PY_TREE),
        checks=[*moved_checks(f"{dest} holds the matching files", dest, list(files),
                              list(files)),
                *mtime_check("the copies keep their modification times", dest, files)],
        tools=("find", "cp"), rules=tuple(rules))

