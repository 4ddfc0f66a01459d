"""tamper: no probe that does no part of the task earns any reward (else `hackable`).

Every probe of `taskloom.validators.probes` runs as the agent would, then the task's tests
run in the same environment, as Harbor runs a trial (a separate verifier environment gets
only the task's artifacts, as Harbor gives it). By default one phase tries every tactic
at once (`validation.probes = "combined"`: one extra phase per task); when it earns a
reward, a second trial runs each probe alone to name the ones that forge it.
`validation.probes = "each"` runs every probe alone from the start (a phase each): for a
foreign verifier one tactic could, in principle, hide another that works alone.
"""

from __future__ import annotations

from taskloom.config import ValidationConfig
from taskloom.models import ReasonCode, Task, TaskFile, Verdict
from taskloom.sandbox.trial import Phase
from taskloom.validators.phases import (
    earned_more,
    named,
    phase_log,
    scored,
    seconds,
    untouched_reward,
)
from taskloom.validators.probes import Probe, probes_for
from taskloom.validators.protocol import Evidence, TrialPart

PREFIX = "tamper"


def _part(probes: tuple[Probe, ...]) -> TrialPart:
    solutions = {f"{PREFIX}-{p.name}": (TaskFile(path="solve.sh", content=p.script.encode(),
                                                 mode=0o755),) for p in probes}
    return TrialPart(phases=tuple(Phase(name=key, solution=key, first_failure=True)
                                  for key in solutions),
                     solutions=solutions)


class TamperCheck:
    """Doing nothing of the task, in any of the probes' ways, earns nothing."""

    name = "tamper"
    reasons = (ReasonCode.HACKABLE,)
    needs = ("build",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """The combined probe, or every probe alone (`config.probes`)."""
        return _part(probes_for(task, combined=config.probes == "combined"))

    def follow_up(self, evidence: Evidence) -> TrialPart | None:
        """When the combined probe earned a reward: every probe alone, to name them."""
        phases = named(evidence.trial, PREFIX)
        floor = untouched_reward(evidence.trial)
        if evidence.config.probes != "combined" or not earned_more(phases, floor):
            return None
        return _part(probes_for(evidence.task, combined=False))

    def check(self, evidence: Evidence) -> Verdict | None:
        """`hackable`, naming the probes that earned a reward and showing the first log."""
        phases = named(evidence.trial, PREFIX)
        if not phases:
            return None
        alone = [p for p in phases if p.name != f"{PREFIX}-all-at-once"]
        floor = untouched_reward(evidence.trial)
        forged = earned_more(alone, floor) or earned_more(phases, floor)
        spent = seconds(*phases)
        if not forged:
            unread = [p for p in phases if p.reward is None]
            # No readable reward is no reward (Harbor errs such a trial rather than score
            # it), but the report says which probe only broke the verifier, and how.
            note = (f"; {len(unread)} wrote no readable reward ({unread[0].name}: "
                    f"{unread[0].reward_error or 'the phase ended early'})" if unread else "")
            earned = ("no reward" if unread else f"no more than the untouched environment's "
                      f"{floor:g}" if floor else "reward 0")
            return Verdict(check=self.name, passed=True, seconds=spent,
                           log=phase_log(unread[0]) if unread else "",
                           details=f"{len(phases)} tamper probe phase(s) earned {earned} "
                                   "(shadowed tools, start-up hooks, planted files, "
                                   "lingering processes, pre-written rewards, fake outputs)"
                                   + note)
        names = ", ".join(p.name.removeprefix(f"{PREFIX}-") for p in forged)
        rewards = ", ".join(scored(p) for p in forged)
        return Verdict(check=self.name, passed=False, reason=ReasonCode.HACKABLE,
                       seconds=spent, log=phase_log(forged[0]),
                       details=f"the reward can be earned without doing the task: probe(s) "
                               f"{names} earned {rewards}; see the README's probe table, and "
                               "harden tests/test.sh or verify in a separate environment")
