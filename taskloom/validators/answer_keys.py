"""Answer keys: files in the agent's environment that the tests compare the outputs with.

A test that reads its expected value from a file the agent can read (a hidden
`/app/.expected_checksum` that the instruction merely asks it not to open) pays the reward
to any agent that copies the file into its outputs: Harbor's oracle and nop runs cannot
tell. The leakage check finds such keys in two steps:

1. a static scan of the tests (every file of tests/, and of each step's) for the absolute
   paths they name, leaving out the harness's and the system's, those the shipped verifier
   names itself, and the inputs the instruction gives the agent to work on: paths it names,
   or files below a folder it names (a hidden file there excepted), in a sentence that does
   not forbid them;
2. a probe per candidate, in the task's sandbox: when the file exists after setup, its
   bytes go to every path the instruction names; a reward above the untouched
   environment's makes the file an answer key (a `leak`). An input the tests transform
   (the data a task uppercases) earns nothing copied as it is, so it is never blamed.
"""

from __future__ import annotations

import ast
import re

from taskloom import pysource
from taskloom.generators.verifier import TEST_SH
from taskloom.models import Task, TaskFile
from taskloom.validators.probes import named_paths, paths_in

PREFIX = "answer-key"
MAX_CANDIDATES = 4
# The harness's folders and the system's, whose files no task author puts a key in
# (/nonexistent: the home of accounts that have none, which tests name as a missing file).
_SYSTEM = ("/tests", "/solution", "/logs", "/proc", "/sys", "/dev", "/usr", "/bin", "/sbin",
           "/lib", "/run", "/nonexistent", "/etc/passwd", "/etc/group", "/etc/shadow",
           "/etc/gshadow")
_OWN = frozenset(paths_in(TEST_SH))
_WHOLE_PATH = re.compile(r"/[^\x00-\x1f`'\"]+")
_WRITES = frozenset({"write_text", "write_bytes", "unlink", "touch", "mkdir", "rmdir"})
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_FORBIDS = re.compile(r"\b(?:not|never|without|avoid)\b|n't\b", re.IGNORECASE)


def candidates(task: Task) -> tuple[str, ...]:
    """Files the tests name that could hold the expected values (step 1 above), in order."""
    given = _given(task)
    found: list[str] = []
    for entry in _test_files(task):
        for path in _read_paths(entry):
            path = path.rstrip("/")
            if (len(found) < MAX_CANDIDATES and path not in found and path.count("/") > 1
                    and path not in _OWN and not _is_system(path) and not _is_given(path, given)):
                found.append(path)
    return tuple(found)


def _read_paths(entry: TaskFile) -> list[str]:
    """The absolute paths a test file may read.

    In Python, every string constant that is one whole path (a message with words after
    it is not) and that the file does not write itself (`Path(p).write_text`, `open(p,
    "w")`); in any other file, the paths its text names.
    """
    text = entry.content.decode("utf-8", "replace")
    if not entry.path.endswith(".py"):
        return paths_in(text)
    try:
        tree = pysource.parse(text)
    except SyntaxError:
        return paths_in(text)
    written = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _WRITES and isinstance(node.func.value, ast.Call):
            written |= {a.value for a in node.func.value.args if isinstance(a, ast.Constant)}
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "open" \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                and set(str(node.args[1].value)) & set("wax") \
                and isinstance(node.args[0], ast.Constant):
            written.add(node.args[0].value)
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and _WHOLE_PATH.fullmatch(node.value) and node.value.count(" ") < 2
            and node.value not in written]


def probe_script(task: Task, key: str) -> str:
    """The solve.sh that copies `key`, when it exists, to every path the instruction names."""
    outputs = [path for path in named_paths(task) if path != key]
    quoted = " ".join(_quote(path) for path in outputs)
    return ("#!/bin/bash\n# taskloom answer-key probe: the file's bytes, as they are, at every "
            "path the instruction names\n"
            f"key={_quote(key)}\n[ -f \"$key\" ] || exit 0\n"
            f"for out in {quoted}; do\n"
            '  [ -d "$out" ] && continue\n'
            '  mkdir -p "$(dirname "$out")" && cp "$key" "$out"\n'
            "done\nexit 0\n")


def _test_files(task: Task) -> list[TaskFile]:
    return [*task.tests, *(entry for step in task.steps for entry in step.tests)]


def _given(task: Task) -> tuple[str, ...]:
    """Paths the instruction names in sentences that do not forbid them."""
    given: list[str] = []
    for text in task.instructions:
        for sentence in _SENTENCE.split(text):
            if not _FORBIDS.search(sentence):
                given += [path.rstrip("/") for path in paths_in(sentence)]
    return tuple(given)


def _is_given(path: str, given: tuple[str, ...]) -> bool:
    hidden = path.rsplit("/", 1)[-1].startswith(".")
    return any(path == named or (not hidden and path.startswith(named + "/"))
               for named in given if named)


def _is_system(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") or
               (root.startswith("/lib") and path.startswith(root)) for root in _SYSTEM)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
