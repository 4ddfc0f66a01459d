"""nop: the tests on the untouched environment must give reward 0 (else `trivial`).

It is Harbor's `nop` agent: nothing runs before the tests. Tests that pass here pass for
an agent that does nothing, so the task measures nothing.
"""

from __future__ import annotations

from taskloom.config import ValidationConfig
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.sandbox.trial import Phase
from taskloom.validators.phases import phase_log, seconds, settled
from taskloom.validators.protocol import Evidence, TrialPart


class NopCheck:
    """Reward 0 before any solution runs."""

    name = "nop"
    reasons = (ReasonCode.TRIVIAL, ReasonCode.TIMEOUT, ReasonCode.VERIFIER)
    needs = ("build",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """One phase with no solution."""
        return TrialPart(phases=(Phase(name="nop"),))

    def check(self, evidence: Evidence) -> Verdict | None:
        """`trivial` when the tests reward the untouched environment."""
        phases, failed = settled(self.name, evidence.trial, "nop")
        if failed or not phases:
            return failed
        phase = phases[0]
        if phase.reward != 0:
            return Verdict(check=self.name, passed=False, reason=ReasonCode.TRIVIAL,
                           details=f"tests give reward {phase.reward:g} on the untouched "
                                   "environment: the task is solved before the agent starts",
                           log=phase_log(phase), seconds=seconds(phase))
        return Verdict(check=self.name, passed=True, seconds=seconds(phase),
                       details="tests give reward 0 on the untouched environment")
