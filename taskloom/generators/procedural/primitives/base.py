"""How a skill becomes a procedural primitive, and how input data is made.

A primitive is a function `(ctx, input artifact) -> StepResult` registered for a skill id
with `@primitive("area.skill")`. It must:
- compute its output in Python from the input artifact (the expected values);
- give an instruction sentence in at least three phrasings (`ctx.phrase`), naming the
  output path and format, and an output `phrase` for goal-only instructions;
- give a bash solution fragment that uses the real tools (quote paths with `q`);
- give checks on its output (`ctx.compare(...)` picks the strictness; a listing of
  relative paths reads them with `form=ctx.path_form` and states bare paths only where
  `ctx.bare(...)` says the instruction must);
- give an alternative bash fragment that reaches the same state by other means (another
  tool family, another order or formatting the instruction allows), written from the
  instruction sentence alone: validation requires it to earn reward 1 too, so checks
  that demand more than the instruction states are found (`over-specified`); a stdlib
  python3 alternative is built with `ctx.python(args, code, prelude=...)`, which quotes the
  arguments and defines `END`, the text after a written text file's last line;
- give a `Rule` for each rule its sentence states that the checks can tell apart (a
  filter, a deduplication, malformed lines skipped, a sort key where order is checked, an
  edge case): the rule in words and the solution fragment with that rule ignored. The data
  must contain a case where ignoring the rule changes the answer (`differs`, then
  `exercised` keeps those rules): validation runs each such wrong solution and requires
  reward 0 (`weak-tests`);
- change its input: a step whose output equals its input would be a weak step.
A source is a function `(ctx) -> Artifact` registered with `@source("type")` that writes
realistic input data into `ctx.world` and describes it. Raise `NotApplicable` when an
input cannot support the step (the generator then tries another plan).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import Artifact, FileTree, TreeFile
from taskloom.generators.procedural.checks import Assertion, Compare, Form
from taskloom.generators.procedural.domains import Domain
from taskloom.generators.procedural.world import World, lines_text, q
from taskloom.generators.protocols import Difficulty


@dataclass(frozen=True)
class Rule:
    """A rule the step's sentence states, and the step's solution with that rule ignored."""

    name: str  # a file stem: lowercase words joined by hyphens ("skip-malformed")
    stated: str  # the rule as the instruction states it ("only the ERROR records")
    ignored: str  # bash lines: the step's solution, wrong on purpose in just this rule

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", self.name):
            raise ValueError(f"rule name {self.name!r} is not lowercase-words-with-hyphens")


def shown(lines: Iterable[str], compare: Compare) -> object:
    """What a FileText check under `compare` sees of a file holding these lines."""
    text = lines_text(lines)
    if compare == "exact":
        return text
    norm = [line.rstrip() for line in text.rstrip("\n").split("\n")] if text.strip() else []
    return norm if compare == "lines" else sorted(norm)


def differs(naive: Iterable[str], expected: Iterable[str], compare: Compare) -> bool:
    """True when a check under `compare` tells a wrong solution's lines from the expected.

    How a rule is known to be exercised: its mutant must change what the check sees.
    """
    return shown(naive, compare) != shown(expected, compare)


def exercised(*candidates: tuple[bool, Rule]) -> tuple[Rule, ...]:
    """The rules whose ignoring the checks see (each flag computed on this input)."""
    return tuple(rule for seen, rule in candidates if seen)


@dataclass
class StepResult:
    """What one step contributes to the task."""

    output: Artifact
    instruction: str  # imperative sentence(s) naming the output path and format
    solution: str  # bash lines
    checks: list[Assertion]
    tools: tuple[str, ...]
    notes: tuple[str, ...] = ()  # extra instruction notes (malformed lines, formats)
    side_effect: bool = False  # its checks always run, even when its output is intermediate
    alternative: str = ""  # bash lines: the same state by other tools, from the instruction
    rules: tuple[Rule, ...] = ()  # the stated rules, each with a solution that ignores it
    # It reads its input file where it lies (a job, a service): a hidden step before it must
    # leave its result there, and that step's checks of the file run too (`stored_input`).
    reads_input_file: bool = False


def stored_input(source: Artifact) -> str:
    """How a step that reads its input file where it lies names that input.

    A hidden step's result (named by a letter) has no path in the instruction: the step
    names the path and asks for the result there. Its StepResult sets `reads_input_file`.
    """
    if len(source.phrase) == 1:
        return f"`{source.path}` (which must hold {source.phrase}: write it there first)"
    return source.phrase


@dataclass
class StepContext:
    """Everything a primitive or source may use; all randomness comes from `rng`."""

    rng: random.Random
    difficulty: Difficulty
    domain: Domain
    world: World
    step: int  # 1-based
    steps: int
    used_names: set[str] = field(default_factory=set)
    numbers: tuple[int, ...] = ()  # numbers the user's request named (on-demand tasks)

    @property
    def final(self) -> bool:
        """True for the last step of the workflow."""
        return self.step == self.steps

    @property
    def hidden(self) -> bool:
        """True when the instruction will not show this step's sentence.

        A goal-only task (specification 3) states the last step and the steps with side
        effects; the others are the agent's own way there. A free choice of a hidden step
        (an archive's path prefix, say) must then not shape what a later check expects.
        """
        return self.difficulty.specification == 3 and not self.final

    @property
    def path_form(self) -> Form:
        """How checks read the relative paths of this step's text output.

        `paths` (a path may start with `./`) where the instruction leaves that free: below
        strictness 3 and on the last step. A later step reads an earlier output's bytes,
        and strictness 3 demands exact bytes, so there the instruction states bare paths.
        """
        return "paths" if self.difficulty.strictness < 3 and self.final else "text"

    @property
    def dot_slash(self) -> str:
        """What an alternative writes before a relative path: `./` where that is free."""
        return "./" if self.path_form == "paths" else ""

    def bare(self, words: str) -> str:
        """`words` (such as " without a leading `./`") where paths must be bare, else ''."""
        return "" if self.path_form == "paths" else words

    def phrase(self, options: list[str]) -> str:
        """One of several phrasings (primitives give at least three)."""
        if len(options) < 3:
            raise ValueError("a primitive needs at least three phrasings")
        return self.rng.choice(options)

    def count(self, small: tuple[int, int], medium: tuple[int, int],
              large: tuple[int, int]) -> int:
        """A size chosen by the data-volume level."""
        low, high = (small, medium, large)[self.difficulty.data_volume - 1]
        return self.rng.randint(low, high)

    def compare(self, *, order_matters: bool = False) -> Compare:
        """Text comparison mode for the output strictness level.

        Line order is free (`set`) only at strictness 1 on the last step: a later step
        reads an earlier output, and its result may depend on the order.
        """
        level = self.difficulty.strictness
        if level == 3:
            return "exact"
        if level == 2 or order_matters or not self.final:
            return "lines"
        return "set"

    def order(self, words: str) -> str:
        """The instruction's words on line order.

        `words` (such as "sorted in byte order") where the checks compare the order, else
        "in any order": an order the checks do not see must not be demanded.
        """
        return words if self.compare() != "set" else "in any order"

    def output_path(self, stem: str, ext: str, directory: str | None = None) -> str:
        """A fresh output path; at edge-case level 3 names get spaces and non-ASCII."""
        folder = directory or f"{self.world.workdir}/output"
        name = stem
        if self.difficulty.edge_cases == 3:
            name = self.rng.choice([f"{stem} final", f"{stem}-résumé", f"{stem} (v2)",
                                    f"{stem}_ü"])
        elif self.difficulty.edge_cases == 2 and self.rng.random() < 0.5:
            name = f"{stem} copy"
        candidate = f"{folder}/{name}.{ext}" if ext else f"{folder}/{name}"
        number = 2
        while candidate in self.used_names or self.world.exists(candidate):
            candidate = f"{folder}/{name}-{number}.{ext}" if ext else f"{folder}/{name}-{number}"
            number += 1
        self.used_names.add(candidate)
        return candidate

    def pick_number(self, low: int, high: int, *, allowed: tuple[int, int] | None = None) -> int:
        """A count parameter (top N, keep N).

        The first number the request named that lies in `allowed` (default [low, high]),
        else a random one in [low, high].
        """
        least, most = allowed or (low, high)
        requested = next((n for n in self.numbers if least <= n <= most), None)
        return requested if requested is not None else self.rng.randint(low, high)

    def hint(self, text: str) -> str:
        """A tool hint, shown only at the most explicit specification level."""
        return f" ({text})" if self.difficulty.specification == 1 else ""

    def planted_state(self, tree: FileTree) -> tuple[int, str, str]:
        """Mode, owner and group the files this step plants in `tree` have when it starts.

        On a later step the files are planted when the environment is built, so the tree
        must then be there already, with these bytes: an earlier step may only have changed
        the modes or owners of its files in place (and then those of the planted ones too).
        Raises `NotApplicable` otherwise.
        """
        if self.step == 1:
            return 0o644, "root", "root"
        top = tree.path.rstrip("/") + "/"
        there = {path[len(top):]: spec for path, spec in self.world.files.items()
                 if path.startswith(top)}
        if sorted(there) != tree.names() or any(there[f.relpath].content != f.content
                                                 for f in tree.files):
            raise NotApplicable("an earlier step makes or changes the tree's files")
        mode, owner, group = 0o644, "root", "root"
        if any(there[f.relpath].mode != f.mode for f in tree.files):
            modes = {f.mode for f in tree.files if not f.relpath.endswith(".sh")}
            if len(modes) != 1:
                raise NotApplicable("an earlier step set modes the new files cannot be told")
            mode = modes.pop()
        if any((there[f.relpath].owner, there[f.relpath].group) != (f.owner, f.group)
               for f in tree.files):
            owners = {(f.owner, f.group) for f in tree.files}
            if len(owners) != 1:
                raise NotApplicable("an earlier step set owners the new files cannot be told")
            owner, group = owners.pop()
        return mode, owner, group

    def plant(self, tree: FileTree, relpath: str, text: str, state: tuple[int, str, str], *,
              mtime: int | None = None) -> TreeFile:
        """Add a file to `tree` in the environment; returns it as the step starts on it.

        `state` is `planted_state(tree)`: the file is built as every file is (0644, root), and
        an earlier step may then have changed its mode or owner with the rest of the tree.
        """
        self.world.add(f"{tree.path}/{relpath}", text, mtime=mtime)
        mode, owner, group = state
        return TreeFile(relpath, text.encode(), mode, mtime, owner, group)

    def python(self, args: Iterable[object], code: str, *, prelude: str = "",
               shell_words: Iterable[str] = ()) -> str:
        r"""A bash fragment running `code` with python3 from a heredoc (alternatives).

        It is `python3 - ARGS <<'PY'`, then `END = '\n'` or `END = ''`, `prelude` and `code`
        (each stripped), then `PY`. ARGS are `shell_words` as given (already shell words,
        such as `"$table"`), then each of `args` as `q(str(arg))`: the script reads them as
        `sys.argv[1:]`. END (a str; `END.encode()` for bytes) is the text after the last
        line of a written text file: a newline only at strictness 3, where the instruction
        states exact bytes; below it the final newline is the agent's choice, and the
        alternatives leave it out. `prelude` is a family's shared helpers (`PY_TABLES`).
        """
        words = [*shell_words, *(q(str(arg)) for arg in args)]
        end = "\n" if self.difficulty.strictness == 3 else ""
        body = "\n".join(part for part in (f"END = {end!r}", prelude.strip(), code.strip())
                          if part)
        return f"{' '.join(['python3', '-', *words])} <<'PY'\n{body}\nPY"


PrimitiveFn = Callable[[StepContext, Artifact], StepResult]
SourceFn = Callable[[StepContext], Artifact]
PRIMITIVES: dict[str, PrimitiveFn] = {}
SOURCES: dict[str, SourceFn] = {}


def primitive(skill_id: str) -> Callable[[PrimitiveFn], PrimitiveFn]:
    """Register a primitive for a skill of the graph."""

    def register(function: PrimitiveFn) -> PrimitiveFn:
        if skill_id in PRIMITIVES:
            raise ValueError(f"two primitives for skill {skill_id}")
        PRIMITIVES[skill_id] = function
        return function

    return register


def source(type_name: str) -> Callable[[SourceFn], SourceFn]:
    """Register the generator of input data for an artifact type."""

    def register(function: SourceFn) -> SourceFn:
        if type_name in SOURCES:
            raise ValueError(f"two sources for type {type_name}")
        SOURCES[type_name] = function
        return function

    return register
