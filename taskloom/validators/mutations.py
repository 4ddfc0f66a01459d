"""mutations: a solution that skips a step or ignores a stated rule must earn reward 0.

Two kinds of wrong solution, each run once from fresh state:
- step mutants: a solve.sh whose steps are marked with `# taskloom:step` lines (every
  generated task has them) is run once per step with that step replaced by a no-op
  (solutions without markers, or with one step, get none);
- rule mutants: the scripts a task ships as `solution/mutants/*.sh`, each the solution with
  one rule the instruction states ignored (a filter, a deduplication, malformed lines
  skipped, a sort key); every generated task ships one per rule its steps state.
A mutant that still earns a reward means the tests do not check that step, or the data
never exercises that rule (`weak-tests`).
"""

from __future__ import annotations

import re

from taskloom.config import ValidationConfig
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.sandbox.trial import Phase, PhaseResult
from taskloom.validators.phases import as_solution, phase_log, seconds, settled
from taskloom.validators.protocol import Evidence, TrialPart

STEP_MARKER = re.compile(r"^\s*#\s*taskloom:step\b", re.MULTILINE)
PREFIX = "mutant"


def solution_steps(script: str) -> list[tuple[int, int]]:
    """Line ranges [start, end) of the marked steps of a solve.sh."""
    lines = script.splitlines()
    starts = [i for i, line in enumerate(lines) if STEP_MARKER.match(line)]
    return [(start, starts[k + 1] if k + 1 < len(starts) else len(lines))
            for k, start in enumerate(starts)]


def without_step(script: str, index: int) -> str:
    """solve.sh with marked step `index` (0-based) replaced by a no-op."""
    lines = script.splitlines(keepends=True)
    start, end = solution_steps(script)[index]
    return "".join([*lines[:start], f": # step {index + 1} removed by taskloom\n", *lines[end:]])


def mutants(task: Task) -> dict[str, bytes]:
    """Phase name -> wrong solve.sh.

    `mutant-<k>` skips step k; `mutant-<stem>` is the shipped `solution/mutants/<stem>.sh`.
    A multi-step task has none: its solution is one script per step.
    """
    if task.steps:
        return {}
    solve = task.file("solution", "solve.sh")
    script = solve.content.decode("utf-8", "replace") if solve else ""
    steps = solution_steps(script)
    found = {f"{PREFIX}-{k + 1}": without_step(script, k).encode()
             for k in range(len(steps))} if len(steps) > 1 else {}
    for mutant in task.mutants:
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", mutant.path.rsplit("/", 1)[-1][:-3])
        found[f"{PREFIX}-{stem}"] = mutant.content
    return found


def wrong_in(phase: PhaseResult) -> str:
    """What a mutant phase got wrong, in words."""
    what = phase.name.removeprefix(f"{PREFIX}-")
    return f"step {what} removed" if what.isdigit() else f"solution/mutants/{what}.sh"


class MutationCheck:
    """Every marked step of the reference solution, and every stated rule, is needed."""

    name = "mutations"
    reasons = (ReasonCode.WEAK_TESTS, ReasonCode.VERIFIER)
    needs = ("build",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """One phase per step mutant and per shipped rule mutant."""
        solutions = {name: as_solution(task, script) for name, script in mutants(task).items()}
        return TrialPart(phases=tuple(Phase(name=key, solution=key, first_failure=True)
                                      for key in solutions),
                         solutions=solutions)

    def check(self, evidence: Evidence) -> Verdict | None:
        """`weak-tests` when some mutant still earns a reward."""
        # A mutant that times out earns nothing, as a mutant should; only an unreadable
        # reward (a broken verifier) fails the check outright.
        runs, failed = settled(self.name, evidence.trial, PREFIX, only=ReasonCode.VERIFIER)
        if failed or not runs:
            return failed
        spent = seconds(*runs)
        weak = [m for m in runs if m.reward is not None and m.reward > 0]
        if weak:
            return Verdict(check=self.name, passed=False, reason=ReasonCode.WEAK_TESTS,
                           details="tests still pass with a wrong solution ("
                                   + ", ".join(wrong_in(m) for m in weak)
                                   + "): a step or a stated rule is not checked, or the data "
                                     "never exercises the rule",
                           log=phase_log(weak[0]), seconds=spent)
        steps = sum(m.name.removeprefix(f"{PREFIX}-").isdigit() for m in runs)
        return Verdict(check=self.name, passed=True, seconds=spent,
                       details=f"{len(runs)} wrong solution(s) ({steps} with a step removed, "
                               f"{len(runs) - steps} ignoring a stated rule) earn reward 0")
