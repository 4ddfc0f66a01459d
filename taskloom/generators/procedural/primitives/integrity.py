"""Checksum and integrity primitives: write a sha256 manifest, verify one, compare trees.

Manifests use `sha256sum`'s format (`HASH  PATH`, two spaces) with paths relative to the
tree's root, so `cd ROOT && sha256sum -c MANIFEST` verifies them; a manifest a step writes
goes to the output folder, never inside the tree it describes (that would change the tree).
"""

from __future__ import annotations

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import ChecksumList, FileTree, Report
from taskloom.generators.procedural.checks import FileText
from taskloom.generators.procedural.primitives._trees import (
    PY_TREE,
    basename,
    first_step_only,
    is_hidden,
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


@primitive("integrity.make_manifest")
def make_manifest(ctx: StepContext, source) -> StepResult:
    """Record the sha256 of every file of a tree."""
    tree = tree_input(source)
    skip_hidden = any(is_hidden(f.relpath) for f in tree.files) and ctx.rng.random() < 0.5
    listed = sorted((f for f in tree.files if not (skip_hidden and is_hidden(f.relpath))),
                    key=lambda f: f.relpath)
    if not listed:
        raise NotApplicable("no file to record")
    lines = tuple(f"{sha256(f.content)}  {f.relpath}" for f in listed)
    stem, ext = ctx.rng.choice((("SHA256SUMS", ""), ("checksums", "sha256"),
                                ("manifest", "txt")))
    out = ctx.output_path(stem, ext)
    scope = ("leaving out hidden files, whose names start with a dot" if skip_hidden else
             "hidden files included")
    fmt = ("in the format `sha256sum` prints, `HASH  PATH` (hex digest, two spaces, the path "
           f"relative to that directory{ctx.bare(' without a leading `./`')}), one line per "
           "file, sorted by PATH in byte order")
    sentence = ctx.phrase([
        f"Write a sha256 manifest of every file below {tree.phrase} (all subfolders; "
        f"{scope}) to `{out}`, {fmt}.",
        f"Record the SHA-256 checksum of each file of {tree.phrase}, recursively ({scope}), "
        f"in `{out}` {fmt}.",
        f"Create the checksum manifest `{out}` for {tree.phrase} and its subfolders ({scope}): "
        f"{fmt}.",
    ]) + ctx.hint("find -printf '%P\\0' | sort -z | xargs -0 sha256sum")
    hidden = " ! -name '.*'" if skip_hidden else ""

    def manifest(find: str = ".", tests: str = hidden, name: str = "-printf '%P\\0'",
                 sort: str = "LC_ALL=C sort -z | ", after: str = "") -> str:
        return (f"(cd {q(tree.path)} && find {find} -type f{tests} {name} | "
                f"{sort}xargs -0 -r sha256sum{after}) > {q(out)}")

    rules = []
    if any(is_hidden(f.relpath) for f in tree.files):
        rules.append(Rule("hidden", "that hidden files are " +
                          ("left out" if skip_hidden else "included"),
                          manifest(tests="" if skip_hidden else " ! -name '.*'")))
    if any("/" in f.relpath for f in listed):
        rules.append(Rule("subfolders", "that the files in subfolders are listed too",
                          manifest(find=". -maxdepth 1")))
    if ctx.path_form == "text":
        rules.append(Rule("no-dot-slash", "that the paths have no leading `./`",
                          manifest(name="-print0")))
    if sorted(lines) != list(lines):
        rules.append(Rule("sort-path", "that the lines are sorted by path",
                          manifest(sort="", after=" | LC_ALL=C sort")))
    return StepResult(
        output=ChecksumList(path=out, phrase=f"a sha256sum manifest of the files of "
                            f"{tree.phrase} (paths relative to it, sorted)",
                            lines=lines, tree=tree),
        instruction=sentence,
        solution=manifest(),
        alternative=ctx.python(
            [tree.path, out, "skip-hidden" if skip_hidden else "all", ctx.dot_slash], r'''
root, out, scope, dot = ARGS
files = sorted((rel, path) for path, rel in regular(root)
               if scope == b'all' or not os.path.basename(rel).startswith(b'.'))
write(out, [sha(path) + b'  ' + dot + rel for rel, path in files])
''', prelude=PY_TREE),
        checks=[FileText(f"`{out}` is the sha256 manifest", path=out, expected=lines_text(lines),
                         compare=ctx.compare(order_matters=True), form=ctx.path_form)],
        tools=("find", "sort", "sha256sum"), rules=tuple(rules))


def _entries(manifest: ChecksumList) -> list[tuple[str, str]]:
    entries = []
    for line in manifest.lines:
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or name.startswith("\\"):
            raise NotApplicable("the manifest has lines sha256sum would not read")
        entries.append((digest, name))
    return entries


@primitive("integrity.verify_manifest")
def verify_manifest(ctx: StepContext, source) -> StepResult:
    """Find the files whose content no longer matches a manifest."""
    if not isinstance(source, ChecksumList) or source.tree is None or not source.lines:
        raise NotApplicable("needs a sha256 manifest with the tree it describes")
    tree = source.tree
    current = {f.relpath: f.content for f in tree.files}
    status = {}
    for digest, name in _entries(source):
        if name.removeprefix("./") not in current:
            status[name] = "MISSING"
        else:
            ok = sha256(current[name.removeprefix("./")]) == digest
            status[name] = "OK" if ok else "FAILED"
    if len(status) != len(source.lines):
        raise NotApplicable("the manifest lists a file twice")
    if all(value == "OK" for value in status.values()):
        # A manifest an earlier step made of files nothing changed since: "every file OK"
        # would be the answer whatever the agent checked, or if it checked nothing.
        raise NotApplicable("every file still matches the manifest: the report would be "
                            "known without verifying anything")
    only_problems = ctx.rng.random() < 0.6
    lines = tuple(sorted(f"{name}: {value}" for name, value in status.items()
                         if value != "OK" or not only_problems))
    out = ctx.output_path("verification", "txt")
    where = f" (its paths are relative to `{tree.path}`)"
    which = ("one line per file that does not verify" if only_problems else
             "one line per file listed in the manifest")
    fmt = (f"{which}, `PATH: STATUS`, where PATH is written as in the manifest and STATUS "
           "is " + ("" if only_problems else "`OK` when the file's sha256 matches, ") +
           "`FAILED` when the file exists but its content differs, or `MISSING` when the "
           f"file does not exist; lines {ctx.order('sorted in byte order')}")
    sentence = ctx.phrase([
        f"Check the files against {source.phrase}{where} and write the result to `{out}`: "
        f"{fmt}.",
        f"Verify {source.phrase}{where}: write to `{out}` {fmt}.",
        f"Find out which files still match {source.phrase}{where}. Report in `{out}` {fmt}.",
    ]) + ctx.hint("sha256sum -c, then grep/sed on its output")
    keep = " | grep -v ': OK$'" if only_problems else ""

    def report(keep: str = keep, missing: str = "MISSING",
               sort: str = " | LC_ALL=C sort") -> str:
        return (f"(cd {q(tree.path)} && sha256sum -c {q(source.path)} 2>/dev/null || true)"
                f"{keep} |\n"
                f"  sed 's/: FAILED open or read$/: {missing}/'{sort} > {q(out)}")

    solution = report()
    rules = []
    if only_problems and "OK" in status.values():
        rules.append(Rule("failures-only", "that only the files that do not verify are "
                          "listed", report(keep="")))
    if "MISSING" in status.values():
        rules.append(Rule("missing", "that a file that does not exist is reported as "
                          "`MISSING`", report(missing="FAILED")))
    # sha256sum -c reports in the manifest's order
    as_listed = [f"{name}: {status[name]}" for _, name in _entries(source)
                 if status[name] != "OK" or not only_problems]
    if ctx.compare() != "set" and as_listed != list(lines):
        rules.append(Rule("byte-order", "that the lines are sorted in byte order",
                          report(sort="")))
    counts = {value: sum(v == value for v in status.values()) for value in ("FAILED",
                                                                             "MISSING")}
    summary = ", ".join(f"{n} {value}" for value, n in counts.items() if n)
    alternative = ctx.python(
        [source.path, tree.path, out, "problems" if only_problems else "all"], r'''
manifest, root, out, which = ARGS
lines = []
with open(manifest, 'rb') as handle:
    for line in handle.read().splitlines():
        if not line.strip():
            continue
        digest, name = line[:64], line[66:]
        path = os.path.join(root, name)
        status = (b'MISSING' if not os.path.isfile(path) else
                  b'OK' if sha(path) == digest.lower() else b'FAILED')
        if status != b'OK' or which == b'all':
            lines.append(name + b': ' + status)
write(out, sorted(lines))
''', prelude=PY_TREE)
    return StepResult(
        output=Report(path=out, phrase=f"the `PATH: STATUS` lines of verifying {source.phrase}"
                      f" ({'failures only' if only_problems else 'every file'}, sorted)",
                      lines=lines),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[FileText(f"`{out}` reports the verification ({summary})", path=out,
                         expected=lines_text(lines), compare=ctx.compare())],
        tools=("sha256sum", "grep", "sed", "sort"), rules=tuple(rules))


def _make_copy(ctx: StepContext, tree: FileTree, copy: str) -> dict[str, str]:
    """Write an older copy of the tree at `copy`; returns relpath -> status.

    Some visible files changed since, some are not in the copy, and some of the copy's are
    gone from the tree; a hidden file (a cache, say) changed too, when the tree has one.
    """
    visible = [f for f in tree.files if not is_hidden(f.relpath)]
    shuffled = list(visible)
    ctx.rng.shuffle(shuffled)
    changed = shuffled[:ctx.rng.randint(1, 3)]
    missing = shuffled[len(changed):len(changed) + ctx.rng.randint(1, 2)]
    hidden = [f for f in tree.files if is_hidden(f.relpath)]
    if hidden:
        changed.append(ctx.rng.choice(hidden))
    status = {f.relpath: "DIFFERS" for f in changed}
    status.update({f.relpath: "MISSING" for f in missing})
    for f in tree.files:
        if f in missing:
            continue
        content = f.content
        if f in changed:
            content = f.content[: len(f.content) // 2] + b"edited after the copy was made\n"
        mtime = f.mtime - DAY if f in changed and f.mtime else f.mtime
        ctx.world.add(f"{copy}/{f.relpath}", content, mode=f.mode, mtime=mtime)
    folders = sorted({f.relpath.rpartition("/")[0] for f in visible})
    names = {f.relpath for f in tree.files}
    for number in range(ctx.rng.randint(1, 2)):
        folder = ctx.rng.choice(folders)
        relpath = f"{folder}/scratch-{number + 1}.txt".lstrip("/")
        if relpath in names:
            continue
        status[relpath] = "EXTRA"
        ctx.world.add(f"{copy}/{relpath}", f"notes {number}\n".encode())
    return status


@primitive("integrity.compare_trees")
def compare_trees(ctx: StepContext, source) -> StepResult:
    """Report the files that differ or are missing between a tree and its copy."""
    first_step_only(ctx, "the copy to compare with is made with the input data")
    tree = tree_input(source)
    if sum(not is_hidden(f.relpath) for f in tree.files) < 4:
        raise NotApplicable("too few files to compare")
    ctx.world.mkdir("/mnt/backup")
    copy = ctx.output_path(basename(tree.path), "", directory="/mnt/backup")
    status = _make_copy(ctx, tree, copy)
    lines = tuple(f"{status[path]} {path}" for path in sorted(status))
    out = ctx.output_path("tree-diff", "txt")
    fmt = ("one `STATUS PATH` line per file (hidden ones included) that is not identical "
           "in both trees, PATH "
           f"relative to the tree roots{ctx.bare(' (no leading `./`)')}; STATUS is "
           "`DIFFERS` (in both, "
           "different content), "
           f"`MISSING` (in `{tree.path}` but not in the copy) or `EXTRA` (only in the copy); "
           "lines sorted by PATH in byte order; identical files are not listed")
    sentence = f"`{copy}` is a copy of {tree.phrase} made some time ago. " + ctx.phrase([
        f"Compare the two trees, subfolders included, and write to `{out}` "
        f"{fmt}.",
        f"Find what changed between `{tree.path}` and `{copy}` and report it in `{out}`: {fmt}.",
        f"Write to `{out}` the differences between `{tree.path}` and its copy `{copy}`: {fmt}.",
    ]) + ctx.hint("diff on sorted find listings, cmp for the common files")
    def compare(tests: str = "", sides: tuple[str, str] = ("MISSING", "EXTRA"),
                content: bool = True, sort: str = "LC_ALL=C sort -k2") -> str:
        listing = f"find . -type f{tests} -printf '%P\\n' | LC_ALL=C sort"
        both = ("  LC_ALL=C comm -12 \"$a\" \"$b\" | while IFS= read -r f; do\n"
                f"    cmp -s {q(tree.path)}/\"$f\" {q(copy)}/\"$f\" || "
                "printf 'DIFFERS %s\\n' \"$f\"\n"
                "  done\n") if content else ""
        return (f"a=$(mktemp); b=$(mktemp)\n"
                f"(cd {q(tree.path)} && {listing}) > \"$a\"\n"
                f"(cd {q(copy)} && {listing}) > \"$b\"\n"
                "{\n"
                f"  diff \"$a\" \"$b\" | sed -n 's/^< /{sides[0]} /p; s/^> /{sides[1]} /p'\n"
                f"{both}"
                f"}} | {sort} > {q(out)}\n"
                "rm -f \"$a\" \"$b\"")

    solution = compare()
    rules = [Rule("content", "that files in both trees whose content differs are listed as "
                  "`DIFFERS`", compare(content=False)),
             Rule("direction", "that `MISSING` is a file not in the copy and `EXTRA` one only "
                  "in the copy", compare(sides=("EXTRA", "MISSING")))]
    if any(is_hidden(path) for path in status):
        rules.append(Rule("hidden", "that hidden files are compared too",
                          compare(tests=" ! -name '.*'")))
    if sorted(lines) != list(lines):
        rules.append(Rule("sort-path", "that the lines are sorted by PATH",
                          compare(sort="LC_ALL=C sort")))
    alternative = ctx.python([tree.path, copy, out, ctx.dot_slash], r'''
root, copy, out, dot = ARGS
here = {rel: path for path, rel in regular(root)}
there = {rel: path for path, rel in regular(copy)}
status = {rel: b'MISSING' for rel in here.keys() - there.keys()}
status.update({rel: b'EXTRA' for rel in there.keys() - here.keys()})
for rel in here.keys() & there.keys():
    if sha(here[rel]) != sha(there[rel]):
        status[rel] = b'DIFFERS'
write(out, [status[rel] + b' ' + dot + rel for rel in sorted(status)])
''', prelude=PY_TREE)
    return StepResult(
        output=Report(path=out, phrase=f"the `STATUS PATH` lines of the differences between "
                      f"{tree.phrase} and its copy `{copy}`", lines=lines),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[FileText(f"`{out}` lists the differences", path=out, expected=lines_text(lines),
                         compare=ctx.compare(order_matters=True), form=ctx.path_form)],
        tools=("find", "sort", "diff", "comm", "cmp"), rules=tuple(rules))
