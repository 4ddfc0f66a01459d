r"""Corpus diversity metrics: pure functions over task records.

Each function takes plain task records (what a task is about and how it is solved) plus
the skill graph the tasks were planned on, and returns a number; `corpus_metrics` gathers
them all. Nothing here reads files or the run store: `taskloom.outputs.run` builds the
records of a run and calls these.

- skill coverage: share of the graph's skills used by at least one task.
- transition coverage: share of the graph's typed transitions (skill -> next skill within
  a scenario) that consecutive skills of some task use.
- scenario entropy: Shannon entropy of the tasks' scenarios, divided by log(number of
  scenarios in the graph).
- category entropy: Shannon entropy of the categories of every skill use, divided by
  log(number of categories in the graph); TDScaling's domain / reasoning-mode entropy.
- action complexity: the commands in each solve.sh and the distinct programs they run,
  summed over the corpus.
- near-duplicate rate: share of the items reaching the corpus filter that it dropped as
  duplicates (status 'duplicate' in the run store).

Example:
    >>> normalized_entropy(["a", "b", "a", "b"])
    1.0
    >>> action_complexity("set -eu\nsort data.txt | uniq -c > out.txt\n").commands
    3
"""

from __future__ import annotations

import math
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import Field

from taskloom.models import Frozen
from taskloom.skill_graph.model import SkillGraph

# Words that open or close shell syntax: a command may follow them, they are not one.
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "while", "until", "do", "done",
                       "case", "esac", "{", "}", "!", "[[", "]]", "time", "coproc"})
# Keywords whose following words are a variable and a word list, not a command.
_LIST_KEYWORDS = frozenset({"for", "select", "case", "function"})
# Builtins count as commands but are not tools (a tool is a program the task needs).
_BUILTINS = frozenset({
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "cd", "command", "compgen",
    "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec", "exit",
    "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill",
    "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
    "readarray", "readonly", "return", "set", "shift", "shopt", "source", "test", "times",
    "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait"})
# Programs that run another program named by one of their arguments.
_RUNNERS = frozenset({"xargs", "env", "nohup", "nice", "timeout", "sudo", "stdbuf", "chroot",
                      "runuser", "setsid", "exec", "command"})
# Options of those runners that take a value (so the value is not the program).
_RUNNER_VALUE_OPTIONS = frozenset({"-I", "-i", "-n", "-P", "-d", "-L", "-l", "-s", "-E", "-a",
                                   "-u", "-g", "-k", "--signal", "--kill-after"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_HEREDOC = re.compile(r"(?<!<)<<-?(?!<)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_PUNCTUATION = frozenset("();<>|&")


class ActionComplexity(Frozen):
    """How much a solution does: its commands and the programs it needs."""

    commands: int = Field(ge=0, description="Simple commands in the script (builtins included).")
    tools: tuple[str, ...] = Field(description="Distinct programs it runs, sorted "
                                               "(shell keywords and builtins excluded).")


class TaskRecord(Frozen):
    """What the corpus metrics need to know about one task."""

    task_id: str = Field(description="Task id (folder name).")
    scenario: str = Field(description="Scenario id the task is set in.")
    skills: tuple[str, ...] = Field(description="Skill ids in workflow order.")
    solution: str = Field(default="", description="Text of solution/solve.sh.")


class CorpusMetrics(Frozen):
    """Every diversity metric of a corpus of tasks."""

    tasks: int = Field(ge=0, description="Tasks measured.")
    skills_used: int = Field(ge=0, description="Distinct graph skills used by some task.")
    skills_total: int = Field(ge=0, description="Skills in the graph.")
    skill_coverage: float = Field(ge=0, le=1, description="skills_used / skills_total.")
    transitions_used: int = Field(ge=0, description="Distinct graph transitions used.")
    transitions_total: int = Field(ge=0, description="Typed transitions in the graph.")
    transition_coverage: float = Field(ge=0, le=1,
                                       description="transitions_used / transitions_total.")
    scenario_entropy: float = Field(ge=0, le=1, description="Normalized entropy of scenarios.")
    category_entropy: float = Field(ge=0, le=1,
                                    description="Normalized entropy of skill categories.")
    commands_total: int = Field(ge=0, description="Commands in all solutions together.")
    commands_mean: float = Field(ge=0, description="Commands per solution.")
    tools: tuple[str, ...] = Field(description="Distinct programs all solutions run, sorted.")
    near_duplicates: int = Field(ge=0, description="Items the corpus filter dropped.")
    near_duplicate_rate: float = Field(ge=0, le=1,
                                       description="near_duplicates / items filtered.")


def normalized_entropy(labels: Iterable[str], support: int | None = None) -> float:
    """Shannon entropy of `labels`, divided by log(support): 0 = one label, 1 = uniform.

    Args:
        labels: One label per observation.
        support: How many labels were possible (default: how many were observed). With
            the graph's count, 1.0 means "spread evenly over everything the graph offers".
    """
    counts = Counter(labels)
    total = sum(counts.values())
    k = support if support is not None else len(counts)
    if total == 0 or k <= 1:
        return 0.0
    entropy = -sum(n / total * math.log(n / total) for n in counts.values())
    return min(1.0, max(0.0, entropy / math.log(k)))


def skill_coverage(records: Sequence[TaskRecord], graph: SkillGraph) -> float:
    """Share of the graph's skills that at least one task uses."""
    used = {s for record in records for s in record.skills} & set(graph.skills)
    return len(used) / len(graph.skills) if graph.skills else 0.0


def transitions_used(records: Sequence[TaskRecord], graph: SkillGraph) -> set[tuple[str, str]]:
    """Graph transitions that consecutive skills of some task follow."""
    possible = graph.transitions()
    return {pair for record in records for pair in zip(record.skills, record.skills[1:],
                                                      strict=False) if pair in possible}


def transition_coverage(records: Sequence[TaskRecord], graph: SkillGraph) -> float:
    """Share of the graph's typed transitions that consecutive skills of some task use."""
    total = len(graph.transitions())
    return len(transitions_used(records, graph)) / total if total else 0.0


def scenario_entropy(records: Sequence[TaskRecord], graph: SkillGraph) -> float:
    """Normalized entropy of the tasks' scenarios over the graph's scenarios."""
    return normalized_entropy((r.scenario for r in records), support=len(graph.scenarios))


def category_entropy(records: Sequence[TaskRecord], graph: SkillGraph) -> float:
    """Normalized entropy of the categories of every skill use over the graph's categories.

    Skills the graph does not know are left out (they have no category).
    """
    categories = {skill.category for skill in graph.skills.values()}
    uses = (graph.skills[s].category for r in records for s in r.skills if s in graph.skills)
    return normalized_entropy(uses, support=len(categories))


def near_duplicate_rate(outcomes: Iterable[str]) -> float:
    """Share of 'duplicate' among the outcomes of the items that reached the corpus filter.

    Args:
        outcomes: One final item status per item the filter saw ('duplicate' when it
            dropped the item, anything else when it kept it).
    """
    counts = Counter(outcomes)
    total = sum(counts.values())
    return counts["duplicate"] / total if total else 0.0


def action_complexity(script: str) -> ActionComplexity:
    """Count the simple commands of a bash script and the distinct programs it runs.

    A command is what a reader would count: each pipeline stage, each command of a `&&`
    or `;` list, each command substitution and each `find -exec` / `xargs` program. Here-
    document bodies are data, not commands; comments are skipped.
    """
    commands = 0
    tools: set[str] = set()
    for chunk in _logical_lines(script):
        count, found = _count_chunk(chunk)
        commands += count
        tools |= found
    return ActionComplexity(commands=commands, tools=tuple(sorted(tools)))


def corpus_metrics(records: Sequence[TaskRecord], graph: SkillGraph,
                   filter_outcomes: Iterable[str] = ()) -> CorpusMetrics:
    """All metrics of a corpus.

    Args:
        records: The tasks.
        graph: The skill graph they were planned on.
        filter_outcomes: Final statuses of the items the corpus filter saw (see
            `near_duplicate_rate`).
    """
    outcomes = list(filter_outcomes)
    complexity = [action_complexity(r.solution) for r in records]
    used = {s for r in records for s in r.skills} & set(graph.skills)
    pairs = transitions_used(records, graph)
    commands = sum(c.commands for c in complexity)
    return CorpusMetrics(
        tasks=len(records), skills_used=len(used), skills_total=len(graph.skills),
        skill_coverage=skill_coverage(records, graph), transitions_used=len(pairs),
        transitions_total=len(graph.transitions()),
        transition_coverage=transition_coverage(records, graph),
        scenario_entropy=scenario_entropy(records, graph),
        category_entropy=category_entropy(records, graph), commands_total=commands,
        commands_mean=commands / len(records) if records else 0.0,
        tools=tuple(sorted({t for c in complexity for t in c.tools})),
        near_duplicates=sum(1 for o in outcomes if o == "duplicate"),
        near_duplicate_rate=near_duplicate_rate(outcomes))


# -- shell reading ------------------------------------------------------------------------

def _logical_lines(script: str) -> Iterable[str]:
    """Logical lines: continuations joined, here-document bodies dropped.

    A line that leaves a quote open is joined with the lines up to the closing quote.
    """
    lines = script.replace("\\\n", " ").splitlines()
    pending = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        terminators = [m.group(2) for m in _HEREDOC.finditer(line)
                       if not line.lstrip().startswith("#")]
        text = f"{pending}\n{line}" if pending else line
        try:
            _tokens(text)
        except ValueError:  # an open quote: the command goes on on the next line
            pending = text
            continue
        pending = ""
        for terminator in terminators:
            while index < len(lines) and lines[index].strip() != terminator:
                index += 1
            index += 1
        yield text
    if pending:
        yield pending


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def _count_chunk(text: str) -> tuple[int, set[str]]:
    try:
        tokens = _tokens(text)
    except ValueError:
        return 0, set()
    commands = 0
    tools: set[str] = set()
    at_start = True
    runner_next = False  # the next plain word is a program a runner starts
    skip_next = False  # the next word is a redirection target or an option's value
    closing = ""  # inside [[ ... ]] or (( ... )): operands, not commands, until this token
    for position, token in enumerate(tokens):
        if skip_next:
            skip_next = False
            continue
        if closing or token == "[[" or token.startswith("(("):
            closing = "" if closing and closing in token else closing or (
                "]]" if token == "[[" else "))")
            continue
        if token and set(token) <= _PUNCTUATION:
            if token in ("<(", ">(") or not set(token) & set("<>"):
                at_start, runner_next = True, False
            else:
                skip_next = True  # a redirection: the next word is a file
            continue
        for inner in _substitutions(token):
            count, found = _count_chunk(inner)
            commands += count
            tools |= found
        if token.endswith("$") and tokens[position + 1:position + 2] == ["("]:
            at_start = True  # `var=$(`: the tokenizer split the substitution open
            continue
        if runner_next:
            if token.startswith("-"):
                skip_next = token in _RUNNER_VALUE_OPTIONS
                continue
            if not _ASSIGNMENT.match(token):
                tools.add(_program(token))
                runner_next = False
            continue
        if token in _FIND_EXEC:
            runner_next = True
            continue
        if not at_start:
            continue
        if token in _KEYWORDS:
            continue
        if token in _LIST_KEYWORDS:
            at_start = False
            continue
        if _ASSIGNMENT.match(token):
            continue
        commands += 1
        name = _program(token)
        if name not in _BUILTINS:
            tools.add(name)
        runner_next = name in _RUNNERS
        at_start = False
    return commands, tools


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _substitutions(word: str) -> list[str]:
    """The text of each `$(...)` inside a word (quotes already removed by the lexer)."""
    found = []
    start = word.find("$(")
    while start != -1:
        if word.startswith("$((", start):  # arithmetic, not a command
            start = word.find("$(", start + 3)
            continue
        depth, end = 0, start + 1
        for end in range(start + 1, len(word)):
            if word[end] == "(":
                depth += 1
            elif word[end] == ")":
                depth -= 1
                if depth == 0:
                    break
        found.append(word[start + 2:end])
        start = word.find("$(", end)
    return found
