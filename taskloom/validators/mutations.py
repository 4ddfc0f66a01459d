"""mutations: the solution with any one marked step removed must earn reward 0.

A solve.sh whose steps are marked with `# taskloom:step` lines (every generated task has
them) is run once per step with that step replaced by a no-op. A mutant that still earns a
reward means the tests do not check that step (`weak-tests`). Solutions without markers,
or with one step, are not mutated.
"""

from __future__ import annotations

import re

from taskloom.config import ValidationConfig
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.sandbox.trial import Phase
from taskloom.validators.phases import named, phase_log, problem_verdict, seconds
from taskloom.validators.protocol import Evidence, TrialPart

STEP_MARKER = re.compile(r"^\s*#\s*taskloom:step\b", re.MULTILINE)


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


class MutationCheck:
    """Every marked step of the reference solution is needed for the reward."""

    name = "mutations"
    reasons = (ReasonCode.WEAK_TESTS, ReasonCode.VERIFIER)
    needs = ("build",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """One phase per marked step, each running solve.sh without that step."""
        solve = task.file("solution", "solve.sh")
        script = solve.content.decode("utf-8", "replace") if solve else ""
        steps = solution_steps(script)
        if len(steps) < 2:
            return TrialPart()
        solutions = {}
        for k in range(len(steps)):
            mutant = solve.model_copy(update={"content": without_step(script, k).encode()})
            solutions[f"mutant-{k + 1}"] = tuple(
                mutant if f.path == "solve.sh" else f for f in task.solution)
        return TrialPart(phases=tuple(Phase(name=key, solution=key) for key in solutions),
                         solutions=solutions)

    def check(self, evidence: Evidence) -> Verdict | None:
        """`weak-tests` when some mutant still earns a reward."""
        mutants = named(evidence.trial, "mutant")
        if not mutants:
            return None
        # A mutant that times out earns nothing, as a mutant should; only an unreadable
        # reward (a broken verifier) fails the check outright.
        failed = problem_verdict(self.name, mutants, only=ReasonCode.VERIFIER)
        if failed is not None:
            return failed
        spent = seconds(*mutants)
        weak = [m for m in mutants if m.reward is not None and m.reward > 0]
        if weak:
            names = ", ".join(m.name.replace("mutant-", "step ") for m in weak)
            return Verdict(check=self.name, passed=False, reason=ReasonCode.WEAK_TESTS,
                           details=f"tests still pass with {names} of the solution removed: "
                                   "that step is not checked",
                           log=phase_log(weak[0]), seconds=spent)
        return Verdict(check=self.name, passed=True, seconds=spent,
                       details=f"removing any one of the {len(mutants)} solution steps makes "
                               "the tests fail")
