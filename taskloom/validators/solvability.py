"""Solvability: nop → oracle ×R → step mutations, as one trial in a sandbox.

- nop: tests on the untouched environment must give reward 0 (else `trivial`);
- oracle: after solve.sh, reward 1 in every one of R runs from fresh state (all fail:
  `oracle-fails`; some fail: `flaky`);
- mutations: for a solve.sh whose steps are marked with `# taskloom:step` lines, the
  solution with any one step removed must give reward 0 (else `weak-tests`).
A timeout in any phase is `timeout`; a test.sh that writes no readable reward is `verifier`.
"""

from __future__ import annotations

import re

from taskloom.config import ValidationConfig
from taskloom.models import Check, ReasonCode, Task, TaskFile, Verdict
from taskloom.sandbox.trial import Phase, PhaseResult, SetupResult, TrialPlan, TrialResult
from taskloom.validators.environment import environment_spec
from taskloom.validators.leakage import fingerprints

STEP_MARKER = re.compile(r"^\s*#\s*taskloom:step\b", re.MULTILINE)
LOG_EXCERPT_CHARS = 6000


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


def plan_trial(task: Task, config: ValidationConfig) -> tuple[TrialPlan, str]:
    """The trial that proves `task`, and how its environment is made."""
    spec, how = environment_spec(task, config)
    solutions: dict[str, tuple[TaskFile, ...]] = {"oracle": task.solution}
    phases = [Phase(name="nop")]
    phases += [Phase(name=f"oracle-{k}", solution="oracle") for k in range(1, config.repeats + 1)]
    solve = task.file("solution", "solve.sh")
    steps = solution_steps(solve.content.decode("utf-8", "replace")) if solve else []
    if config.mutations and len(steps) > 1:
        script = solve.content.decode("utf-8", "replace")
        for k in range(len(steps)):
            mutant = solve.model_copy(update={"content": without_step(script, k).encode()})
            solutions[f"mutant-{k + 1}"] = tuple(
                mutant if f.path == "solve.sh" else f for f in task.solution)
            phases.append(Phase(name=f"mutant-{k + 1}", solution=f"mutant-{k + 1}"))
    agent, verifier = task.config.agent, task.config.verifier
    plan = TrialPlan(
        environment=spec, tests=task.tests, solutions=solutions, phases=tuple(phases),
        solution_timeout=min(agent.timeout_sec or config.default_solution_timeout_sec,
                             config.timeout_cap_sec),
        tests_timeout=min(verifier.timeout_sec, config.timeout_cap_sec),
        solution_env=dict(task.config.solution.env), verifier_env=dict(verifier.env),
        agent_user=_user(agent.user), verifier_user=_user(verifier.user),
        leak_fingerprints=fingerprints(task), log_limit=config.log_limit)
    return plan, how


def _user(value: str | int | None) -> str | None:
    return None if value is None else str(value)


def build_verdict(setup: SetupResult, how: str) -> Verdict:
    """Did the environment build (or set up) within its limit?"""
    if setup.ok:
        return Verdict(check=Check.BUILD, passed=True, seconds=setup.seconds,
                       details=f"environment ready ({how})")
    command = setup.command
    if command is not None and command.timed_out:
        what = "timed out"
    elif setup.step is not None and command is not None:
        what = f"step {setup.step + 1} failed with exit code {command.exit_code}"
    else:
        what = "failed"
    return Verdict(check=Check.BUILD, passed=False, reason=ReasonCode.BUILD,
                   seconds=setup.seconds, details=f"the environment build {what} ({how})",
                   log=_excerpt(setup.log or (command.log if command else "")))


def phase_verdicts(result: TrialResult) -> list[Verdict]:
    """nop, oracle and mutation verdicts from the phases of a trial."""
    phases = {p.name: p for p in result.phases}
    verdicts = []
    if "nop" in phases:
        verdicts.append(_nop_verdict(phases["nop"]))
    oracle_runs = [p for p in result.phases if p.name.startswith("oracle-")]
    if oracle_runs:
        verdicts.append(_oracle_verdict(oracle_runs))
    mutants = [p for p in result.phases if p.name.startswith("mutant-")]
    if mutants:
        verdicts.append(_mutation_verdict(mutants))
    return verdicts


def _seconds(*phases: PhaseResult) -> float:
    return round(sum((p.solution.seconds if p.solution else 0.0) +
                     (p.tests.seconds if p.tests else 0.0) for p in phases), 3)


def _problem(phase: PhaseResult) -> tuple[ReasonCode, str] | None:
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


def _nop_verdict(phase: PhaseResult) -> Verdict:
    problem = _problem(phase)
    if problem:
        return Verdict(check=Check.NOP, passed=False, reason=problem[0], details=problem[1],
                       log=_phase_log(phase), seconds=_seconds(phase))
    if phase.reward != 0:
        return Verdict(check=Check.NOP, passed=False, reason=ReasonCode.TRIVIAL,
                       details=f"tests give reward {phase.reward:g} on the untouched "
                               "environment: the task is solved before the agent starts",
                       log=_phase_log(phase), seconds=_seconds(phase))
    return Verdict(check=Check.NOP, passed=True, seconds=_seconds(phase),
                   details="tests give reward 0 on the untouched environment")


def _oracle_verdict(runs: list[PhaseResult]) -> Verdict:
    seconds = _seconds(*runs)
    for run in runs:
        problem = _problem(run)
        if problem:
            return Verdict(check=Check.ORACLE, passed=False, reason=problem[0],
                           details=problem[1], log=_phase_log(run), seconds=seconds)
    rewards = [run.reward for run in runs]
    passed = [r is not None and r >= 1.0 for r in rewards]
    shown = ", ".join(f"{r:g}" for r in rewards if r is not None)
    if all(passed):
        return Verdict(check=Check.ORACLE, passed=True, seconds=seconds,
                       details=f"reference solution gives reward 1 in {len(runs)} of "
                               f"{len(runs)} runs from fresh state")
    failing = runs[passed.index(False)]
    if any(passed):
        return Verdict(check=Check.ORACLE, passed=False, reason=ReasonCode.FLAKY,
                       details=f"reference solution rewards differ between runs from fresh "
                               f"state ({shown}): the task is not deterministic",
                       log=_phase_log(failing), seconds=seconds)
    return Verdict(check=Check.ORACLE, passed=False, reason=ReasonCode.ORACLE_FAILS,
                   details=f"reference solution gives reward {shown} (needs 1)",
                   log=_phase_log(failing), seconds=seconds)


def _mutation_verdict(mutants: list[PhaseResult]) -> Verdict:
    seconds = _seconds(*mutants)
    for mutant in mutants:
        problem = _problem(mutant)
        if problem and problem[0] is ReasonCode.VERIFIER:
            return Verdict(check=Check.MUTATIONS, passed=False, reason=problem[0],
                           details=problem[1], log=_phase_log(mutant), seconds=seconds)
    weak = [m for m in mutants if m.reward is not None and m.reward > 0]
    if weak:
        names = ", ".join(m.name.replace("mutant-", "step ") for m in weak)
        return Verdict(check=Check.MUTATIONS, passed=False, reason=ReasonCode.WEAK_TESTS,
                       details=f"tests still pass with {names} of the solution removed: "
                               "that step is not checked",
                       log=_phase_log(weak[0]), seconds=seconds)
    return Verdict(check=Check.MUTATIONS, passed=True, seconds=seconds,
                   details=f"removing any one of the {len(mutants)} solution steps makes the "
                           "tests fail")


def _phase_log(phase: PhaseResult) -> str:
    parts = [f"[{phase.name}]"]
    if phase.solution is not None:
        parts.append(f"--- solve.sh (exit {phase.solution.exit_code}) ---\n{phase.solution.log}")
    if phase.tests is not None:
        parts.append(f"--- test.sh (exit {phase.tests.exit_code}) ---\n{phase.tests.log}")
    if phase.reward_error:
        parts.append(f"--- reward: {phase.reward_error}")
    return _excerpt("\n".join(parts))


def _excerpt(text: str) -> str:
    if len(text) <= LOG_EXCERPT_CHARS:
        return text
    half = LOG_EXCERPT_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters dropped ...]\n{text[-half:]}"
