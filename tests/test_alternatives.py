"""Other correct solutions must earn reward 1 too: the ones a task ships
(solution/alternatives/*.sh) and the ones `--alternatives DIR` supplies, in the real sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from taskfactory import make_task

from taskloom.harbor import read_task_folder
from taskloom.models import ReasonCode
from taskloom.validators.alternatives import alternatives
from taskloom.validators.phases import as_solution

TASKLOOM = [sys.executable, "-m", "taskloom.cli"]

# The instruction leaves the order open; the first test demands the reference's order.
INSTRUCTION = ("Write the lines of /app/data.txt to /app/out.txt in upper case. The order "
               "of the lines does not matter.\n")
ORDERED_TEST = '''from pathlib import Path


def test_out_holds_the_uppercased_lines():
    assert Path("/app/out.txt").read_text() == "HELLO\\nWORLD\\n"
'''
FAIR_TEST = '''from pathlib import Path


def test_out_holds_the_uppercased_lines():
    assert sorted(Path("/app/out.txt").read_text().splitlines()) == ["HELLO", "WORLD"]
'''
# Another tool and the other order the instruction allows.
REVERSED = ("#!/bin/bash\npython3 -c 'import sys; lines = open(\"/app/data.txt\").read()"
            ".split(); print(\"\\n\".join(w.upper() for w in reversed(lines)))' "
            "> /app/out.txt\n")


def with_alternative(folder: Path, script: str, name: str = "reversed.sh") -> Path:
    target = folder / "solution" / "alternatives" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(script)
    target.chmod(0o755)
    return folder


def test_alternatives_are_read_from_the_task_and_a_supplied_folder(tmp_path):
    task = read_task_folder(with_alternative(
        make_task(tmp_path, "t", instruction=INSTRUCTION), REVERSED))
    supplied = tmp_path / "more"
    (supplied / "t").mkdir(parents=True)
    (supplied / "everyone.sh").write_text("#!/bin/bash\ntrue\n")
    (supplied / "t" / "mine.sh").write_text("#!/bin/bash\ntrue\n")
    (supplied / "other-task").mkdir()
    (supplied / "other-task" / "theirs.sh").write_text("#!/bin/bash\ntrue\n")
    found = alternatives(task, str(supplied))
    assert list(found) == ["alternative-reversed", "alternative-supplied-everyone",
                           "alternative-supplied-mine"]
    folder = as_solution(task, found["alternative-reversed"].content)
    assert [f.path for f in folder] == ["solve.sh"]  # the others stay out of its /solution
    assert folder[0].content == REVERSED.encode() and folder[0].mode == 0o755
    assert alternatives(task, None).keys() == {"alternative-reversed"}


def test_an_alternative_the_tests_reject_is_over_specified(tmp_path, validate):
    folder = with_alternative(make_task(tmp_path, "ordered", instruction=INSTRUCTION,
                                        test_py=ORDERED_TEST), REVERSED)
    report = validate(folder)
    failed = {v.check: v for v in report.verdicts if not v.passed}
    assert set(failed) == {"alternatives"}, failed
    verdict = failed["alternatives"]
    assert verdict.reason == ReasonCode.OVER_SPECIFIED
    assert ("reversed.sh gets reward 0, rejected by "
            "test_outputs.py::test_out_holds_the_uppercased_lines") in verdict.details
    assert "WORLD" in verdict.log  # the log shows what the alternative wrote


def test_a_fair_test_accepts_every_alternative(tmp_path, validate):
    folder = with_alternative(make_task(tmp_path, "fair", instruction=INSTRUCTION,
                                        test_py=FAIR_TEST), REVERSED)
    with_alternative(folder, "#!/bin/bash\nawk '{ print toupper($0) }' /app/data.txt "
                             "> /app/out.txt\n", "awk.sh")
    report = validate(folder)
    assert report.accepted, report.verdicts
    (verdict,) = [v for v in report.verdicts if v.check == "alternatives"]
    assert verdict.details.startswith("2 alternative solution(s) (awk.sh, reversed.sh)")


@pytest.mark.docker
def test_validate_alternatives_option_supplies_solutions_to_any_task(tmp_path):
    make_task(tmp_path / "set", "ordered", instruction=INSTRUCTION, test_py=ORDERED_TEST)
    make_task(tmp_path / "set", "fair", instruction=INSTRUCTION, test_py=FAIR_TEST)
    supplied = tmp_path / "alternatives"
    supplied.mkdir()
    (supplied / "reversed.sh").write_text(REVERSED)
    report = tmp_path / "report.json"
    done = subprocess.run([*TASKLOOM, "validate", str(tmp_path / "set"), "--checks",
                           "alternatives", "--alternatives", str(supplied), "--report",
                           str(report)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(report.read_text())
    assert document["summary"]["reasons"] == {"over-specified": 1}
    by_task = {t["task"]: t for t in document["tasks"]}
    assert by_task["fair"]["accepted"] and not by_task["ordered"]["accepted"]
    assert "supplied-reversed.sh gets reward 0" in by_task["ordered"]["verdicts"][-1]["details"]

    missing = subprocess.run([*TASKLOOM, "validate", str(tmp_path / "set"), "--alternatives",
                              str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert missing.returncode == 2 and "nowhere" in missing.stderr
