"""A wrong solution must earn nothing: the solution/mutants/*.sh a task ships (each ignoring
one rule the instruction states) run in the real sandbox and must get reward 0."""

from __future__ import annotations

from taskfactory import make_task

from taskloom.harbor import read_task_folder
from taskloom.models import ReasonCode, Task
from taskloom.validators.mutations import mutants

INSTRUCTION = "Write each distinct line of /app/data.txt to /app/out.txt once, in any order.\n"
DATA = {"data.txt": "alpha\nbeta\nalpha\n"}
SOLVE = "#!/bin/bash\nset -e\n# taskloom:step 1 dedupe\nsort -u /app/data.txt > /app/out.txt\n"
# Ignores "once": the data repeats a line, so this must earn nothing.
NO_DEDUPE = "#!/bin/bash\nset -e\ncp /app/data.txt /app/out.txt\n"
# Compares sets: a repeated line is invisible to it.
WEAK_TEST = '''from pathlib import Path


def test_out_holds_the_distinct_lines():
    assert set(Path("/app/out.txt").read_text().split()) == {"alpha", "beta"}
'''
FAIR_TEST = '''from pathlib import Path


def test_out_holds_the_distinct_lines():
    assert sorted(Path("/app/out.txt").read_text().split()) == ["alpha", "beta"]
'''


def dedupe_task(tmp_path, test_py: str):
    folder = make_task(tmp_path, "dedupe", instruction=INSTRUCTION, environment=DATA,
                       solve=SOLVE, test_py=test_py)
    mutant = folder / "solution" / "mutants" / "no-dedupe.sh"
    mutant.parent.mkdir()
    mutant.write_text(NO_DEDUPE)
    mutant.chmod(0o755)
    return folder


def test_a_mutant_the_tests_let_pass_makes_the_tests_weak(tmp_path, validate):
    report = validate(dedupe_task(tmp_path, WEAK_TEST), checks=("mutations",))
    (verdict,) = report.verdicts[-1:]
    assert verdict.check == "mutations" and not verdict.passed, verdict
    assert verdict.reason == ReasonCode.WEAK_TESTS
    assert "solution/mutants/no-dedupe.sh" in verdict.details
    assert "[mutant-no-dedupe]" in verdict.log


def test_a_mutant_the_tests_reject_passes_the_check(tmp_path, validate):
    report = validate(dedupe_task(tmp_path, FAIR_TEST))
    assert report.accepted, report.verdicts
    (verdict,) = [v for v in report.verdicts if v.check == "mutations"]
    assert verdict.details == ("1 wrong solution(s) (0 with a step removed, 1 ignoring a "
                               "stated rule) earn reward 0")


def test_mutant_phases_are_the_shipped_scripts_and_the_removed_steps(tmp_path):
    task: Task = read_task_folder(dedupe_task(tmp_path, FAIR_TEST))
    assert mutants(task) == {"mutant-no-dedupe": NO_DEDUPE.encode()}  # one step: no step mutant
    two_steps = SOLVE + "# taskloom:step 2 count\nwc -l < /app/out.txt > /app/count.txt\n"
    solve = task.file("solution", "solve.sh").model_copy(update={"content": two_steps.encode()})
    task = task.model_copy(update={"solution": tuple(
        solve if f.path == "solve.sh" else f for f in task.solution)})
    assert list(mutants(task)) == ["mutant-1", "mutant-2", "mutant-no-dedupe"]
