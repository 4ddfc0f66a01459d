"""What the phase checks (nop, oracle, alternatives, mutations) share: reading phases.

A phase is one attempt from fresh state: an optional solution, then the tests. Its reward
is the only thing that counts; a phase that timed out or left no readable reward is
reported as such (`timeout`, `verifier`) before its reward is looked at. When reward.json
names several rewards (`correctness`, `performance`), a phase is judged by the lowest:
solved means every named reward at its maximum, 1.
"""

from __future__ import annotations

from taskloom.models import ALTERNATIVES, MUTANTS, ReasonCode, Task, TaskFile, Verdict, sorted_files
from taskloom.sandbox.trial import CommandResult, PhaseResult, TrialResult

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


def untouched_reward(trial: TrialResult | None) -> float:
    """What the tests give the untouched environment: 0, or a graded task's partial score."""
    nop = [p.reward for p in named(trial, "nop") if p.reward is not None]
    return min(nop[0], 1.0) if nop else 0.0


def earned_more(phases: list[PhaseResult], floor: float) -> list[PhaseResult]:
    """The phases that earned more than `floor` (the untouched environment's reward)."""
    return [p for p in phases if p.reward is not None and p.reward > floor]


def as_solution(task: Task, script: bytes) -> tuple[TaskFile, ...]:
    """The solution folder one phase of another script runs: `script` as solve.sh.

    The other scripts (alternatives, mutants) stay out of it.
    """
    others = (f"{ALTERNATIVES}/", f"{MUTANTS}/")
    solve = TaskFile(path="solve.sh", content=script, mode=0o755)
    return sorted_files([solve, *(f for f in task.solution
                                  if f.path != "solve.sh" and not f.path.startswith(others))])


def scored(phase: PhaseResult) -> str:
    """The reward as the report shows it, with each named reward and step.

    `1`, `0.5 (correctness 1, performance 0.5)`, `0.5 (steps: build 1, deploy 0)`.
    """
    if phase.reward is None:
        return "none"
    named = phase.rewards or {}
    shown = f"{phase.reward:g}"
    if not set(named) <= {"reward"}:
        shown += f" ({_named(named)})"
    if phase.steps is not None:
        shown += " (steps: " + ", ".join(f"{s.name} {_named(s.rewards) if s.rewards else 'none'}"
                                         for s in phase.steps) + ")"
    return shown


def _named(rewards: dict[str, float]) -> str:
    if set(rewards) <= {"reward"}:
        return f"{rewards['reward']:g}"
    return ", ".join(f"{k} {v:g}" for k, v in rewards.items())


def commands(phase: PhaseResult) -> list[tuple[str, str, CommandResult]]:
    """(where, script, outcome) of every command a phase ran, in order.

    Its solve.sh and test.sh, or each step's setup.sh, solve.sh and test.sh.
    """
    if phase.steps is None:
        ran = [(phase.name, "solve.sh", phase.solution), (phase.name, "test.sh", phase.tests)]
    else:
        ran = [(f"{phase.name}, step {step.name}", script, outcome) for step in phase.steps
               for script, outcome in (("workdir/setup.sh", step.setup),
                                       ("solve.sh", step.solution), ("test.sh", step.tests))]
    return [(where, script, outcome) for where, script, outcome in ran if outcome is not None]


def hung_tests(phase: PhaseResult) -> CommandResult | None:
    """The test.sh run of a phase that its time limit killed, if one was."""
    return next((outcome for _, script, outcome in commands(phase)
                 if script == "test.sh" and outcome.timed_out), None)


def seconds(*phases: PhaseResult) -> float:
    """Wall-clock seconds the phases' commands (solutions and tests) took together."""
    return round(sum(outcome.seconds for phase in phases
                     for _, _, outcome in commands(phase)), 3)


def problem(phase: PhaseResult) -> tuple[ReasonCode, str] | None:
    """Timeout or unreadable reward, the failures that are not about the reward's value."""
    for where, script, outcome in commands(phase):
        if outcome.timed_out:
            return ReasonCode.TIMEOUT, (f"{where}: {script} was killed after "
                                        f"{outcome.seconds:.0f} s (wall-clock limit)")
    for step in phase.steps or ():
        if step.reward_error:
            return ReasonCode.VERIFIER, f"{phase.name}, step {step.name}: {step.reward_error}"
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
    """The logs that prove a phase's outcome: each command's, the reward problem."""
    parts = [f"[{phase.name}]"]
    for where, script, outcome in commands(phase):
        step = where.removeprefix(phase.name).removeprefix(", ")
        parts.append(f"--- {step + ': ' if step else ''}{script} (exit {outcome.exit_code}) "
                     f"---\n{outcome.log}")
    if phase.reward_error:
        parts.append(f"--- reward: {phase.reward_error}")
    return excerpt("\n".join(parts))


def excerpt(text: str) -> str:
    """Head and tail of a long log, at most LOG_EXCERPT_CHARS characters."""
    if len(text) <= LOG_EXCERPT_CHARS:
        return text
    half = LOG_EXCERPT_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters dropped ...]\n{text[-half:]}"
