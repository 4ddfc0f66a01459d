"""Leakage check: no test or solution file inside the environment's build context or image."""

from __future__ import annotations

import hashlib

from taskloom.leaks import instruction_leaks
from taskloom.models import Check, ReasonCode, Task, Verdict
from taskloom.sandbox.trial import Fingerprint, Leak

# Files this small (an empty __init__.py, "1\n") match by accident; they prove nothing.
MIN_FINGERPRINT_BYTES = 24


def fingerprints(task: Task) -> tuple[Fingerprint, ...]:
    """Size and digest of every test and solution file worth looking for."""
    found = {}
    for section in ("tests", "solution"):
        for entry in getattr(task, section):
            if len(entry.content) >= MIN_FINGERPRINT_BYTES:
                digest = hashlib.sha256(entry.content).hexdigest()
                found.setdefault(digest, Fingerprint(origin=f"{section}/{entry.path}",
                                                     size=len(entry.content), sha256=digest))
    return tuple(found.values())


def context_leaks(task: Task) -> list[Leak]:
    """Test or solution files copied into environment/ (the build context)."""
    by_digest = {f.sha256: f.origin for f in fingerprints(task)}
    leaks = []
    for entry in task.environment:
        origin = by_digest.get(hashlib.sha256(entry.content).hexdigest())
        if origin:
            leaks.append(Leak(path=f"environment/{entry.path}", origin=origin))
    return leaks


def leakage_verdict(task: Task, image_leaks: tuple[Leak, ...], *, seconds: float = 0.0,
                    image_checked: bool = True,
                    expected_values: tuple[str, ...] = ()) -> Verdict:
    """One verdict over the build context, the image (when built) and the instruction.

    The instruction is checked when the expected values are known (generated tasks).
    """
    leaks = (context_leaks(task) + list(image_leaks) +
             instruction_leaks(task, expected_values))
    if leaks:
        lines = [f"{leak.path} holds {leak.origin}" for leak in leaks]
        return Verdict(check=Check.LEAKAGE, passed=False, reason=ReasonCode.LEAK,
                       details=f"{len(leaks)} leak(s) of tests, solution or answers: "
                               f"{lines[0]}; keep tests/ and solution/ out of environment/ "
                               "and answers out of the instruction",
                       log="\n".join(lines), seconds=seconds)
    scope = "build context and image" if image_checked else "build context"
    return Verdict(check=Check.LEAKAGE, passed=True, seconds=seconds,
                   details=f"no test or solution file in the {scope}")
