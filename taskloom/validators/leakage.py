"""leakage: no test or solution file in the build context or the image; no stated answer.

The image is scanned inside the trial's sandbox for every test and solution file (by size,
then digest); the build context is compared on the host. For generated tasks, whose
expected values are known, the instruction must not state one verbatim.
"""

from __future__ import annotations

import hashlib

from taskloom.config import ValidationConfig
from taskloom.leaks import instruction_leaks
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.sandbox.trial import Fingerprint, Leak
from taskloom.validators.protocol import Evidence, TrialPart

# Files this small (an empty __init__.py, "1\n") match by accident; they prove nothing.
MIN_FINGERPRINT_BYTES = 24
NAME = "leakage"


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


def context_leaks(task: Task, prints: tuple[Fingerprint, ...] | None = None) -> list[Leak]:
    """Test or solution files copied into environment/ (the build context).

    `prints` are the task's `fingerprints`, when they were computed already.
    """
    by_digest = {f.sha256: f.origin for f in (fingerprints(task) if prints is None else prints)}
    leaks = []
    for entry in task.environment:
        origin = by_digest.get(hashlib.sha256(entry.content).hexdigest())
        if origin:
            leaks.append(Leak(path=f"environment/{entry.path}", origin=origin))
    return leaks


def leakage_verdict(task: Task, image_leaks: tuple[Leak, ...], *, seconds: float = 0.0,
                    image_checked: bool = True, expected_values: tuple[str, ...] = (),
                    prints: tuple[Fingerprint, ...] | None = None) -> Verdict:
    """One verdict over the build context, the image (when built) and the instruction.

    The instruction is checked when the expected values are known (generated tasks).
    """
    leaks = (context_leaks(task, prints) + list(image_leaks) +
             instruction_leaks(task, expected_values))
    if leaks:
        lines = [f"{leak.path} holds {leak.origin}" for leak in leaks]
        return Verdict(check=NAME, passed=False, reason=ReasonCode.LEAK,
                       details=f"{len(leaks)} leak(s) of tests, solution or answers: "
                               f"{lines[0]}; keep tests/ and solution/ out of environment/ "
                               "and answers out of the instruction",
                       log="\n".join(lines), seconds=seconds)
    scope = "build context and image" if image_checked else "build context"
    return Verdict(check=NAME, passed=True, seconds=seconds,
                   details=f"no test or solution file in the {scope}")


class LeakageCheck:
    """Nothing of the tests, the solution or the answers reaches the agent."""

    name = NAME
    reasons = (ReasonCode.LEAK,)
    needs = ("structure",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """Scan the environment for the task's test and solution files."""
        return TrialPart(leak_fingerprints=fingerprints(task))

    def check(self, evidence: Evidence) -> Verdict:
        """The build context and instruction always; the image when it was set up."""
        plan, trial = evidence.plan, evidence.trial
        return leakage_verdict(
            evidence.task, trial.leaks if trial is not None else (),
            image_checked=evidence.environment_ready, expected_values=evidence.expected_values,
            prints=plan.leak_fingerprints if plan is not None else None)
