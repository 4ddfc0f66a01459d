"""`taskloom validate` and `taskloom doctor` as a user runs them, in a subprocess."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from taskfactory import make_task

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[1]
TASKLOOM = [sys.executable, "-m", "taskloom.cli"]


def sandboxes(owner_pid: int | None = None) -> list[str]:
    """Containers and images taskloom labelled (of one owner process when given)."""
    label = "label=taskloom.sandbox"
    listing = subprocess.run(["docker", "ps", "-aq", "--filter", label], capture_output=True,
                             text=True, check=True).stdout.split()
    images = subprocess.run(["docker", "images", "-q", "--filter", label],
                            capture_output=True, text=True, check=True).stdout.split()
    found = listing + images
    if owner_pid is None:
        return found
    owners = subprocess.run(["docker", "inspect", "-f", '{{index .Config.Labels '
                             '"taskloom.owner"}}', *found], capture_output=True,
                            text=True).stdout.split() if found else []
    return [item for item, owner in zip(found, owners, strict=False)
            if owner.endswith(f":{owner_pid}")]


def test_validate_reports_and_exit_codes(tmp_path):
    make_task(tmp_path / "set", "good")
    make_task(tmp_path / "set", "wrong", solve="#!/bin/bash\ntrue\n")
    report = tmp_path / "report.json"
    done = subprocess.run([*TASKLOOM, "validate", str(tmp_path / "set"), "--report",
                           str(report)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "1 accepted, 1 rejected of 2" in done.stdout
    document = json.loads(report.read_text())
    assert document["summary"] == {"tasks": 2, "accepted": 1, "rejected": 1,
                                   "reasons": {"oracle-fails": 1},
                                   "seconds": document["summary"]["seconds"]}
    by_task = {t["task"]: t for t in document["tasks"]}
    assert by_task["good"]["accepted"] is True
    checks = [v["check"] for v in by_task["wrong"]["verdicts"]]
    assert checks == ["structure", "build", "nop", "oracle", "tamper", "leakage"]
    oracle = by_task["wrong"]["verdicts"][3]
    assert oracle["reason"] == "oracle-fails" and oracle["log"]

    good_only = subprocess.run([*TASKLOOM, "validate", str(tmp_path / "set" / "good"),
                                "--report", str(report)], capture_output=True, text=True)
    assert good_only.returncode == 0, good_only.stderr


def test_validate_missing_path_is_a_clear_error(tmp_path):
    done = subprocess.run([*TASKLOOM, "validate", str(tmp_path / "nowhere")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "does not exist" in done.stderr and "fix:" in done.stderr


def test_ctrl_c_leaves_nothing_behind(tmp_path):
    for i in range(4):
        make_task(tmp_path / "set", f"hang-{i}", solve="#!/bin/bash\nsleep 600\n",
                  agent_timeout=300.0)
    process = subprocess.Popen([*TASKLOOM, "validate", str(tmp_path / "set"), "-w", "2",
                                "--report", str(tmp_path / "r.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(sandboxes(process.pid)) < 2:
        time.sleep(0.2)
    assert len(sandboxes(process.pid)) >= 2, "validation never started its sandboxes"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "interrupted" in stderr
    assert sandboxes(process.pid) == []


def test_doctor_reports_engine_and_image():
    from taskloom.doctor import run_checks

    checks = {check.component: check for check in run_checks()}
    for component in ("docker engine", "base image", "runtime: docker"):
        assert checks[component].status == "ok", checks[component]
    assert "taskloom/base:2" in checks["base image"].detail
    done = subprocess.run([*TASKLOOM, "doctor"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_doctor_says_when_the_base_image_is_not_built(monkeypatch):
    from taskloom.doctor import run_checks
    from taskloom.sandbox import base_image

    monkeypatch.setattr(base_image, "BASE_IMAGE", "taskloom/base:never-built")
    image = next(c for c in run_checks() if c.component == "base image")
    assert image.status != "ok" and "is not built" in image.detail
    assert "taskloom base-image build" in image.fix


def test_examples_are_accepted(tmp_path):
    done = subprocess.run([*TASKLOOM, "validate", str(ROOT / "examples" / "tasks"),
                           "--report", str(tmp_path / "r.json")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
