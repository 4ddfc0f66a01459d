"""Text processing primitives: line-oriented work on any text file (lists, logs, configs).

The generic ones accept every subtype of text_file, so they chain after log, config and
report steps. Each picks its parameters (a token, a range) from the actual lines, so the
step always changes its input.

Each states its rules (`Rule`) only where ignoring them changes what the check sees on this
input (`differs`): a word's case variant for the case-sensitive ones, a line with the word
twice for "every occurrence", blank or whitespace-only lines for the blank-line rules.
"""

from __future__ import annotations

import re
from collections import Counter

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Report, TextFile
from taskloom.generators.procedural.checks import FileText
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    differs,
    exercised,
    primitive,
)
from taskloom.generators.procedural.world import lines_text, q

TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9-]{3,}")


def _folded(word: str, line: str) -> bool:
    """`word` occurs in `line` ignoring ASCII case (as `LC_ALL=C grep -i` matches)."""
    return re.search(re.escape(word), line, re.IGNORECASE | re.ASCII) is not None


def _lines(source) -> tuple[str, ...]:
    if not isinstance(source, TextFile) or not source.lines:
        raise NotApplicable("needs a non-empty text file")
    return source.lines


def _token(ctx: StepContext, lines: tuple[str, ...], *, share: tuple[float, float]) -> str:
    """A word that occurs in some lines but not all (between share[0] and share[1]).

    One with a case variant in the lines (`web-01` and `WEB-01`) or in some line twice is
    preferred: the case-sensitive and every-occurrence rules then show.
    """
    counts = Counter(tok for line in set(lines) for tok in set(TOKEN.findall(line)))
    low, high = share[0] * len(set(lines)), share[1] * len(set(lines))
    candidates = sorted(tok for tok, n in counts.items() if low <= n <= high and n >= 1)
    if not candidates:
        raise NotApplicable("no word occurs in only part of the lines")
    folded = Counter(tok.lower() for tok in counts)
    twice = {tok for line in set(lines) for tok, n in Counter(TOKEN.findall(line)).items()
             if n > 1}
    telling = [tok for tok in candidates if folded[tok.lower()] > 1 or tok in twice]
    return ctx.rng.choice(telling or candidates)


@primitive("text.sort_unique")
def sort_unique(ctx: StepContext, source) -> StepResult:
    """Sorted distinct lines."""
    lines = _lines(source)
    result = tuple(sorted(set(lines)))
    if result == lines:
        raise NotApplicable("already sorted and unique")
    out = ctx.output_path("unique", "txt")
    compare = ctx.compare(order_matters=True)
    sentence = ctx.phrase([
        f"Write the distinct lines of {source.phrase} to `{out}`, sorted in byte order (as "
        "`LC_ALL=C sort` orders them), each once.",
        f"Deduplicate {source.phrase}: `{out}` must hold every different line exactly once, in "
        "ascending byte order.",
        f"Produce `{out}` with the unique lines of {source.phrase}, sorted by their bytes "
        "(C locale order), no repeats.",
    ]) + ctx.hint("sort -u")
    return StepResult(
        output=TextFile(path=out, phrase=f"the distinct lines of {source.phrase}, sorted",
                        lines=result),
        instruction=sentence,
        solution=f"LC_ALL=C sort -u {q(source.path)} > {q(out)}",
        alternative=ctx.python(
            [source.path, out],
            "import sys\n"
            "lines = set(open(sys.argv[1], 'rb').read().splitlines())\n"
            "open(sys.argv[2], 'wb').write(b''.join(l + b'\\n' for l in sorted(lines)))\n"),
        checks=[FileText(f"`{out}` holds the sorted distinct lines", path=out,
                         expected=lines_text(result), compare=compare)],
        tools=("sort",),
        rules=exercised(
            (differs(sorted(lines), result, compare),
             Rule("dedupe", "that each line is written once",
                  f"LC_ALL=C sort {q(source.path)} > {q(out)}")),
            (differs(tuple(dict.fromkeys(lines)), result, compare),
             Rule("order", "that the lines are sorted in byte order",
                  f"awk '!seen[$0]++' {q(source.path)} > {q(out)}"))))


@primitive("text.count_frequency")
def count_frequency(ctx: StepContext, source) -> StepResult:
    """Most frequent lines with their counts."""
    lines = [line for line in _lines(source) if line.strip()]
    counts = Counter(lines)
    if len(counts) < 3 or max(counts.values()) < 2:
        raise NotApplicable("no repeated lines")
    top = min(len(counts), ctx.pick_number(3, 6, allowed=(1, len(counts))))

    def ranking(counted: Counter, *, ties_reversed: bool = False) -> tuple[str, ...]:
        key = ((lambda item: (item[1], item[0].encode())) if ties_reversed else
               (lambda item: (-item[1], item[0].encode())))
        return tuple(f"{count} {line}" for line, count in
                     sorted(counted.items(), key=key, reverse=ties_reversed))

    result = ranking(counts)[:top]
    out = ctx.output_path("frequencies", "txt")
    compare = ctx.compare(order_matters=True)
    blank = "blank lines (empty or only whitespace)"
    sentence = ctx.phrase([
        f"Find the {top} most frequent lines of {source.phrase} ({blank} ignored) and "
        f"write them to `{out}` as `COUNT LINE`, highest count first, equal counts in byte "
        "order of the line.",
        f"Write to `{out}` the top {top} lines of {source.phrase} by number of occurrences, "
        "each as `COUNT LINE` (a single space between); sort by count descending, then by "
        f"the line (C locale); skip {blank}.",
        f"Which lines repeat most in {source.phrase}? Put the {top} most common in `{out}` as "
        f"`COUNT LINE`, descending by count, ties ordered by line bytes, ignoring {blank}.",
    ]) + ctx.hint("sort | uniq -c | sort -k1,1nr")
    count = "LC_ALL=C sort | uniq -c | sed 's/^ *//'"
    nonblank = f"grep -v '^[[:space:]]*$' {q(source.path)}"
    solution = f"{nonblank} | {count} | LC_ALL=C sort -s -k1,1nr | head -n {top} > {q(out)}"
    wrong = (
        (differs(ranking(Counter(_lines(source)))[:top], result, compare),
         Rule("blank", "that blank lines are not counted",
              f"{count.replace('sort', f'sort {q(source.path)}', 1)} | "
              f"LC_ALL=C sort -s -k1,1nr | head -n {top} > {q(out)}")),
        (differs(ranking(counts), result, compare),
         Rule("top", f"that only the {top} most frequent lines are written",
              f"{nonblank} | {count} | LC_ALL=C sort -s -k1,1nr > {q(out)}")),
        (differs(ranking(counts, ties_reversed=True)[:top], result, compare),
         Rule("ties", "that equal counts are ordered by the line in byte order",
              f"{nonblank} | {count} | LC_ALL=C sort -rn | head -n {top} > {q(out)}")))
    return StepResult(
        output=Report(
            path=out, phrase=(f"the {top} most frequent lines of {source.phrase} (`COUNT LINE`, "
                               "most frequent first)"),
            lines=result),
        instruction=sentence, solution=solution,
        alternative=ctx.python(
            [source.path, out, top],
            "import collections, sys\n"
            "lines = open(sys.argv[1], 'rb').read().split(b'\\n')\n"
            "if lines[-1] == b'':\n"
            "    lines.pop()\n"
            "counts = collections.Counter(line for line in lines if line.strip())\n"
            "ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))\n"
            "with open(sys.argv[2], 'wb') as out:\n"
            "    for line, count in ranked[:int(sys.argv[3])]:\n"
            "        out.write(b'%d %s\\n' % (count, line))\n"),
        checks=[FileText(f"`{out}` ranks the most frequent lines", path=out,
                         expected=lines_text(result), compare=compare)],
        tools=("sort", "uniq", "sed"), rules=exercised(*wrong))


@primitive("text.replace_pattern")
def replace_pattern(ctx: StepContext, source) -> StepResult:
    """Replace a word everywhere."""
    lines = _lines(source)
    word = _token(ctx, lines, share=(0.0, 0.9))
    new = ctx.rng.choice(["REDACTED", "migrated", "legacy", "v2"]) + "-" + word[:3].lower()
    result = tuple(line.replace(word, new) for line in lines)
    out = ctx.output_path("replaced", "txt")
    compare = ctx.compare(order_matters=True)
    sentence = ctx.phrase([
        f"Copy {source.phrase} to `{out}`, replacing every occurrence of `{word}` with `{new}` "
        "(case-sensitive, everything else unchanged).",
        f"Write `{out}`: the same lines as {source.phrase} but with each `{word}` (matched "
        f"case-sensitively) turned into `{new}`, also where a line has it more than once.",
        f"In a copy of {source.phrase} saved as `{out}`, substitute `{new}` for all "
        f"occurrences of `{word}` (exact case only); do not change anything else.",
    ]) + ctx.hint("sed 's/.../.../g'")
    folded = re.compile(re.escape(word), re.IGNORECASE | re.ASCII)
    wrong = (
        (differs([line.replace(word, new) for line in lines if word in line], result, compare),
         Rule("other-lines", f"that the lines without `{word}` are copied too",
              f"sed -n 's/{word}/{new}/gp' {q(source.path)} > {q(out)}")),
        (differs([line.replace(word, new, 1) for line in lines], result, compare),
         Rule("every-occurrence", f"that every `{word}` of a line is replaced",
              f"sed 's/{word}/{new}/' {q(source.path)} > {q(out)}")),
        (differs([folded.sub(new, line) for line in lines], result, compare),
         Rule("case", f"that only `{word}` in exactly that case is replaced",
              f"LC_ALL=C sed 's/{word}/{new}/gI' {q(source.path)} > {q(out)}")))
    return StepResult(
        output=TextFile(path=out, phrase=f"{source.phrase} with `{word}` replaced by `{new}`",
                        lines=result),
        instruction=sentence,
        solution=f"sed 's/{word}/{new}/g' {q(source.path)} > {q(out)}",
        alternative=(f"OLD={q(word)} NEW={q(new)} "
                     "perl -pe 's/\\Q$ENV{OLD}\\E/$ENV{NEW}/g' "
                     f"{q(source.path)} > {q(out)}"),
        checks=[FileText(f"`{out}` has `{word}` replaced", path=out, expected=lines_text(result),
                         compare=compare)],
        tools=("sed",), rules=exercised(*wrong))


@primitive("text.filter_lines")
def filter_lines(ctx: StepContext, source) -> StepResult:
    """Keep lines containing a word."""
    lines = _lines(source)
    word = _token(ctx, lines, share=(0.05, 0.7))
    result = tuple(line for line in lines if word in line)
    out = ctx.output_path("matching", "txt")
    compare = ctx.compare(order_matters=True)
    sentence = ctx.phrase([
        f"Save the lines of {source.phrase} that contain `{word}` (case-sensitive) to `{out}`, "
        "in their original order.",
        f"Filter {source.phrase} down to the lines containing the text `{word}` (in exactly "
        f"that case) and write them to `{out}`, order kept.",
        f"Write every line of {source.phrase} in which `{word}` appears (case-sensitive "
        f"match) to `{out}`, keeping the order of the file.",
    ]) + ctx.hint("grep -F")
    grep = f"grep -F -- {q(word)} {q(source.path)}"
    wrong = (
        (differs(lines, result, compare),
         Rule("filter", f"that only the lines containing `{word}` are kept",
              f"cat {q(source.path)} > {q(out)}")),
        (differs([line for line in lines if _folded(word, line)], result, compare),
         Rule("case", f"that `{word}` is matched case-sensitively",
              f"LC_ALL=C grep -iF -- {q(word)} {q(source.path)} > {q(out)}")),
        (differs(sorted(result), result, compare),
         Rule("order", "that the lines keep the order of the file",
              f"{grep} | LC_ALL=C sort > {q(out)}")))
    return StepResult(
        output=TextFile(path=out, phrase=f"the lines of {source.phrase} containing `{word}`",
                        lines=result),
        instruction=sentence,
        solution=f"{grep} > {q(out)}",
        alternative=(f"WORD={q(word)} LC_ALL=C awk 'index($0, ENVIRON[\"WORD\"]) > 0' "
                     f"{q(source.path)} > {q(out)}"),
        checks=[FileText(f"`{out}` holds the lines with `{word}`", path=out,
                         expected=lines_text(result), compare=compare)],
        tools=("grep",), rules=exercised(*wrong))


@primitive("text.count_lines")
def count_lines(ctx: StepContext, source) -> StepResult:
    """Count lines containing a word."""
    lines = _lines(source)
    word = _token(ctx, lines, share=(0.05, 0.8))
    count = sum(word in line for line in lines)
    out = ctx.output_path("count", "txt")
    compare = ctx.compare()
    sentence = ctx.phrase([
        f"Count the lines of {source.phrase} that contain `{word}` (case-sensitive; a line "
        f"counts once however often it has the word) and write just the number to `{out}`.",
        f"How many lines of {source.phrase} include `{word}` (exact case)? Write the number "
        f"alone to `{out}`.",
        f"Write to `{out}` a single number: the count of lines in {source.phrase} containing "
        f"`{word}` (case-sensitive).",
    ]) + ctx.hint("grep -c")

    def told(number: int) -> bool:
        return differs([str(number)], [str(count)], compare)

    wrong = (
        (told(len(lines)),
         Rule("filter", f"that only the lines containing `{word}` are counted",
              f"wc -l < {q(source.path)} > {q(out)}")),
        (told(sum(line.count(word) for line in lines)),
         Rule("lines", f"that lines are counted, not occurrences of `{word}`",
              f"grep -oF -- {q(word)} {q(source.path)} | wc -l > {q(out)}")),
        (told(sum(_folded(word, line) for line in lines)),
         Rule("case", f"that `{word}` is matched case-sensitively",
              f"LC_ALL=C grep -ciF -- {q(word)} {q(source.path)} > {q(out)} || true")))
    return StepResult(
        output=Report(
            path=out, phrase=f"the number of lines of {source.phrase} containing `{word}`",
            lines=(str(count),)),
        instruction=sentence,
        solution=f"grep -cF -- {q(word)} {q(source.path)} > {q(out)} || true",
        # "just the number": below strictness 3 no final newline is stated, so none
        alternative=ctx.python(
            [source.path, out, word],
            "import os, sys\n"
            "word = os.fsencode(sys.argv[3])\n"
            "with open(sys.argv[1], 'rb') as handle:\n"
            "    count = sum(word in line for line in handle)\n"
            "with open(sys.argv[2], 'w') as out:\n"
            "    out.write(str(count) + END)\n"),
        checks=[FileText(f"`{out}` holds the count", path=out, expected=f"{count}\n",
                         compare=compare)],
        tools=("grep",), rules=exercised(*wrong))


@primitive("text.head_tail")
def head_tail(ctx: StepContext, source) -> StepResult:
    """A range of lines."""
    lines = _lines(source)
    if len(lines) < 6:
        raise NotApplicable("too short to cut")
    first = ctx.rng.randint(2, len(lines) // 2)
    last = ctx.rng.randint(first + 1, min(len(lines) - 1, first + 40))
    result = lines[first - 1:last]
    out = ctx.output_path("excerpt", "txt")
    compare = ctx.compare(order_matters=True)
    sentence = ctx.phrase([
        f"Write lines {first} to {last} (inclusive, counting from 1) of {source.phrase} to "
        f"`{out}`.",
        f"Extract the excerpt of {source.phrase} from line {first} through line {last} "
        f"(1-based, both included) into `{out}`.",
        f"Save `{out}` containing exactly lines {first}-{last} of {source.phrase} (first line "
        "is line 1; both ends included).",
    ]) + ctx.hint("sed -n 'A,Bp'")
    return StepResult(
        output=TextFile(path=out, phrase=f"lines {first}-{last} of {source.phrase}",
                        lines=result),
        instruction=sentence,
        solution=f"sed -n '{first},{last}p' {q(source.path)} > {q(out)}",
        alternative=ctx.python(
            [source.path, out, first, last],
            "import itertools, sys\n"
            "first, last = int(sys.argv[3]), int(sys.argv[4])\n"
            "with open(sys.argv[1], 'rb') as handle, open(sys.argv[2], 'wb') as out:\n"
            "    for line in itertools.islice(handle, first - 1, last):\n"
            "        out.write(line if line.endswith(b'\\n') else line + b'\\n')\n"),
        checks=[FileText(f"`{out}` holds lines {first}-{last}", path=out,
                         expected=lines_text(result), compare=compare)],
        tools=("sed",),
        rules=exercised(
            (differs(lines[first:last], result, compare),
             Rule("inclusive", f"that line {first} itself is included",
                  f"head -n {last} {q(source.path)} | tail -n {last - first} > {q(out)}")),
            (differs(lines[first:last + 1], result, compare),
             Rule("one-based", "that lines are counted from 1",
                  f"sed -n '{first + 1},{last + 1}p' {q(source.path)} > {q(out)}"))))


@primitive("text.drop_blank")
def drop_blank(ctx: StepContext, source) -> StepResult:
    """Remove blank lines and trailing whitespace."""
    lines = _lines(source)
    result = tuple(line.rstrip(" \t") for line in lines if line.strip(" \t"))
    if result == lines:
        raise NotApplicable("no blank lines or trailing whitespace")
    out = ctx.output_path("clean", "txt")
    compare = "exact" if ctx.difficulty.strictness > 1 else "lines"
    sentence = ctx.phrase([
        f"Write {source.phrase} to `{out}` without its blank lines (empty or only spaces and "
        "tabs) and without trailing spaces or tabs on the other lines.",
        f"Clean {source.phrase} into `{out}`: drop lines that are empty or whitespace-only and "
        "strip spaces/tabs at the end of every remaining line.",
        f"Produce `{out}` from {source.phrase} with all blank lines removed and trailing "
        "whitespace trimmed; line order unchanged.",
    ]) + ctx.hint("sed -e 's/[[:blank:]]*$//' -e '/^$/d'")
    return StepResult(
        output=TextFile(path=out, phrase=f"{source.phrase} without blank lines", lines=result),
        instruction=sentence,
        solution=f"sed -e 's/[[:blank:]]*$//' -e '/^$/d' {q(source.path)} > {q(out)}",
        alternative=(f"LC_ALL=C awk '{{ sub(/[ \\t]+$/, \"\") }} $0 != \"\"' "
                     f"{q(source.path)} > {q(out)}"),
        checks=[FileText(f"`{out}` has no blank lines", path=out, expected=lines_text(result),
                         compare=compare)],
        tools=("sed",),
        rules=exercised(
            (differs([line.rstrip(" \t") for line in lines], result, compare),
             Rule("blank", "that blank lines are removed",
                  f"sed 's/[[:blank:]]*$//' {q(source.path)} > {q(out)}")),
            (differs([line.rstrip(" \t") for line in lines if line], result, compare),
             Rule("whitespace-only", "that lines of only spaces and tabs are blank too",
                  f"sed -e '/^$/d' -e 's/[[:blank:]]*$//' {q(source.path)} > {q(out)}")),
            (differs([line for line in lines if line.strip(" \t")], result, compare),
             Rule("trailing", "that trailing spaces and tabs are removed",
                  f"sed '/^[[:blank:]]*$/d' {q(source.path)} > {q(out)}"))))
