"""Recorded trials for tests of the validation logic: phase results and a replaying runtime."""

from __future__ import annotations

from taskloom.sandbox.trial import CommandResult, PhaseResult, TrialPlan, TrialResult


def phase(reward, *, name="oracle-1", timed_out=False, error=None):
    command = CommandResult(exit_code=0, timed_out=False, seconds=0.1, log="")
    return PhaseResult(name=name, solution=command,
                       tests=command.model_copy(update={"timed_out": timed_out}),
                       reward=reward, reward_error=error)


class Replay:
    """A runtime that records the plans it is given and answers with recorded results.

    The results are given in order; the last one answers every later trial too.
    """

    name = "replay"

    def __init__(self, *results: TrialResult) -> None:
        self.results = list(results)
        self.plans: list[TrialPlan] = []

    def run(self, plan: TrialPlan) -> TrialResult:
        self.plans.append(plan)
        return self.results.pop(0) if len(self.results) > 1 else self.results[0]

    def close(self) -> None:
        pass
