"""leakage: no test, solution, stated answer or readable answer key reaches the agent.

The image is scanned inside the trial's sandbox for every test and solution file (by size,
then digest); the build context is compared on the host. For generated tasks, whose
expected values are known, the instruction must not state one verbatim. Files the tests
compare the outputs with are tried as answers (`answer_keys`): one that earns a reward,
copied into the outputs, is a leak.
"""

from __future__ import annotations

import hashlib

from taskloom.config import ValidationConfig
from taskloom.leaks import instruction_leaks
from taskloom.models import ReasonCode, Task, TaskFile, Verdict
from taskloom.sandbox.trial import Fingerprint, Leak, Phase, TrialResult
from taskloom.validators.answer_keys import PREFIX, candidates, probe_script
from taskloom.validators.phases import (
    earned_more,
    named,
    phase_log,
    scored,
    seconds,
    untouched_reward,
)
from taskloom.validators.protocol import Evidence, TrialPart

# Files this small (an empty __init__.py, "1\n") match by accident; they prove nothing.
MIN_FINGERPRINT_BYTES = 24
NAME = "leakage"


def fingerprints(task: Task) -> tuple[Fingerprint, ...]:
    """Size and digest of every test and solution file worth looking for."""
    found = {}
    folders = [("", task)] + [(f"steps/{step.name}/", step) for step in task.steps]
    for prefix, owner in folders:
        for section in ("tests", "solution"):
            for entry in getattr(owner, section):
                if len(entry.content) >= MIN_FINGERPRINT_BYTES:
                    digest = hashlib.sha256(entry.content).hexdigest()
                    found.setdefault(digest, Fingerprint(
                        origin=f"{prefix}{section}/{entry.path}", size=len(entry.content),
                        sha256=digest))
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
                    prints: tuple[Fingerprint, ...] | None = None,
                    trial: TrialResult | None = None) -> Verdict:
    """One verdict over the build context, the image, the instruction and the answer keys.

    The image counts when it was built, the answer keys when their probes ran in `trial`;
    the instruction is checked when the expected values are known (generated tasks).
    """
    keyed = earned_more(named(trial, PREFIX), untouched_reward(trial))
    keys = candidates(task) if keyed else ()  # the scan again only to name a key found
    leaks = (context_leaks(task, prints) + list(image_leaks) +
             instruction_leaks(task, expected_values) +
             [Leak(path=keys[int(p.name.rsplit("-", 1)[1]) - 1],
                   origin=f"the answer the tests compare with: copied as it is into the "
                          f"paths the instruction names, it earns reward {scored(p)}")
              for p in keyed])
    if leaks:
        lines = [f"{leak.path} holds {leak.origin}" for leak in leaks]
        return Verdict(check=NAME, passed=False, reason=ReasonCode.LEAK,
                       details=f"{len(leaks)} leak(s) of tests, solution or answers: "
                               f"{lines[0]}; keep tests/ and solution/ out of environment/, "
                               "answers out of the instruction, and expected values in "
                               "tests/ (or computed by the tests), not in the environment",
                       log="\n".join(lines) + ("\n" + phase_log(keyed[0]) if keyed else ""),
                       seconds=seconds)
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
        """Scan the environment for the task's test and solution files.

        Each file the tests name that may be an answer key is tried in a phase of its own.
        """
        solutions = {f"{PREFIX}-{k}": (TaskFile(path="solve.sh", mode=0o755,
                                                content=probe_script(task, key).encode()),)
                     for k, key in enumerate(candidates(task), 1)}
        return TrialPart(leak_fingerprints=fingerprints(task), solutions=solutions,
                         phases=tuple(Phase(name=key, solution=key, first_failure=True)
                                      for key in solutions))

    def check(self, evidence: Evidence) -> Verdict:
        """The build context and instruction always; the image when it was set up."""
        plan, trial = evidence.plan, evidence.trial
        return leakage_verdict(
            evidence.task, trial.leaks if trial is not None else (),
            image_checked=evidence.environment_ready, expected_values=evidence.expected_values,
            prints=plan.leak_fingerprints if plan is not None else None, trial=trial,
            seconds=seconds(*named(trial, PREFIX)))
