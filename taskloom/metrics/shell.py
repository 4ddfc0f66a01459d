r"""Reading bash: how many commands a script runs, and which programs.

`action_complexity` counts what a reader would count: each pipeline stage, each command of
a `&&` or `;` list, each command substitution and each `find -exec` / `xargs` program.
Here-document bodies are data, not commands; comments are skipped. The corpus metrics sum it
over solutions; dataset rows carry it per task.

Example:
    >>> action_complexity("set -eu\nsort data.txt | uniq -c > out.txt\n").commands
    3
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from pydantic import Field

from taskloom.models import Frozen

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
