"""The host side of the in-sandbox driver: the plan.json it reads, and what it reports back.

Every runtime that runs `driver.py` (Docker, bubblewrap) builds its plan and parses its
output here, so the two speak exactly the same protocol.
"""

from __future__ import annotations

import base64

from taskloom.sandbox.trial import (
    CommandResult,
    EnvironmentSpec,
    Leak,
    Phase,
    PhaseResult,
    SetupResult,
    TrialPlan,
)


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
        "phases": [{"name": p.name, "solution": p.solution} for p in phases],
        "solution_timeout": plan.solution_timeout,
        "tests_timeout": plan.tests_timeout,
        "log_limit": plan.log_limit,
        "leak_fingerprints": [f.model_dump() for f in plan.leak_fingerprints]
        if scan_leaks else [],
        "probe_ctime": True,
    }
    if fresh_since:
        document["fresh_since"] = fresh_since
    return document


def _files(files) -> list[dict]:
    return [{"path": f.path, "mode": f.mode, "data": base64.b64encode(f.content).decode()}
            for f in files]


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
                         seconds=data["seconds"], log=data["log"])


def parse_driver_output(data: dict) -> dict:
    """The driver's JSON as models: setup, phases, not_run, dirty, leaks."""
    raw_setup = data["setup"]
    setup = SetupResult(ok=raw_setup["ok"], step=raw_setup.get("step"),
                        command=None if raw_setup["ok"] else _command(raw_setup),
                        seconds=raw_setup["seconds"], log=raw_setup["log"])
    phases = [PhaseResult(name=p["name"], solution=_command(p["solution"]),
                          tests=_command(p["tests"]), reward=p["reward"],
                          reward_error=p["reward_error"]) for p in data["phases"]]
    return {"setup": setup, "phases": phases, "not_run": data["not_run"],
            "dirty": data["dirty"], "leaks": tuple(Leak(**leak) for leak in data["leaks"])}


def sandbox_died(why: str, logs: str) -> dict:
    """The report of a driver run whose sandbox died: setup failed, with the reason."""
    command = CommandResult(exit_code=-9, timed_out="deadline" in why, seconds=0.0,
                            log=f"the sandbox {why}\n{logs[-4000:]}")
    return {"setup": SetupResult(ok=False, step=None, command=command, log=command.log),
            "phases": [], "not_run": [], "dirty": None, "leaks": ()}
