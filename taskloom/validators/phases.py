"""What the phase checks (nop, oracle, alternatives, mutations) share: reading phases.

A phase is one attempt from fresh state: an optional solution, then the tests. Its reward
is the only thing that counts; a phase that timed out or left no readable reward is
reported as such (`timeout`, `verifier`) before its reward is looked at. When reward.json
names several rewards (`correctness`, `performance`), a phase is judged by the lowest:
solved means every named reward at its maximum, 1.
"""

from __future__ import annotations

from taskloom.models import ALTERNATIVES, MUTANTS, ReasonCode, Task, TaskFile, Verdict, sorted_files
from taskloom.sandbox.trial import PhaseResult, TrialResult

LOG_EXCERPT_CHARS = 6000


def named(trial: TrialResult | None, prefix: str) -> list[PhaseResult]:
    """The phases of `trial` whose name is `prefix` or starts with `prefix-`."""
    if trial is None:
        return []
    return [p for p in trial.phases if p.name == prefix or p.name.startswith(f"{prefix}-")]


def settled(check: str, trial: TrialResult | None, prefix: str, *,
            only: ReasonCode | None = None) -> tuple[list[PhaseResult], Verdict | None]:
    """The phases named `prefix`, and the failed verdict of the first with a `problem`.

    A check returns the verdict when there is one, nothing when there are no phases, and
    judges the rewards otherwise.
    """
    phases = named(trial, prefix)
    return phases, problem_verdict(check, phases, only=only)


def as_solution(task: Task, script: bytes) -> tuple[TaskFile, ...]:
    """The solution folder one phase of another script runs: `script` as solve.sh.

    The other scripts (alternatives, mutants) stay out of it.
    """
    others = (f"{ALTERNATIVES}/", f"{MUTANTS}/")
    solve = TaskFile(path="solve.sh", content=script, mode=0o755)
    return sorted_files([solve, *(f for f in task.solution
                                  if f.path != "solve.sh" and not f.path.startswith(others))])


def scored(phase: PhaseResult) -> str:
    """The reward as the report shows it: `1`, or `0.5 (correctness 1, performance 0.5)`."""
    if phase.reward is None:
        return "none"
    named = phase.rewards or {}
    if set(named) <= {"reward"}:
        return f"{phase.reward:g}"
    return f"{phase.reward:g} ({', '.join(f'{k} {v:g}' for k, v in named.items())})"


def seconds(*phases: PhaseResult) -> float:
    """Wall-clock seconds the phases' solutions and tests took together."""
    return round(sum((p.solution.seconds if p.solution else 0.0) +
                     (p.tests.seconds if p.tests else 0.0) for p in phases), 3)


def problem(phase: PhaseResult) -> tuple[ReasonCode, str] | None:
    """Timeout or unreadable reward, the failures that are not about the reward's value."""
    if phase.solution is not None and phase.solution.timed_out:
        return ReasonCode.TIMEOUT, (f"{phase.name}: solve.sh was killed after "
                                    f"{phase.solution.seconds:.0f} s (wall-clock limit)")
    if phase.tests is not None and phase.tests.timed_out:
        return ReasonCode.TIMEOUT, (f"{phase.name}: test.sh was killed after "
                                    f"{phase.tests.seconds:.0f} s (wall-clock limit)")
    if phase.reward is None:
        return ReasonCode.VERIFIER, f"{phase.name}: {phase.reward_error}"
    return None


def problem_verdict(check: str, phases: list[PhaseResult], *,
                    only: ReasonCode | None = None) -> Verdict | None:
    """The failed verdict of the first phase with a `problem` (of reason `only`, if given)."""
    for phase in phases:
        found = problem(phase)
        if found and (only is None or found[0] is only):
            return Verdict(check=check, passed=False, reason=found[0], details=found[1],
                           log=phase_log(phase), seconds=seconds(*phases))
    return None


def phase_log(phase: PhaseResult) -> str:
    """The logs that prove a phase's outcome: solve.sh, test.sh, the reward problem."""
    parts = [f"[{phase.name}]"]
    if phase.solution is not None:
        parts.append(f"--- solve.sh (exit {phase.solution.exit_code}) ---\n{phase.solution.log}")
    if phase.tests is not None:
        parts.append(f"--- test.sh (exit {phase.tests.exit_code}) ---\n{phase.tests.log}")
    if phase.reward_error:
        parts.append(f"--- reward: {phase.reward_error}")
    return excerpt("\n".join(parts))


def excerpt(text: str) -> str:
    """Head and tail of a long log, at most LOG_EXCERPT_CHARS characters."""
    if len(text) <= LOG_EXCERPT_CHARS:
        return text
    half = LOG_EXCERPT_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters dropped ...]\n{text[-half:]}"
