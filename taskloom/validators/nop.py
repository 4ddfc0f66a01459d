"""nop: the tests on the untouched environment must give reward 0 (else `trivial`).

It is Harbor's `nop` agent: nothing runs before the tests. Tests that pass here pass for
an agent that does nothing, so the task measures nothing. Tests that are still running
after `validation.nop_budget_sec` (they wait for a service nothing started) are stopped and
count as not solved, with a warning: they hang instead of failing, which costs every
unsolved rollout the verifier's whole limit.
"""

from __future__ import annotations

from taskloom.config import ValidationConfig
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.sandbox.trial import Phase
from taskloom.validators.phases import hung_tests, phase_log, scored, seconds, settled
from taskloom.validators.protocol import Evidence, TrialPart


class NopCheck:
    """Reward 0 before any solution runs."""

    name = "nop"
    reasons = (ReasonCode.TRIVIAL, ReasonCode.TIMEOUT, ReasonCode.VERIFIER)
    needs = ("build",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """One phase with no solution, its tests held to the nop budget."""
        return TrialPart(phases=(Phase(name="nop", tests_timeout=config.nop_budget_sec,
                                          first_failure=True),))

    def check(self, evidence: Evidence) -> Verdict | None:
        """`trivial` when the tests reward the untouched environment."""
        phases, failed = settled(self.name, evidence.trial, "nop")
        hung = hung_tests(phases[0]) if phases else None
        if hung is not None:
            return Verdict(check=self.name, passed=True, seconds=seconds(phases[0]),
                           log=phase_log(phases[0]),
                           details=f"warning: the tests were still running after "
                                   f"{hung.seconds:.0f} s on the untouched "
                                   "environment (stopped: not solved); they hang instead of "
                                   "failing, which costs every unsolved rollout the "
                                   "verifier's whole limit (a connect timeout, or a check "
                                   "that the service runs, fails fast)")
        if failed or not phases:
            return failed
        phase = phases[0]
        if phase.reward >= 1:
            return Verdict(check=self.name, passed=False, reason=ReasonCode.TRIVIAL,
                           details=f"tests give reward {scored(phase)} on the untouched "
                                   "environment: the task is solved before the agent starts",
                           log=phase_log(phase), seconds=seconds(phase))
        if phase.reward > 0:  # a partial score is not a solved task
            return Verdict(check=self.name, passed=True, seconds=seconds(phase),
                           details=f"graded: tests give reward {scored(phase)} on the "
                                   "untouched environment, below the 1 of a solved task")
        return Verdict(check=self.name, passed=True, seconds=seconds(phase),
                       details=f"tests give reward {scored(phase)} on the untouched "
                               "environment")
