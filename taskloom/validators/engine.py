"""Validate tasks: structure → build → nop → oracle ×R → mutations → leakage → judge.

`validate_task` proves one in-memory task with a runtime and returns its `TaskReport`;
`validate_all` runs many on a thread pool (the work happens in the sandbox engine, so
threads are enough) and removes every sandbox on exit, Ctrl-C included.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from taskloom.config import ValidationConfig
from taskloom.errors import SandboxError
from taskloom.models import Task, TaskReport, Verdict
from taskloom.sandbox.runtime import Runtime
from taskloom.sandbox.trial import TrialPlan, TrialResult
from taskloom.validators.judge import Judge
from taskloom.validators.leakage import leakage_verdict
from taskloom.validators.solvability import build_verdict, phase_verdicts, plan_trial
from taskloom.validators.structure import check_structure, load_task


def validate_task(task: Task, runtime: Runtime, config: ValidationConfig, *,
                  source: str = "", structure: Verdict | None = None,
                  expected_values: tuple[str, ...] = (),
                  judge: Judge | None = None) -> TaskReport:
    """Run the whole validation protocol on one task.

    `expected_values` (known for generated tasks) are answers the instruction must not
    state verbatim; the leakage check looks for them. A `judge` (optional, LLM) runs last
    and only when every other check passed.

    Raises:
        SandboxError: The sandbox engine failed twice in a row (not the task's fault).
    """
    started = time.monotonic()
    verdicts = [structure or check_structure(task)]
    if verdicts[0].passed:
        plan, how = plan_trial(task, config)
        result = _run_with_retry(runtime, plan)
        verdicts.append(build_verdict(result.setup, how))
        if result.setup.ok:
            verdicts.extend(phase_verdicts(result))
        verdicts.append(leakage_verdict(task, result.leaks, image_checked=result.setup.ok,
                                        expected_values=expected_values))
    if judge is not None and all(v.passed for v in verdicts):
        verdicts.append(judge.judge(task))
    return TaskReport(task=task.name, source=source, verdicts=tuple(verdicts),
                      seconds=round(time.monotonic() - started, 3))


def _run_with_retry(runtime: Runtime, plan: TrialPlan) -> TrialResult:
    try:
        return runtime.run(plan)
    except SandboxError:
        time.sleep(1.0)
        return runtime.run(plan)


def validate_folder(path: Path, runtime: Runtime, config: ValidationConfig) -> TaskReport:
    """Read and validate one task folder; an unreadable folder is a structure verdict."""
    started = time.monotonic()
    task, structure = load_task(path)
    if task is None:
        return TaskReport(task=path.name, source=str(path), verdicts=(structure,),
                          seconds=round(time.monotonic() - started, 3))
    return validate_task(task, runtime, config, source=str(path), structure=structure)


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
