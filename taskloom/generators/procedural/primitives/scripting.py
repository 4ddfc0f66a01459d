"""Shell scripting primitives: loops over files, reusable tools, installing scripts.

A batch conversion writes converted copies to a new directory. A tool the agent writes
is checked by running it: the contract (arguments, output, exit
codes) is spelled out in the instruction, and the test runs the tool on the step's input
and on a small file of its own. Its text is the agent's, so the `ToolScript` it produces
has no lines: text steps cannot take it as input, installing and scheduling can.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, replace

from taskloom.errors import Misplaced, NotApplicable
from taskloom.generators.procedural.artifacts import (
    FileTree,
    Script,
    TextFile,
    ToolScript,
    TreeFile,
)
from taskloom.generators.procedural.checks import RUNS_START, Assertion, Modes, ToolRuns
from taskloom.generators.procedural.primitives._trees import extension, is_hidden, sha256
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    primitive,
)
from taskloom.generators.procedural.world import lines_text, q

TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")
TEXT_EXTENSIONS = frozenset(("md", "txt", "html", "css", "js", "svg", "csv", "tsv", "json",
                             "yaml", "yml", "conf", "py", "sh", "toml", "xml", "log", "sql"))
FIXTURE = "/tmp/taskloom tool check.txt"  # a space: an unquoted "$2" breaks on it
# A copy of the tool's example input, written by the check: the tool is judged on that
# content, not on a file an earlier step should have left (the instruction may not say
# where, or in which form, when it states only the goal).
SAMPLE = "/tmp/taskloom tool sample.txt"
# The tool's own file again, without the newline after its last line: the tool still ends
# every line it prints with one (`sed -n` alone copies the missing one).
OPEN = "/tmp/taskloom tool open.txt"
# And again where the tool's user may not read it.
CLOSED = "/tmp/taskloom tool closed.txt"
# And named relative to the folder the runs start in (a tool that began with `cd /` passed).
NEARBY = FIXTURE.removeprefix(RUNS_START + "/")


@dataclass(frozen=True)
class SameBytes(Assertion):
    """Two files hold the same bytes (both read when the test runs)."""

    original: str = ""
    copy: str = ""

    def body(self) -> list[str]:
        """Compare the bytes of the two files; a link to the original is not a copy."""
        return [f"copy, original = os.lstat({self.copy!r}), os.lstat({self.original!r})",
                "assert stat.S_ISREG(copy.st_mode), 'not a regular file'",
                "assert stat.S_ISREG(original.st_mode), 'the original is no longer a file'",
                "assert (copy.st_dev, copy.st_ino) != (original.st_dev, original.st_ino), "
                "'a hard link to the original, not a copy'",
                f"assert Path({self.copy!r}).read_bytes() == Path({self.original!r}).read_bytes()"]

    def reads(self) -> tuple[str, ...]:
        """Both files."""
        return (self.original, self.copy)


@dataclass(frozen=True)
class ConvertedTree(Assertion):
    """A directory holds the converted copies, even if a later step renamed or moved them.

    A copy still at its relative path has the new bytes; every new content is somewhere in
    the tree; no unconverted original content is.
    """

    root: str = ""
    files: tuple[tuple[str, str, str], ...] = ()  # (relpath, original sha256, new sha256)
    others: tuple[str, ...] = ()  # sha256 of files that must not be copied (nor converted)
    originals: tuple[tuple[str, str], ...] = ()  # (path, sha256) of originals left alone

    def body(self) -> list[str]:
        """Digest every file under the root, then compare by path and by content."""
        gone = {old for _, old, _ in self.files} - {new for _, _, new in self.files}
        return [
            f"for path, digest in {[list(o) for o in self.originals]!r}:",
            "    assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == digest, "
            "f'original changed: {path}'",
            f"root = Path({self.root!r})",
            "assert root.is_dir(), root",
            "found = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() "
            "for p in root.rglob('*') if p.is_file() and not p.is_symlink()}",
            f"for rel, old, new in {[list(f) for f in self.files]!r}:",
            "    if rel in found:",
            "        assert found[rel] == new, rel",
            f"gone = set({sorted(gone)!r})",
            "left = sorted(rel for rel, digest in found.items() if digest in gone)",
            "assert not left, f'copies left unconverted: {left}'",
            f"missing = set({sorted({new for _, _, new in self.files})!r}) - set(found.values())",
            "assert not missing, f'{len(missing)} converted files are missing'",
            f"others = set({sorted(self.others)!r})",
            "copied = sorted(rel for rel, digest in found.items() if digest in others)",
            "assert not copied, f'files of other kinds copied: {copied}'"]

    def reads(self) -> tuple[str, ...]:
        """The tree, and the originals."""
        return (self.root, *(path for path, _ in self.originals))


@primitive("script.batch_convert")
def batch_convert(ctx: StepContext, source) -> StepResult:
    """Converted copies of every file of one extension, made with a loop.

    The copies go to a new directory: converting in place would change files an earlier
    step of the task is checked on.
    """
    if not isinstance(source, FileTree) or not source.files:
        raise NotApplicable("needs a directory tree")
    tree = source
    hidden = {extension(f.relpath) for f in tree.files if is_hidden(f.relpath)}
    by_ext: dict[str, list[TreeFile]] = {}
    for item in tree.files:
        ext = extension(item.relpath)
        if ext in TEXT_EXTENSIONS - hidden and not is_hidden(item.relpath):
            by_ext.setdefault(ext, []).append(item)
    if not by_ext:
        raise NotApplicable("no text files to convert")
    ext = ctx.rng.choice(sorted(by_ext))
    kind = ctx.rng.choice(["replace", "header"] + (["crlf"] if ctx.step == 1 else []))
    targets = by_ext[ext]
    if kind == "replace":
        words = sorted({w for f in targets
                        for w in TOKEN.findall(f.content.decode("utf-8", "replace"))})
        words = [w for w in words if w.upper() != w]
        if not words:
            raise NotApplicable("no word to replace")
        word = ctx.rng.choice(words)
        new = word.upper()

        def convert(data: bytes) -> bytes:
            return data.replace(word.encode(), new.encode())

        what = f"every occurrence of `{word}` replaced with `{new}`"
        change = f"data = data.replace(os.fsencode({word!r}), os.fsencode({new!r}))"
        command = f"sed 's/{word}/{new}/g' \"$f\""
        hint = "find -print0 | while read, sed"
        twice = any(line.count(word.encode()) > 1 for f in targets
                    for line in f.content.split(b"\n"))
        # without the g flag only a line's first occurrence is replaced
        mistake = ("every-occurrence", "that every occurrence on a line is replaced",
                   f"sed 's/{word}/{new}/' \"$f\"") if twice else None
    elif kind == "header":
        header = f"# Managed by {ctx.domain.org}; do not edit by hand."

        def convert(data: bytes) -> bytes:
            return header.encode() + b"\n" + data

        what = (f"the line `{header}` inserted as a new first line (an empty file becomes "
                "just that line)")
        change = f"data = os.fsencode({header!r}) + b'\\n' + data"
        command = f"{{ printf '%s\\n' {q(header)}; cat \"$f\"; }}"
        hint = "find -print0 | while read, printf and cat"
        # sed's `1i` inserts before line 1: an empty file, with no line, stays empty
        mistake = ("empty-file", "that an empty file becomes just the header line",
                   f"sed {q('1i ' + header)} \"$f\"") \
            if any(not f.content for f in targets) else None
    else:  # the files came from Windows: make the generated ones CRLF first
        converted = []
        for item in targets:
            crlf = item.content.replace(b"\n", b"\r\n")
            converted.append(replace(item, content=crlf))
            ctx.world.add(f"{tree.path}/{item.relpath}", crlf, mode=item.mode,
                          owner=item.owner, group=item.group, mtime=item.mtime)
        targets = converted

        def convert(data: bytes) -> bytes:
            return data.replace(b"\r\n", b"\n")

        what = "Windows line endings (CRLF) turned into Unix ones (LF)"
        change = "data = data.replace(b'\\r\\n', b'\\n')"
        command = "sed 's/\\r$//' \"$f\""
        hint = "find -print0 | while read, sed 's/\\r$//'"
        mistake = None
    dest = ctx.output_path(f"converted-{ext}", "")
    result = tuple(TreeFile(f.relpath, convert(f.content), 0o644, None) for f in targets)
    if all(a.content == b.content for a, b in zip(targets, result, strict=True)):
        raise NotApplicable("the conversion changes nothing")
    where = f"every `*.{ext}` file under {tree.phrase} (subfolders included)"
    sentence = ctx.phrase([
        f"For {where}, write a converted copy to the new directory {dest} (create it), at "
        f"the same relative path, with {what}. Do not modify the originals; copy no other "
        "files.",
        f"Batch-convert {where} into {dest}: each file goes to the same relative path below "
        f"{dest} (create the folders), with {what}; the originals stay untouched and other "
        "file types are not copied.",
        f"Loop over {where} and save each one under the new directory {dest}, keeping its "
        f"path relative to {tree.path}, with {what}. Leave the source files as they are and "
        "copy nothing else.",
    ]) + ctx.hint(hint)
    def loop(find: str = f"-type f -name {q('*.' + ext)}",
             write: str = f"{command} > \"$dest/$rel\"") -> str:
        return (f"src={q(tree.path)}; dest={q(dest)}\n"
                f"find \"$src\" {find} -print0 | "
                "while IFS= read -r -d '' f; do\n"
                "  rel=\"${f#\"$src\"/}\"\n"
                "  mkdir -p \"$dest/$(dirname \"$rel\")\"\n"
                f"  {write}\n"
                "done")

    solution = loop()
    wanted = {f.relpath for f in targets}
    others = [f for f in tree.files if f.relpath not in wanted]
    kept = {sha256(f.content) for f in targets} | {sha256(f.content) for f in result}
    forbidden = {sha256(data) for f in others for data in (f.content, convert(f.content))}
    forbidden -= kept
    # the originals are checked where the instruction names their folder
    originals = tuple((f"{tree.path}/{f.relpath}", sha256(f.content)) for f in targets) \
        if tree.path in tree.phrase else ()
    rules = []
    top = {sha256(b.content) for b in result if "/" not in b.relpath}
    if {sha256(b.content) for b in result} - top:  # copies in subfolders are checked
        rules.append(Rule("subfolders", "the files in subfolders",
                          loop(find=f"-maxdepth 1 -type f -name {q('*.' + ext)}")))
    if any(sha256(convert(f.content)) in forbidden for f in others if _plain(f.content)):
        rules.append(Rule("only-ext", f"that only the *.{ext} files are copied",
                          loop(find="-type f")))
    if mistake:
        rules.append(Rule(mistake[0], mistake[1],
                          loop(write=f"{mistake[2]} > \"$dest/$rel\"")))
    if originals:  # converted in place, then copied
        rules.append(Rule("originals", "that the originals stay unchanged",
                          loop(write=f"{command} > \"$f.tmp\" && mv \"$f.tmp\" \"$f\"\n"
                                     "  cp \"$f\" \"$dest/$rel\"")))
    # Python walks the tree (the files found first, then written) and converts the bytes.
    alternative = ctx.python(
        [tree.path, dest, ext],
        "import os, sys\n"
        "src, dest, ext = sys.argv[1:4]\n"
        "found = [os.path.join(top, name) for top, _, names in os.walk(src)\n"
        "         for name in names if name.endswith('.' + ext)]\n"
        "for path in found:\n"
        "    if os.path.islink(path) or not os.path.isfile(path):\n"
        "        continue\n"
        "    with open(path, 'rb') as handle:\n"
        "        data = handle.read()\n"
        f"    {change}\n"
        "    target = os.path.join(dest, os.path.relpath(path, src))\n"
        "    os.makedirs(os.path.dirname(target), exist_ok=True)\n"
        "    with open(target, 'wb') as handle:\n"
        "        handle.write(data)\n")
    return StepResult(
        output=FileTree(path=dest, phrase=f"converted copies of {where}, with {what}",
                        files=result),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[ConvertedTree(f"{dest} holds the converted *.{ext} files", root=dest,
                              files=tuple((a.relpath, sha256(a.content), sha256(b.content))
                                          for a, b in zip(targets, result, strict=True)),
                              others=tuple(sorted(forbidden)), originals=originals)],
        tools=("find", "bash", "sed"), rules=tuple(rules))


def _plain(data: bytes) -> bool:
    """Text sed turns into what Python's bytes operations do: UTF-8, no CR, no NUL."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\r" not in data and b"\0" not in data


def _top(lines: list[str], count: int) -> str:
    counts = Counter(line for line in lines if line.strip())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0].encode()))[:count]
    return lines_text(f"{n} {line}" for line, n in ranked)


TOOLS = {
    "count": ("count-matches", "WORD FILE", "prints the number of lines of FILE that contain "
              "WORD (plain text, case-sensitive, not a pattern) as a bare number, `0` when "
              "there is none"),
    "match": ("show-matches", "WORD FILE", "prints every line of FILE that contains WORD "
              "(plain text, case-sensitive, not a pattern) as `LINENO:LINE`, line numbers "
              "from 1, in file order; nothing when no line matches"),
    "top": ("top-lines", "N FILE", "prints the N most frequent non-blank lines of FILE (a "
            "line of only spaces and tabs is blank) as "
            "`COUNT LINE` (count, one space, the line), highest count first, equal counts "
            "in byte order of the line; fewer lines when FILE has fewer distinct lines; N "
            "must be a whole number (digits only), otherwise it is a usage error"),
    "range": ("line-range", "FIRST LAST FILE", "prints lines FIRST to LAST of FILE (counting "
              "from 1, both included; stops at the end of the file); FIRST and LAST must be "
              "positive whole numbers in decimal digits (a leading zero is allowed: 08 is 8) "
              "with FIRST <= LAST, otherwise it is a usage error"),
}
# The hint names the tools of the reference code (all four kinds' tools in one hint sent a
# blind solver of a line range to grep and uniq)
TOOL_HINTS = {"count": "check $#, then grep -cF --", "match": "check $#, then grep -nF --",
              "top": "check $#, then grep -v, sort | uniq -c, sort -rn | head",
              "range": "check $# and the numbers, then sed -n"}
TOOL_CODE = {
    "count": ('[ "$#" -eq 2 ] || { echo "usage: $0 WORD FILE" >&2; exit 2; }',
              '[ -r "$2" ] || { echo "cannot read $2" >&2; exit 1; }',
              'grep -cF -- "$1" "$2" || true'),
    "match": ('[ "$#" -eq 2 ] || { echo "usage: $0 WORD FILE" >&2; exit 2; }',
              '[ -r "$2" ] || { echo "cannot read $2" >&2; exit 1; }',
              'grep -nF -- "$1" "$2" || true'),
    "top": ('[ "$#" -eq 2 ] || { echo "usage: $0 N FILE" >&2; exit 2; }',
            'case "$1" in ""|*[!0-9]*) echo "usage: $0 N FILE" >&2; exit 2;; esac',
            '[ -r "$2" ] || { echo "cannot read $2" >&2; exit 1; }',
            "grep -v '^[[:space:]]*$' \"$2\" | LC_ALL=C sort | uniq -c | sed 's/^ *//' | "
            'LC_ALL=C sort -s -k1,1nr | head -n "$1"'),
    "range": ('[ "$#" -eq 3 ] || { echo "usage: $0 FIRST LAST FILE" >&2; exit 2; }',
              'case "$1$2" in *[!0-9]*) echo "usage: $0 FIRST LAST FILE" >&2; exit 2;; esac',
              '[ "$1" -ge 1 ] && [ "$1" -le "$2" ] || '
              '{ echo "usage: $0 FIRST LAST FILE" >&2; exit 2; }',
              '[ -r "$3" ] || { echo "cannot read $3" >&2; exit 1; }',
              'sed -n "$1,$2p" "$3" | sed ' "'$a\\'"),  # adds a missing final newline
}


# The alternative's tools: a bash wrapper that runs the contract in Python (stdlib).
TOOL_PYTHON = {
    "count": ('if len(args) != 2:', '    usage()',
              'word, lines = os.fsencode(args[0]), read(args[1])',
              "out.write(b'%d\\n' % sum(word in line for line in lines))"),
    "match": ('if len(args) != 2:', '    usage()',
              'word, lines = os.fsencode(args[0]), read(args[1])',
              'for number, line in enumerate(lines, 1):',
              '    if word in line:',
              "        out.write(b'%d:%s\\n' % (number, line))"),
    "top": ('if len(args) != 2 or not re.fullmatch("[0-9]+", args[0]):', '    usage()',
            'lines = read(args[1])',
            'counts = collections.Counter(line for line in lines if line.strip())',
            'ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))',
            'for line, count in ranked[:int(args[0])]:',
            "    out.write(b'%d %s\\n' % (count, line))"),
    "range": ('if len(args) != 3 or not all(re.fullmatch("[0-9]+", a) for a in args[:2]):',
              '    usage()',
              'first, last = int(args[0]), int(args[1])',
              'if not 1 <= first <= last:', '    usage()',
              'for line in read(args[2])[first - 1:last]:',
              "    out.write(line + b'\\n')"),
}


def _python_tool(kind: str, name: str, usage: str) -> list[str]:
    """The lines of a bash script that runs the tool's contract in Python."""
    return ["#!/bin/bash", "exec python3 - \"$@\" <<'TOOL_PY'",
            "import collections, os, re, sys",
            "args, out = sys.argv[1:], sys.stdout.buffer",
            "def usage():",
            f"    sys.stderr.write({f'usage: {name} {usage}'!r} + '\\n')",
            "    sys.exit(2)",
            "def read(path):",
            "    try:",
            "        with open(path, 'rb') as handle:",
            "            return [line.removesuffix(b'\\n') for line in handle]",
            "    except OSError as error:",
            "        sys.stderr.write(f'{path}: {error.strerror}\\n')",
            "        sys.exit(1)",
            *TOOL_PYTHON[kind], "TOOL_PY"]


def _run_tool(kind: str, args: tuple[str, ...], lines: list[str]) -> str:
    """What the tool prints for these arguments on a file of these lines."""
    if kind == "count":
        return f"{sum(args[0] in line for line in lines)}\n"
    if kind == "match":
        return lines_text(f"{n}:{line}" for n, line in enumerate(lines, 1) if args[0] in line)
    if kind == "top":
        return _top(lines, int(args[0]))
    first, last = int(args[0]), int(args[1])
    return lines_text(lines[first - 1:last])


def _fixture(ctx: StepContext) -> list[str]:
    """A small file of the tool's own.

    It has repeats (ten of one line: counts sorted as text put 2 first), equal counts,
    blank lines (of spaces, of a tab), a line that differs only by a trailing space, a dot
    that is not a pattern, a backslash (`read` without -r drops it) and the words in other
    case, so each rule of the contracts changes some output.
    """
    words = ctx.rng.sample(ctx.domain.words, 3)
    lines = [f"{words[0]} build 1.2 ok", f"{words[1]} build 102 ok", *[words[2]] * 10, "",
             "   ", "\t", f"{words[2]} ", f"{words[0]} build 1.2 ok",
             f"  {words[1]} * C:\\share",
             " ".join(w.capitalize() if i % 2 else w.upper() for i, w in enumerate(words))
             + " restarted"]
    ctx.rng.shuffle(lines)
    return lines


def _fold(text: str) -> str:
    """ASCII letters in lower case (what `grep -i` folds in the C locale)."""
    return text.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                                        "abcdefghijklmnopqrstuvwxyz"))


def _run_mistake(kind: str, mistake: str, args: tuple[str, ...], lines: list[str]) -> str:
    """What a tool with this mistake prints for the arguments of a successful run."""
    if mistake in ("fixed-string", "case-sensitive"):
        word = args[0]

        def has(line: str) -> bool:
            if mistake == "fixed-string":  # a BRE: the words and `1.2` mean the same in re
                return re.search(word, line) is not None
            return _fold(word) in _fold(line)

        if kind == "count":
            return f"{sum(has(line) for line in lines)}\n"
        return lines_text(f"{n}:{line}" for n, line in enumerate(lines, 1) if has(line))
    if mistake == "non-blank":
        counts = Counter(lines)
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0].encode()))
        return lines_text(f"{n} {line}" for line, n in ranked[:int(args[0])])
    if mistake == "ties":  # `sort -rn`: equal counts in reverse byte order of the line
        counts = Counter(line for line in lines if line.strip())
        ranked = sorted(counts.items(), key=lambda item: (item[1], item[0].encode()),
                        reverse=True)
        return lines_text(f"{n} {line}" for line, n in ranked[:int(args[0])])
    first, last = int(args[0]), int(args[1])  # "inclusive": LAST - FIRST lines
    return lines_text(lines[first - 1:][:last - first])


# Each tool's stated rules: (name, the rule in words, the code line it replaces or drops,
# the wrong line or None). Usage and unreadable-file rules change an exit status of the
# runs the checks make; the others change output, so they are kept only where they do.
TOOL_MISTAKES = {
    "count": (("fixed-string", "that WORD is plain text, not a pattern", 2,
               'grep -c -- "$1" "$2" || true'),
              ("case-sensitive", "that the match is case-sensitive", 2,
               'grep -ciF -- "$1" "$2" || true')),
    "match": (("fixed-string", "that WORD is plain text, not a pattern", 2,
               'grep -n -- "$1" "$2" || true'),
              ("case-sensitive", "that the match is case-sensitive", 2,
               'grep -niF -- "$1" "$2" || true')),
    "top": (("non-blank", "that blank lines are not counted", 3,
             'LC_ALL=C sort "$2" | uniq -c | sed \'s/^ *//\' | LC_ALL=C sort -s -k1,1nr | '
             'head -n "$1"'),
            ("ties", "that equal counts are in byte order of the line", 3,
             "grep -v '^[[:space:]]*$' \"$2\" | LC_ALL=C sort | uniq -c | sed 's/^ *//' | "
             'LC_ALL=C sort -rn | head -n "$1"'),
            ("whole-number", "that an N other than a whole number is a usage error", 1, None)),
    "range": (("inclusive", "that LAST is included", 4,
               'tail -n +"$1" "$3" | head -n "$(($2 - $1))"'),
              ("first-after-last", "that FIRST after LAST is a usage error", 2,
               '[ "$1" -ge 1 ] || { echo "usage: $0 FIRST LAST FILE" >&2; exit 2; }')),
}


@primitive("script.write_tool")
def write_tool(ctx: StepContext, source) -> StepResult:
    """A small command-line tool with a specified contract, run on the input."""
    if not isinstance(source, TextFile) or not source.lines:
        raise NotApplicable("needs a text file with known lines")
    if ctx.difficulty.specification == 3 and ctx.step > 1:
        # The goal-only instruction hides the step that makes the example input, and the
        # tool is judged on a copy of that input: nothing would check the hidden step.
        raise Misplaced("the example input's step would be hidden and unchecked")
    lines = list(source.lines)
    kind = ctx.rng.choice(sorted(TOOLS))
    name, usage, contract = TOOLS[kind]
    fixture = _fixture(ctx)
    last = max(number for number, line in enumerate(fixture, 1) if line.strip())
    unended = fixture[last:] + fixture[:last]  # a line with text last
    counts = Counter(t for line in set(lines) for t in set(TOKEN.findall(line)))
    words = sorted(t for t, n in counts.items() if n < len(set(lines)))
    if kind in ("count", "match"):
        if not words:
            raise NotApplicable("no word occurs in only some lines")
        word = ctx.rng.choice(words)
        common = next(line.split()[0] for line in fixture if line.strip())
        slashed = next(line for line in fixture if "\\" in line).split()[0]
        runs = [(word, SAMPLE), ("1.2", FIXTURE), (common, FIXTURE), ("zz-none", FIXTURE),
                (slashed, FIXTURE), (unended[-1].split()[0], OPEN)]
    elif kind == "top":
        runs = [(str(ctx.rng.randint(2, 5)), SAMPLE), ("2", FIXTURE), ("9", FIXTURE),
                ("9", OPEN)]
    else:
        if len(lines) < 3:
            raise NotApplicable("too short for a range")
        first = ctx.rng.randint(1, len(lines) - 1)
        last = ctx.rng.randint(first, min(len(lines), first + 30))
        runs = [(str(first), str(last), SAMPLE), ("2", "4", FIXTURE),
                ("7", "20", FIXTURE), ("1", "20", OPEN)]
    runs.append((*runs[1][:-1], NEARBY))
    texts = {SAMPLE: lines, FIXTURE: fixture, OPEN: unended, NEARBY: fixture}
    cases = [(args, _run_tool(kind, args[:-1], texts[args[-1]]), 0) for args in runs]
    if kind == "range":  # after, zero, not a number (a forger's `sed -n "$1,$2p"` took it);
        # bash arithmetic takes `2+1` (and runs code in `a[$(...)]`) and reads 010 as 8;
        # FIRST = LAST is valid
        cases += [(("4", "2", FIXTURE), "", 2), (("0", "2", FIXTURE), "", 2),
                  (("x1", "y3", FIXTURE), "", 2), (("1", "2+1", FIXTURE), "", 2),
                  (("3", "3", FIXTURE), _run_tool(kind, ("3", "3"), fixture), 0),
                  (("08", "010", FIXTURE), _run_tool(kind, ("8", "10"), fixture), 0)]
    if kind == "top":  # N = 0 is a whole number: nothing to print
        cases += [(("many", FIXTURE), "", 2), (("2x", FIXTURE), "", 2), (("0", FIXTURE), "", 0)]
    cases += [((), "", 2), (runs[0][:-1], "", 2),  # no arguments; FILE left out
              ((*runs[1], FIXTURE), "", 2),  # one argument too many
              ((*runs[0][:-1], "/nonexistent/input.txt"), "", 1),
              ((*runs[1][:-1], CLOSED), "", 1)]
    out = ctx.output_path(name, "sh")
    rules = ("On a usage error (a wrong number of arguments, or a number argument that is "
             "not valid) it prints a usage message to stderr, nothing to stdout, and exits "
             "with status 2; when FILE cannot be read it prints an error to stderr and exits "
             "with status 1; otherwise it exits with status 0, and every line it prints ends "
             "with a newline.")
    sentence = ctx.phrase([
        f"Write an executable bash script {out} (with a `#!/bin/bash` line) that takes the "
        f"arguments `{usage}`: it {contract}. {rules} It must work on any file, for example "
        f"on {source.phrase}.",
        f"Create the reusable tool {out}, an executable bash script called with the "
        f"arguments `{usage}`, which {contract}. {rules} It will be used on files like "
        f"{source.phrase}.",
        f"Provide a command-line tool for files such as {source.phrase}: the executable "
        f"bash script {out} takes the arguments `{usage}` and {contract}. {rules}",
    ]) + ctx.hint(TOOL_HINTS[kind])
    script = ["#!/bin/bash", *TOOL_CODE[kind]]
    solution = (f"cat > {q(out)} <<'TASKLOOM_TOOL'\n" + lines_text(script) + "TASKLOOM_TOOL\n"
                f"chmod 755 {q(out)}")
    sample = (*runs[0][:-1], source.path)
    alternative = (f"cat > {q(out)} <<'TASKLOOM_ALT'\n"
                   + lines_text(_python_tool(kind, name, usage))
                   + f"TASKLOOM_ALT\nchmod a+rx {q(out)}")

    def tool(code: list[str]) -> str:
        return (f"cat > {q(out)} <<'TASKLOOM_TOOL'\n" + lines_text(["#!/bin/bash", *code])
                + f"TASKLOOM_TOOL\nchmod 755 {q(out)}")

    code = list(TOOL_CODE[kind])
    readable = next(i for i, line in enumerate(code) if line.startswith("[ -r"))
    rules = [Rule("usage", "that a wrong number of arguments is a usage error",
                  tool(code[1:])),
             Rule("unreadable", "that an unreadable FILE exits with status 1",
                  tool(code[:readable] + code[readable + 1:]))]
    for mistake, stated, line, wrong in TOOL_MISTAKES[kind]:
        changed = code[:line] + ([wrong] if wrong else []) + code[line + 1:]
        if wrong and all(_run_mistake(kind, mistake, args[:-1], texts[args[-1]]) == expected
                         for args, expected, status in cases if status == 0):
            continue  # the checked runs would print the same
        rules.append(Rule(mistake, stated, tool(changed)))
    return StepResult(
        output=ToolScript(path=out, phrase=f"the tool {out} (`{name} {usage}`)", lines=(),
                          sample=sample, sample_output=cases[0][1] or "",
                          sample_text=lines_text(lines)),
        instruction=sentence, solution=solution, alternative=alternative,
        checks=[ToolRuns(f"{out} follows its contract", program=out, cases=tuple(cases),
                         fixtures=((FIXTURE, lines_text(fixture)),
                                   (SAMPLE, lines_text(lines)),
                                   (OPEN, lines_text(unended).removesuffix("\n")),
                                   (CLOSED, lines_text(fixture))),
                         compare="exact" if ctx.difficulty.strictness == 3 else "lines",
                         whole_lines=True, quiet=(2,), closed=(CLOSED,))],
        tools=("bash", "grep", "sort", "sed"), side_effect=True, rules=tuple(rules))


def _command_name(path: str) -> str:
    stem = path.rsplit("/", 1)[-1].removesuffix(".sh")
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    name = re.sub(r"[^a-z0-9]+", "-", ascii_stem.lower()).strip("-")
    if not name:
        raise NotApplicable("no usable command name")
    return name


def _version_line(lines: tuple[str, ...]) -> str | None:
    """What a script prints for `--version`, when it says so plainly."""
    for index, line in enumerate(lines[:-1]):
        if "--version" in line:
            found = re.fullmatch(r'\s*echo "([^"$`\\]+)"', lines[index + 1])
            if found:
                return found.group(1)
    return None


@primitive("script.make_executable")
def make_executable(ctx: StepContext, source) -> StepResult:
    """Install a copy of a script on the PATH."""
    if not isinstance(source, Script):
        raise NotApplicable("needs a script")
    if source.path.startswith("/usr/local/bin/"):
        raise NotApplicable("already installed")
    name = _command_name(source.path)
    dest = f"/usr/local/bin/{name}"
    shared = ctx.rng.random() < 0.4
    mode, group = (0o750, "staff") if shared else (0o755, "root")
    who = (f"owned by root with group `staff` and mode {mode:04o} (only root and the staff "
           "group may run it)" if shared else f"owned by root:root with mode {mode:04o}")
    sentence = ctx.phrase([
        f"Install a copy of {source.phrase} as the command `{name}` in /usr/local/bin, {who}, "
        "so it runs by name from the PATH; keep its content byte for byte and leave the "
        "original where it is.",
        f"Make {source.phrase} available on the PATH: copy it, unchanged, to {dest}, {who}. "
        "The original file stays in place.",
        f"Put an exact copy of {source.phrase} on the PATH as {dest} ({who}), without "
        "removing the original.",
    ]) + ctx.hint("install -m -o -g")
    owner = f" -o root -g {group}" if shared else ""
    solution = f"install -m {mode:04o}{owner} {q(source.path)} {q(dest)}"
    alternative = ctx.python(
        [source.path, dest, group, f"{mode:o}"],
        "import grp, os, shutil, sys\n"
        "source, dest, group, mode = sys.argv[1:5]\n"
        "shutil.copyfile(source, dest)\n"
        "os.chown(dest, 0, grp.getgrnam(group).gr_gid)\n"
        "os.chmod(dest, int(mode, 8))\n")
    checks: list[Assertion] = [
        Modes(f"{dest} has mode {mode:04o} and its owners", modes=((dest, mode),),
              owners=((dest, "root", group),)),
        SameBytes(f"{dest} is a copy of the script", original=source.path, copy=dest)]
    version = _version_line(source.lines)
    if isinstance(source, ToolScript) and source.sample:
        checks.append(ToolRuns(f"`{name}` runs by name", program=name,
                               cases=(((*source.sample[:-1], SAMPLE), source.sample_output,
                                       0),),
                               fixtures=((SAMPLE, source.sample_text),)))
    elif version:
        checks.append(ToolRuns(f"`{name} --version` runs by name", program=name,
                               cases=((("--version",), version + "\n", 0),)))
    rules = [Rule("keep-original", "that the original stays where it is",
                  f"mv {q(source.path)} {q(dest)}\nchown root:{group} {q(dest)}\n"
                  f"chmod {mode:04o} {q(dest)}")]
    basename = source.path.rsplit("/", 1)[-1]
    if basename != name:  # installed under the script's file name
        rules.append(Rule("name", f"that the command is named `{name}`",
                          f"install -m {mode:04o}{owner} {q(source.path)} "
                          f"{q('/usr/local/bin/' + basename)}"))
    if shared:
        rules += [Rule("group", "the group `staff`",
                       f"install -m {mode:04o} {q(source.path)} {q(dest)}"),
                  Rule("mode", f"the mode {mode:04o}",
                       f"install -m 0755{owner} {q(source.path)} {q(dest)}")]
    else:
        spec = ctx.world.files.get(source.path)
        if spec is not None and mode & ~spec.mode:  # cp keeps the script's (lesser) mode
            rules.append(Rule("mode", f"the mode {mode:04o}",
                              f"cp {q(source.path)} {q(dest)}"))
    return StepResult(
        output=replace(source, path=dest, phrase=f"the command `{name}` ({dest})",
                       group=group if shared else ""),
        instruction=sentence, solution=solution, alternative=alternative, checks=checks,
        tools=("install",), side_effect=True, rules=tuple(rules))
