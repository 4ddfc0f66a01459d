"""Fast mode: one sandbox sets the environment up and runs every phase, reset in place.

Between phases the in-sandbox driver restores the state it recorded after setup. When a
phase changes what the driver cannot undo (a new entry in a system directory, a package
database), it stops and reports the phases it did not run; those run in a new sandbox,
set up from scratch. Both runtimes run this loop; each supplies only how to run the driver
once in a new sandbox (`Drive`).
"""

from __future__ import annotations

from typing import Protocol

from taskloom.errors import SandboxError
from taskloom.sandbox.driver_plan import DriverReport
from taskloom.sandbox.trial import Leak, Phase, PhaseResult, SetupResult, TrialPlan, TrialResult


class Drive(Protocol):
    """Runs the driver once in a new sandbox: setup, then `phases` in order.

    Example:
        The Docker runtime's, which scans for leaks in the trial's first sandbox only::

            run_in_place(plan, lambda phases, first: self._drive(plan, phases,
                                                                 scan_leaks=first))
    """

    def __call__(self, phases: list[Phase], first: bool) -> DriverReport:
        """Run setup and `phases` in one new sandbox; `first` asks for the leak scan too."""
        ...


def run_in_place(plan: TrialPlan, drive: Drive, *, sandbox_noun: str = "sandbox") -> TrialResult:
    """Run every phase of `plan`, in as few sandboxes as the state allows.

    Args:
        plan: The trial.
        drive: Runs the driver once in a new sandbox.
        sandbox_noun: What the runtime calls a sandbox, for the notes ("container").

    Returns:
        The phases' results in plan order (a plan of no phases sets the environment up in
        one sandbox, for the build check and the image scan). The leaks are those of the
        first sandbox (later ones are set up the same way, so they do not scan again). A
        failed setup ends the trial with the phases that had run.

    Raises:
        SandboxError: The driver reported phases it did not run without running any (it
            would never finish), or the runtime's own failures.
    """
    phases = list(plan.phases)
    results: list[PhaseResult] = []
    setup = SetupResult(ok=True)
    leaks: tuple[Leak, ...] = ()
    notes: list[str] = []
    sandboxes = 0
    while True:  # at least once: a trial of no phases still sets up (and scans) the image
        sandboxes += 1
        report = drive(phases, sandboxes == 1)
        setup = report.setup
        if sandboxes == 1:
            leaks = report.leaks
        if not setup.ok:
            break
        results = merge_results(results, report.phases)
        pending = carried_phase(results[-1]) if results else None
        if not report.not_run and pending is None:
            break
        if not report.phases:
            raise SandboxError(f"the trial driver ran none of {', '.join(report.not_run)} "
                               "and asked for a new sandbox")
        later = [*([pending.name] if pending else []), *report.not_run]
        notes.append(f"state after {results[-1].name} could not be reset in place "
                     f"({report.dirty}); {', '.join(later)} ran in a new {sandbox_noun}"
                     + (f" ({pending.name}: its tests only)" if pending else ""))
        not_run = set(report.not_run)
        phases = [*([pending] if pending else []),
                  *(phase for phase in phases if phase.name in not_run)]
    return TrialResult(setup=setup, phases=tuple(results), leaks=leaks, sandboxes=sandboxes,
                       notes=tuple(notes))


def carried_phase(result: PhaseResult) -> Phase | None:
    """The tests-only phase that finishes `result`, or None when it is finished.

    A separate verifier's tests need fresh state; when the sandbox of the agent phase could
    not make it, they run in a new one with the artifacts the agent phase left.
    """
    if result.carried is None:
        return None
    return Phase(name=result.name, carried=result.carried)


def merge_results(results: list[PhaseResult],
                  reported: tuple[PhaseResult, ...]) -> list[PhaseResult]:
    """`results` with `reported` added; a tests-only result completes its pending phase."""
    merged = list(results)
    for result in reported:
        if merged and merged[-1].name == result.name and merged[-1].carried is not None:
            merged[-1] = result.model_copy(update={"solution": merged[-1].solution})
        else:
            merged.append(result)
    return merged
