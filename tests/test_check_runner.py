"""The check runner every generated task's test.sh starts (no pytest), in real sandboxes.

Its report is what a user (and the refine loop, and the alternatives check) reads when a
check fails: the check's lines, the values its names held, and pytest's `FAILED` line.
"""

from __future__ import annotations

import pytest
from taskfactory import make_task

pytestmark = pytest.mark.docker
WRONG_SOLVE = "#!/bin/bash\nprintf 'hello\\n' > /app/out.txt\n"
CHECKS = '''from pathlib import Path

EXPECTED = "HELLO\\nWORLD\\n"


def _read():
    return Path("/app/out.txt").read_text()


def test_output_exists():
    assert Path("/app/out.txt").exists()


def test_output_is_uppercased():
    text = _read()
    assert text == EXPECTED, "not uppercased"
'''


def oracle(report):
    return next(v for v in report.verdicts if v.check == "oracle")


def test_a_failing_check_is_reported_with_its_line_and_values(tmp_path, validate):
    report = validate(make_task(tmp_path, "wrong", solve=WRONG_SOLVE, test_py=CHECKS),
                      checks=["oracle"])
    log = oracle(report).log
    assert not oracle(report).passed
    assert "FAILED test_outputs.py::test_output_is_uppercased - AssertionError: not " \
           "uppercased" in log
    assert "test_outputs.py:16: in test_output_is_uppercased" in log
    assert "assert text == EXPECTED" in log and "text = 'hello\\n'" in log
    assert "1 failed, 1 passed" in log


def test_the_checks_pass_without_pytest(tmp_path, validate):
    report = validate(make_task(tmp_path, "right", test_py=CHECKS))
    assert report.accepted, [(v.check, v.log[-600:]) for v in report.verdicts]


@pytest.mark.parametrize(("checks", "error"), [
    ("def test_fixture(tmp_path):\n    assert tmp_path\n",
     "ERROR test_outputs.py::test_fixture - TypeError: a check takes no arguments"),
    ("class TestOutput:\n    def test_it(self):\n        assert True\n",
     "ERROR test_outputs.py::TestOutput - TypeError: checks are top-level functions"),
    ("import pytest\n\n\ndef test_it():\n    assert True\n",
     "ERROR test_outputs.py - ModuleNotFoundError: No module named 'pytest'"),
    ("EXPECTED = 1\n", "no checks ran"),
])
def test_what_the_runner_cannot_run_earns_nothing(tmp_path, validate, checks, error):
    """Never a silent pass: a check needing pytest is an error, and no checks is reward 0."""
    report = validate(make_task(tmp_path, "pytest-only", test_py=checks), checks=["oracle"])
    assert not oracle(report).passed
    assert error in oracle(report).log


def test_the_alternatives_check_names_the_failed_checks(tmp_path, validate):
    alternative = {"solution/alternatives/lower.sh": WRONG_SOLVE}
    folder = make_task(tmp_path, "alt", test_py=CHECKS)
    for path, content in alternative.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(content)
    report = validate(folder, checks=["alternatives"])
    verdict = next(v for v in report.verdicts if v.check == "alternatives")
    assert not verdict.passed and "test_output_is_uppercased" in verdict.details


def test_a_run_meant_to_earn_nothing_stops_at_the_first_failing_check(runtime_name, request):
    """Nop, mutant and probe phases set FIRST_FAILURE_ENV: the same reward, fewer checks run
    (a mutant's later checks, a scan of the whole system, were most of its cost)."""
    from taskloom.generators.verifier import verifier_files
    from taskloom.models import TaskFile
    from taskloom.sandbox.base_image import BASE_IMAGE
    from taskloom.sandbox.trial import EnvironmentSpec, Phase, SetupStep, TrialPlan

    runtime = request.getfixturevalue(f"{runtime_name}_runtime")
    checks = CHECKS + "\n\ndef test_output_has_two_lines():\n    assert _read().count('\\n') == 2\n"
    solutions = {"wrong": "#!/bin/bash\nprintf 'hello\\nworld\\n' > /app/out.txt\n",
                 "right": "#!/bin/bash\nprintf 'HELLO\\nWORLD\\n' > /app/out.txt\n"}
    plan = TrialPlan(
        environment=EnvironmentSpec(image=BASE_IMAGE, steps=(
            SetupStep(op="run", argv=("mkdir", "-p", "/app")),)),
        tests=verifier_files(checks),
        solutions={key: (TaskFile(path="solve.sh", content=script.encode(), mode=0o755),)
                   for key, script in solutions.items()},
        phases=(Phase(name="whole", solution="wrong"),
                Phase(name="first", solution="wrong", first_failure=True),
                Phase(name="passing", solution="right", first_failure=True)),
        solution_timeout=30.0, tests_timeout=60.0)
    whole, first, passing = runtime.run(plan).phases
    assert (whole.reward, first.reward, passing.reward) == (0.0, 0.0, 1.0)
    assert "1 failed, 2 passed" in whole.tests.log, whole.tests.log
    assert "stopped at the first failure (TASKLOOM_FIRST_FAILURE=1): 1 checks not run" \
        in first.tests.log and "1 failed, 1 passed" in first.tests.log, first.tests.log
    assert "3 passed" in passing.tests.log and "stopped" not in passing.tests.log
