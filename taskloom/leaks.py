"""Answers stated in an instruction: what the generators avoid and the leakage check finds.

A generated task knows its expected values (counts, names, checksums the tests compare
with). An instruction that states one of them verbatim, as a whole token, gives the answer
away; both the procedural generator (before it accepts a draft) and the leakage check use
this one definition.
"""

from __future__ import annotations

import re

from taskloom.models import Task
from taskloom.sandbox.trial import Leak


def states_value(text: str, value: str) -> bool:
    """True when `value` appears in `text` as a whole token (not inside a longer word)."""
    if not value.strip() or value not in text:  # the substring test spares a regex
        return False
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text) is not None


def instruction_leaks(task: Task, expected_values: tuple[str, ...]) -> list[Leak]:
    """Expected answers that the instruction states verbatim."""
    return [Leak(path="instruction.md", origin=f"the expected value {value!r}")
            for value in expected_values
            if any(states_value(text, value) for text in task.instructions)]
