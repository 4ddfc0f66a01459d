"""The host side of the in-sandbox driver: the plan.json it reads, and what it reports back.

Every runtime that runs `driver.py` (Docker, bubblewrap) builds its plan and reads its
output here, so the two speak exactly the same protocol: a `DriverReport` per driver run,
also when the sandbox died before the driver could write one.
"""

from __future__ import annotations

import base64
import json

from pydantic import Field

from taskloom.models import Frozen
from taskloom.sandbox.driver import RESULT_MARKER
from taskloom.sandbox.trial import (
    ArtifactEntry,
    CommandResult,
    EnvironmentSpec,
    Leak,
    Phase,
    PhaseResult,
    SetupResult,
    StepResult,
    TrialPlan,
)

ARTIFACTS_DIR = "/logs/artifacts"  # Harbor's convention: always carried to the verifier


class DriverReport(Frozen):
    """What one run of the in-sandbox driver reports: setup, the phases it ran, leaks."""

    setup: SetupResult = Field(description="Outcome of the setup steps this run did "
                               "(ok, and nothing run, when it was given none).")
    phases: tuple[PhaseResult, ...] = Field(default=(), description="The phases it ran, "
                                            "in order.")
    not_run: tuple[str, ...] = Field(default=(), description="Phases it did not run because "
                                     "the state after the last one could not be reset in "
                                     "place; they need a new sandbox (and so do the tests of "
                                     "a last phase whose result carries artifacts).")
    dirty: str | None = Field(default=None, description="Why the state could not be reset "
                              "(None when every phase ran).")
    leaks: tuple[Leak, ...] = Field(default=(), description="Test or solution files found in "
                                    "the set-up environment (when asked to scan).")


def driver_plan(plan: TrialPlan, phases: list[Phase], *, setup: bool = True,
                scan_leaks: bool, fresh_since: str | None = None,
                spec: EnvironmentSpec | None = None) -> dict:
    """plan.json for one driver run: setup steps and/or phases.

    Args:
        plan: The trial.
        phases: The phases this driver run executes (a subset after a fallback).
        setup: Emulate the environment's setup steps first.
        scan_leaks: Look for test/solution files in the environment.
        fresh_since: A path whose ctime marks "created by setup" (None: the driver's own
            files).
        spec: Environment override (defaults to the plan's).
    """
    spec = spec or plan.environment
    keys = {phase.solution for phase in phases if phase.solution in plan.solutions}
    keys |= {f"{key}@{step.name}" for key in keys for step in plan.steps
             if f"{key}@{step.name}" in plan.solutions}
    document = {
        "setup": [_step(step) for step in spec.steps] if setup else [],
        "setup_timeout": spec.build_timeout_sec,
        "env": spec.env,
        "workdir": spec.workdir or "/",
        "agent_user": plan.agent_user or spec.user,
        "verifier_user": plan.verifier_user or spec.user,
        "solution_env": plan.solution_env,
        "verifier_env": plan.verifier_env,
        "tests": _files(plan.tests) if phases else [],
        "solutions": {key: _files(plan.solutions[key]) for key in sorted(keys)},
        "phases": [{"name": p.name, "solution": p.solution, "tests_timeout": p.tests_timeout,
                    "first_failure": p.first_failure,
                    "carried": None if p.carried is None else _artifacts(p.carried)}
                   for p in phases],
        "separate": plan.separate_verifier,
        "artifacts": [*plan.artifacts, ARTIFACTS_DIR] if plan.separate_verifier else [],
        "solution_timeout": plan.solution_timeout,
        "tests_timeout": plan.tests_timeout,
        "log_limit": plan.log_limit,
        "leak_fingerprints": [f.model_dump() for f in plan.leak_fingerprints]
        if scan_leaks else [],
        "probe_ctime": True,
        "steps": [{"name": step.name, "tests": _files(step.tests),
                   "workdir": _files(step.workdir), "thresholds": step.thresholds,
                   "solution_timeout": step.solution_timeout,
                   "tests_timeout": step.tests_timeout, "verifier_env": step.verifier_env,
                   "agent_user": step.agent_user or plan.agent_user or spec.user,
                   "verifier_user": step.verifier_user or plan.verifier_user or spec.user}
                  for step in plan.steps] if phases else [],
        "reward_strategy": plan.reward_strategy,
    }
    if fresh_since:
        document["fresh_since"] = fresh_since
    return document


def _files(files) -> list[dict]:
    return [{"path": f.path, "mode": f.mode, "data": base64.b64encode(f.content).decode()}
            for f in files]


def _artifacts(entries) -> list[dict]:
    return [{"path": e.path, "kind": e.kind, "mode": e.mode, "mtime": e.mtime,
             "artifact": e.artifact, "data": base64.b64encode(e.content).decode()}
            for e in entries]


def _carried(data: list[dict] | None) -> tuple[ArtifactEntry, ...] | None:
    if data is None:
        return None
    return tuple(ArtifactEntry(path=e["path"], kind=e["kind"], mode=e["mode"],
                               mtime=e["mtime"], artifact=e["artifact"],
                               content=base64.b64decode(e["data"])) for e in data)


def _step(step) -> dict:
    data = step.model_dump(mode="python")
    data["argv"] = list(step.argv)
    data["sources"] = [{"name": s.name, "dir": s.is_dir, "files": _files(s.files)}
                       for s in step.sources]
    return data


def _command(data: dict | None) -> CommandResult | None:
    if data is None:
        return None
    return CommandResult(exit_code=data["exit_code"], timed_out=data["timed_out"],
                         seconds=data["seconds"], cpu_seconds=data.get("cpu_seconds", 0.0),
                         log=data["log"])


def _steps(data: list[dict] | None) -> tuple[StepResult, ...] | None:
    if data is None:
        return None
    return tuple(StepResult(name=s["name"], setup=_command(s["setup"]),
                            solution=_command(s["solution"]), tests=_command(s["tests"]),
                            rewards=s["rewards"], reward_error=s["reward_error"])
                 for s in data)


def parse_driver_output(data: dict) -> DriverReport:
    """The driver's JSON report (what follows `RESULT_MARKER` in its output) as a model."""
    raw_setup = data["setup"]
    setup = SetupResult(ok=raw_setup["ok"], step=raw_setup.get("step"),
                        command=None if raw_setup["ok"] else _command(raw_setup),
                        seconds=raw_setup["seconds"], log=raw_setup["log"])
    phases = tuple(PhaseResult(name=p["name"], solution=_command(p["solution"]),
                               tests=_command(p["tests"]), reward=p["reward"],
                               rewards=p.get("rewards"), reward_error=p["reward_error"],
                               carried=_carried(p.get("carried")), steps=_steps(p.get("steps")))
                   for p in data["phases"])
    return DriverReport(setup=setup, phases=phases, not_run=tuple(data["not_run"]),
                        dirty=data["dirty"],
                        leaks=tuple(Leak(**leak) for leak in data["leaks"]))


def sandbox_died(why: str, logs: str, *, timed_out: bool) -> DriverReport:
    """The report of a driver run whose sandbox died: setup failed, with the reason.

    Args:
        why: What happened, completing "the sandbox ...": "ran out of memory".
        logs: The sandbox's output (its tail is kept).
        timed_out: The host killed the sandbox at its deadline (not for memory).
    """
    command = CommandResult(exit_code=-9, timed_out=timed_out, seconds=0.0,
                            log=f"the sandbox {why}\n{logs[-4000:]}")
    return DriverReport(setup=SetupResult(ok=False, step=None, command=command,
                                          log=command.log))


def phase_died(phase: str, why: str, logs: str, *, timed_out: bool,
               seconds: float) -> DriverReport:
    """The report of a driver run without setup whose sandbox died during its one phase.

    Setup ran in an earlier sandbox (the bwrap runtime's layered path), so the death is
    that phase's failure, with no reward, not a failed setup.

    Args:
        phase: The phase's name.
        why: What happened, completing "the sandbox ...".
        logs: The sandbox's output (its tail is kept).
        timed_out: The host killed the sandbox at its deadline (not for memory).
        seconds: How long the phase was given.
    """
    log = f"the sandbox {why}\n{logs[-4000:]}"
    return DriverReport(setup=SetupResult(ok=True), phases=(PhaseResult(
        name=phase, reward_error=f"the sandbox {why} before the tests finished",
        tests=CommandResult(exit_code=-9, timed_out=timed_out, seconds=seconds, log=log)),))


def read_report(output: str, *, timed_out: bool, out_of_memory: bool,
                phase: str | None = None, seconds: float = 0.0) -> DriverReport | None:
    """What one driver run reports, read from its sandbox's output.

    Args:
        output: The sandbox's stdout and stderr; the driver writes its report last.
        timed_out: The host killed the sandbox at its overall deadline.
        out_of_memory: The kernel killed a process of the sandbox for want of memory.
        phase: The one phase of a run without setup: a sandbox that died fails that phase
            (`phase_died`) instead of the setup (`sandbox_died`).
        seconds: How long that phase was given.

    Returns:
        The driver's report, or that of a sandbox that died (deadline or memory). None when
        the driver exited without a report although its sandbox did not die: the driver
        itself failed, which the caller raises as an infrastructure error.
    """
    _, marker, tail = output.rpartition(RESULT_MARKER)
    if marker:
        return parse_driver_output(json.loads(tail))
    if not (timed_out or out_of_memory):
        return None
    why = "ran past its overall deadline" if timed_out else "ran out of memory"
    if phase is None:
        return sandbox_died(why, output, timed_out=timed_out)
    return phase_died(phase, why, output, timed_out=timed_out, seconds=seconds)
