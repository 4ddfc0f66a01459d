"""oracle: after solution/solve.sh the tests give reward 1, in each of R runs from fresh state.

It is Harbor's `oracle` agent, repeated: all runs below 1 is `oracle-fails`, some is
`flaky` (the task is not deterministic).
"""

from __future__ import annotations

from taskloom.config import ValidationConfig
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.sandbox.trial import Phase
from taskloom.validators.phases import phase_log, scored, seconds, settled
from taskloom.validators.protocol import Evidence, TrialPart

SOLUTION = "oracle"


class OracleCheck:
    """The reference solution earns the full reward, every time."""

    name = "oracle"
    reasons = (ReasonCode.ORACLE_FAILS, ReasonCode.FLAKY, ReasonCode.TIMEOUT,
               ReasonCode.VERIFIER)
    needs = ("build",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """`config.repeats` phases running the task's own solution/ folder.

        A step of a multi-step task with a solution/ of its own runs that one instead.
        """
        own = {f"{SOLUTION}@{step.name}": step.solution for step in task.steps if step.solution}
        return TrialPart(phases=tuple(Phase(name=f"oracle-{k}", solution=SOLUTION)
                                      for k in range(1, config.repeats + 1)),
                         solutions={SOLUTION: task.solution, **own})

    def check(self, evidence: Evidence) -> Verdict | None:
        """`oracle-fails` or `flaky` unless every run gives reward 1."""
        runs, failed = settled(self.name, evidence.trial, "oracle")
        if failed or not runs:
            return failed
        spent = seconds(*runs)
        rewards = [run.reward for run in runs]
        passed = [r is not None and r >= 1.0 for r in rewards]
        shown = ", ".join(scored(run) for run in runs if run.reward is not None)
        if all(passed):
            plain = set(runs[0].rewards or {}) <= {"reward"} and runs[0].steps is None
            each = "" if plain else f" ({shown})"
            return Verdict(check=self.name, passed=True, seconds=spent,
                           details=f"reference solution gives reward 1 in {len(runs)} of "
                                   f"{len(runs)} runs from fresh state{each}")
        failing = runs[passed.index(False)]
        if any(passed):
            return Verdict(check=self.name, passed=False, reason=ReasonCode.FLAKY,
                           details=f"reference solution rewards differ between runs from "
                                   f"fresh state ({shown}): the task is not deterministic",
                           log=phase_log(failing), seconds=spent)
        return Verdict(check=self.name, passed=False, reason=ReasonCode.ORACLE_FAILS,
                       details=f"reference solution gives reward {shown} (needs 1)",
                       log=phase_log(failing), seconds=spent)
