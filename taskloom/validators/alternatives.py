"""alternatives: every other correct solution a task ships earns reward 1 too.

A task may ship, beside solution/solve.sh, other correct solutions as
`solution/alternatives/*.sh` (every generated task ships one that uses other tools and
another allowed order or format); `taskloom validate --alternatives DIR` adds more to any
task: `<DIR>/<task id>/*.sh`, or `<DIR>/*.sh` for every task. Each runs once from fresh
state like the oracle, as solve.sh with the rest of the solution folder beside it. One
that earns less than reward 1 means the tests demand more than the instruction states, or
allow less freedom than it gives: `over-specified`, naming the tests that rejected it.
"""

from __future__ import annotations

import re
from pathlib import Path

from taskloom.config import ValidationConfig
from taskloom.models import ReasonCode, Task, TaskFile, Verdict
from taskloom.sandbox.trial import Phase, PhaseResult
from taskloom.validators.phases import as_solution, phase_log, seconds, settled
from taskloom.validators.protocol import Evidence, TrialPart

PREFIX = "alternative"
# pytest's short summary (`-q` prints it by default): "FAILED test_outputs.py::test_x - ..."
FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+?)(?: - .*)?$", re.MULTILINE)


def alternatives(task: Task, folder: str | None) -> dict[str, TaskFile]:
    """Phase name -> script: the task's own alternatives, then those `folder` supplies.

    `folder` holds `<task id>/*.sh` (for that task) and `*.sh` (for every task); a
    supplied script is named `alternative-supplied-<stem>`. A multi-step task has none:
    its solution is one script per step.
    """
    if task.steps:
        return {}
    found = {_phase_name(alt.path): alt for alt in task.alternatives}
    if folder:
        root = Path(folder)
        for script in sorted([*root.glob("*.sh"), *(root / task.name).glob("*.sh")]):
            if script.is_file():
                found[_phase_name(f"supplied-{script.name}")] = TaskFile(
                    path=str(script), content=script.read_bytes(), mode=0o755)
    return found


def _phase_name(path: str) -> str:
    stem = path.rsplit("/", 1)[-1].removesuffix(".sh")
    return f"{PREFIX}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', stem)}"


def rejected_by(phase: PhaseResult) -> list[str]:
    """The tests that failed in a phase, as pytest's summary names them."""
    log = phase.tests.log if phase.tests else ""
    return list(dict.fromkeys(FAILED_TEST.findall(log)))


class AlternativesCheck:
    """Every shipped alternative solution earns the full reward."""

    name = "alternatives"
    reasons = (ReasonCode.OVER_SPECIFIED, ReasonCode.TIMEOUT, ReasonCode.VERIFIER)
    needs = ("build",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """One phase per alternative (`solution/alternatives/*.sh`, `config.alternatives`)."""
        solutions = {name: as_solution(task, alt.content)
                     for name, alt in alternatives(task, config.alternatives).items()}
        return TrialPart(phases=tuple(Phase(name=key, solution=key) for key in solutions),
                         solutions=solutions)

    def check(self, evidence: Evidence) -> Verdict | None:
        """`over-specified` when an alternative earns less than reward 1."""
        runs, failed = settled(self.name, evidence.trial, PREFIX)
        if failed or not runs:
            return failed
        spent = seconds(*runs)
        short = [run for run in runs if run.reward is None or run.reward < 1.0]
        if not short:
            shown = ", ".join(run.name.removeprefix(f"{PREFIX}-") + ".sh" for run in runs)
            return Verdict(check=self.name, passed=True, seconds=spent,
                           details=f"{len(runs)} alternative solution(s) ({shown}) earn "
                                   "reward 1 from fresh state")
        parts = []
        for run in short:
            tests = rejected_by(run)
            exit_note = ("" if run.solution is None or run.solution.exit_code == 0
                         else f"; the alternative itself exited {run.solution.exit_code}")
            parts.append(f"{run.name.removeprefix(f'{PREFIX}-')}.sh gets reward {run.reward:g}"
                         + (f", rejected by {', '.join(tests)}" if tests else "") + exit_note)
        return Verdict(check=self.name, passed=False, reason=ReasonCode.OVER_SPECIFIED,
                       details="another correct solution fails: " + "; ".join(parts)
                               + ". The tests demand more than the instruction states (or "
                                 "the alternative is wrong)",
                       log=phase_log(short[0]), seconds=spent)
