"""Validate tasks: run the selected checks of the table, in order, over one sandbox trial.

`validate_task` proves one in-memory task with a runtime and returns its `TaskReport`:
the selected validators (`registry.select`, from `config.checks`) run in table order; a
check whose needs did not pass is skipped; before the first check that needs the sandbox,
the trial parts of every selected sandbox check are merged into one `TrialPlan` and run
once, so a single sandbox (fast mode) serves nop, oracle, mutations and the image scan.
`validate_all` runs many on a thread pool (the work happens in the sandbox engine, so
threads are enough) and removes every sandbox on exit, Ctrl-C included.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING

from taskloom.config import ValidationConfig
from taskloom.errors import ConfigError, SandboxError
from taskloom.models import Task, TaskFile, TaskReport, Verdict, sorted_files
from taskloom.sandbox.environment import environment_spec
from taskloom.sandbox.runtime import Runtime
from taskloom.sandbox.trial import Fingerprint, StepPlan, TrialPlan, TrialResult
from taskloom.validators import registry
from taskloom.validators.protocol import Evidence, FollowUp, SandboxCheck, TrialPart, Validator
from taskloom.validators.structure import load_task

if TYPE_CHECKING:
    from taskloom.generators.llm.client import ChatModel


def validate_task(task: Task, runtime: Runtime, config: ValidationConfig, *,
                  source: str = "", expected_values: tuple[str, ...] = (),
                  chat: ChatModel | None = None,
                  checks: Sequence[Validator] | None = None) -> TaskReport:
    """Run the validation protocol on one task.

    Args:
        task: The task.
        runtime: The sandbox runtime that runs its trial.
        config: Validation settings; `config.checks` selects the checks.
        source: Where the task came from (a folder path), for the report.
        expected_values: Answers the instruction must not state verbatim (known for
            generated tasks); the leakage check looks for them.
        chat: The model for checks that ask one (the judge).
        checks: The validators to run, instead of `config.checks`' selection.

    Raises:
        ConfigError: The selection names an unknown check, or needs a model and has none.
        SandboxError: The sandbox engine failed twice in a row (not the task's fault).
    """
    started = time.monotonic()
    validators = tuple(checks) if checks is not None else selected_checks(config, chat)
    evidence = Evidence(task=task, config=config, expected_values=expected_values, chat=chat)
    outcome: dict[str, bool] = {}  # check name -> passed (absent: skipped)
    verdicts: list[Verdict] = []
    for position, validator in enumerate(validators):
        if not all(outcome.get(need, False) for need in validator.needs):
            continue
        if isinstance(validator, SandboxCheck) and evidence.trial is None:
            parts = [v.trial_part(task, config) for v in validators[position:]
                     if isinstance(v, SandboxCheck)]
            plan, how = plan_trial(task, config, parts)
            evidence = dataclasses.replace(evidence, plan=plan, trial=_run(runtime, plan),
                                           environment=how)
        if isinstance(validator, FollowUp) and evidence.trial is not None:
            evidence = _follow_up(validator, evidence, runtime)
        verdict = validator.check(dataclasses.replace(evidence, verdicts=tuple(verdicts)))
        if verdict is None:
            continue
        _check_reason(validator, verdict)
        outcome[validator.name] = verdict.passed
        verdicts.append(verdict)
    return TaskReport(task=task.name, source=source, verdicts=tuple(verdicts),
                      seconds=round(time.monotonic() - started, 3))


def selected_checks(config: ValidationConfig, chat: ChatModel | None, *,
                    field: str = "--checks") -> tuple[Validator, ...]:
    """The validators `config.checks` selects, checked to have the model they need.

    Raises:
        ConfigError: An unknown check, or a check that asks a model when there is none.
    """
    validators = registry.select(config.checks, field=field)
    asking = [v.name for v in validators if v.needs_model]
    if asking and chat is None:
        raise ConfigError(f"the {', '.join(asking)} check needs a model", field=field,
                          fix="name one (--model NAME, and --base-url URL for a server; "
                              "`mock` works offline), or leave the check out")
    return validators


def plan_trial(task: Task, config: ValidationConfig,
               parts: Sequence[TrialPart] | None = None) -> tuple[TrialPlan, str]:
    """The trial that proves `task`, and how its environment is made.

    `parts` are what the checks need run (default: those of `config.checks`' sandbox
    checks); their phases run in the order given.
    """
    if parts is None:
        parts = [v.trial_part(task, config) for v in registry.select(config.checks)
                 if isinstance(v, SandboxCheck)]
    spec, how = environment_spec(task, config)
    solutions: dict[str, tuple[TaskFile, ...]] = {}
    prints: dict[str, Fingerprint] = {}
    for part in parts:
        solutions.update(part.solutions)
        prints.update((f.sha256, f) for f in part.leak_fingerprints if f.sha256 not in prints)
    agent, verifier = task.config.agent, task.config.verifier
    solution_timeout = min(agent.timeout_sec or config.default_solution_timeout_sec,
                           config.timeout_cap_sec)
    plan = TrialPlan(
        environment=spec, tests=task.tests, solutions=solutions,
        phases=tuple(phase for part in parts for phase in part.phases),
        solution_timeout=solution_timeout,
        tests_timeout=min(verifier.timeout_sec, config.timeout_cap_sec),
        solution_env=dict(task.config.solution.env), verifier_env=dict(verifier.env),
        agent_user=_user(agent.user), verifier_user=_user(verifier.user),
        leak_fingerprints=tuple(prints.values()), log_limit=config.log_limit,
        separate_verifier=verifier.separate, artifacts=task.config.artifact_paths,
        steps=step_plans(task, config, solution_timeout),
        reward_strategy=task.config.reward_strategy)
    return plan, how


def step_plans(task: Task, config: ValidationConfig,
               solution_timeout: float) -> tuple[StepPlan, ...]:
    """A multi-step task's steps as its trial runs them.

    Each step's limits, users and verifier variables over the task's, its tests over the
    task's tests/.
    """
    verifier = task.config.verifier
    plans = []
    for files, settings in zip(task.steps, task.config.steps, strict=True):
        tests = {f.path: f for f in task.tests} | {f.path: f for f in files.tests}
        agent_limit = settings.agent.timeout_sec
        plans.append(StepPlan(
            name=files.name, tests=sorted_files(tests.values()), workdir=files.workdir,
            thresholds=settings.thresholds,
            solution_timeout=min(agent_limit, config.timeout_cap_sec) if agent_limit
            else solution_timeout,
            # Harbor's step verifier keeps its own limit (600 s unless set), never the task's
            tests_timeout=min(settings.verifier.timeout_sec, config.timeout_cap_sec),
            verifier_env={**verifier.env, **settings.verifier.env},
            agent_user=_user(settings.agent.user), verifier_user=_user(settings.verifier.user)))
    return tuple(plans)


def _user(value: str | int | None) -> str | None:
    return None if value is None else str(value)


def _check_reason(validator: Validator, verdict: Verdict) -> None:
    """A validator keeps to its table entry: its name, and the reasons it declares."""
    if verdict.check != validator.name or (verdict.reason is not None and
                                          verdict.reason not in validator.reasons):
        raise TypeError(f"check {validator.name!r} gave a verdict of {verdict.check!r} with "
                        f"reason {verdict.reason!r}; it declares {validator.reasons}")


def _follow_up(validator: FollowUp, evidence: Evidence, runtime: Runtime) -> Evidence:
    """The evidence with the phases of the check's follow-up trial, if it asks for one."""
    part = validator.follow_up(evidence)
    if part is None or not part.phases:
        return evidence
    plan, _ = plan_trial(evidence.task, evidence.config, [part])
    extra, first = _run(runtime, plan), evidence.trial
    return dataclasses.replace(evidence, trial=first.model_copy(update={
        "phases": first.phases + extra.phases, "sandboxes": first.sandboxes + extra.sandboxes,
        "notes": first.notes + extra.notes + ("a follow-up trial ran "
                                              f"{len(extra.phases)} more phase(s)",)}))


def _run(runtime: Runtime, plan: TrialPlan) -> TrialResult:
    try:
        return runtime.run(plan)
    except SandboxError:
        time.sleep(1.0)
        return runtime.run(plan)


def validate_folder(path: Path, runtime: Runtime, config: ValidationConfig, *,
                    chat: ChatModel | None = None) -> TaskReport:
    """Read and validate one task folder; an unreadable folder is a structure verdict."""
    started = time.monotonic()
    task, structure = load_task(path)
    if task is None:
        return TaskReport(task=path.name, source=str(path), verdicts=(structure,),
                          seconds=round(time.monotonic() - started, 3))
    return validate_task(task, runtime, config, source=str(path), chat=chat)


def validate_all(jobs: Iterable[Callable[[], TaskReport]], runtime: Runtime, *,
                 workers: int) -> Iterator[TaskReport]:
    """Run validation jobs on `workers` threads, yielding reports as they finish.

    At most `2 * workers` jobs are in flight, so a long iterable streams. When the
    iteration fails or is interrupted (Ctrl-C), the runtime is closed first, removing every
    sandbox so the running jobs end at once; otherwise its owner closes it.
    """
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="validate")
    pending: set[Future[TaskReport]] = set()
    source = iter(jobs)
    finished = False
    try:
        exhausted = False
        while pending or not exhausted:
            while not exhausted and len(pending) < 2 * workers:
                job = next(source, None)
                if job is None:
                    exhausted = True
                    break
                pending.add(pool.submit(job))
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
        finished = True
    finally:
        for future in pending:
            future.cancel()
        if not finished:
            runtime.close()
        pool.shutdown(wait=True, cancel_futures=True)
