"""The calibration stage of `generate` against real bwrap sandboxes and a real HTTP model
server: pass rates decide which tasks stay, the numbers reach the store, task.toml, the
export and the report, a band changed on resume re-decides without a request, and a
model server that is down makes errors that a resume finishes, never failures."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest
from llmservers import Reply, ScriptedServer, solution_steps

from taskloom.config import load_run_config
from taskloom.harbor import read_task_folder
from taskloom.outputs.export import export_run
from taskloom.outputs.report import write_report
from taskloom.pipeline.runner import Runner
from taskloom.pipeline.store import RunDirectory

pytestmark = pytest.mark.bwrap
RUN = ["count=3", "max_items=3", "seed=11", "workers=1", 'runtime="bwrap"',
       "llm.retries=0", "llm.timeout_sec=30"]


def calibrating(url: str, band: str = "[0.1, 0.9]", retries: int = 2) -> list[str]:
    return [*RUN, 'calibration.model="scripted"', f'calibration.base_url="{url}"',
            "calibration.k=2", f"calibration.band={band}", f"calibration.retries={retries}",
            "calibration.agent.max_turns=12"]


class Solver:
    """The agent's model: the reference solution step by step, on every attempt of the
    `easy` task and on the first attempt (the first seed seen) of every other one."""

    def __init__(self, tasks: dict[str, str], easy: str) -> None:
        self.steps = {instruction.strip(): solution_steps(script)
                      for instruction, script in tasks.items()}
        self.easy = easy.strip()
        self.first_seed: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> Reply:
        user = request["messages"][-1]["content"]
        found = re.search(r"^Task[^\n]*:\n(.*?)\n\nTurn (\d+) of", user, re.DOTALL)
        instruction, turn = found.group(1).strip(), int(found.group(2))
        with self.lock:
            first = self.first_seed.setdefault(instruction, request["seed"])
        planned = self.steps[instruction]
        if (instruction != self.easy and request["seed"] != first) or turn > len(planned):
            answer = {"thought": "done", "commands": [], "done": True}
        else:
            answer = {"thought": f"step {turn}", "commands": planned[turn - 1].splitlines(),
                      "done": False}
        return Reply(content=json.dumps(answer))


def uncalibrated_run(out: Path) -> dict[str, str]:
    """Run without calibration; the instruction -> solve.sh of the 3 tasks it exports."""
    summary = Runner(load_run_config(None, RUN), out).run()
    assert summary.exported == 3
    tasks = [read_task_folder(folder) for folder in sorted((out / "tasks").iterdir())]
    return {t.instruction: t.file("solution", "solve.sh").content.decode() for t in tasks}


def test_calibration_keeps_the_tasks_in_the_band_and_records_their_pass_rates(
        bwrap_rootfs, tmp_path):
    out = tmp_path / "run"
    solutions = uncalibrated_run(out)
    easy = sorted(solutions)[0]
    server = ScriptedServer([], respond=Solver(solutions, easy))
    try:
        summary = Runner(load_run_config(None, calibrating(server.base_url)), out,
                         resume=True).run()
        sent = len(server.requests)
        assert summary.exported == 2 and sent > 0
        with RunDirectory(out).open(read_only=True) as store:
            measured = store.calibrations()
            funnel = {row.stage: row for row in store.funnel()}
            statuses = {item.item: (item.status, item.reason) for item in store.items()}
        assert len(measured) == 3
        for row in measured:
            easy_one = read_task_folder(out / "tasks" / row.task_id).instruction \
                if row.kept else None
            assert easy_one != easy
            assert (row.calibration.k, row.calibration.passes, row.calibration.errors,
                    row.kept) == ((2, 1, 0, True) if row.kept else (2, 2, 0, False))
        dropped = next(row for row in measured if not row.kept)
        assert statuses[dropped.item] == ("out_of_band", "scripted passed 2 of 2 attempts "
                                          "(pass rate 1, band [0.1, 0.9])")
        assert not (out / "tasks" / dropped.task_id).exists()  # the earlier export is gone
        assert (funnel["calibrate"].n_in, funnel["calibrate"].n_out) == (3, 2)

        folders = sorted((out / "tasks").iterdir())
        assert len(folders) == 2
        for folder in folders:
            table = tomllib.loads((folder / "task.toml").read_text())["metadata"]
            assert {key: table["calibration"][key] for key in
                    ("model", "k", "passes", "errors", "pass_rate")} == {
                "model": "scripted", "k": 2, "passes": 1, "errors": 0, "pass_rate": 0.5}
            assert table["calibration"]["date"].startswith("20")

        export_run(out, "jsonl", tmp_path / "rows")
        rows = [json.loads(line) for line in
                (tmp_path / "rows" / "tasks.jsonl").read_text().splitlines()]
        assert [(r["calibration"]["passes"], r["calibration"]["k"]) for r in rows] == [
            (1, 2), (1, 2)]
        page = write_report(out).read_text()
        assert 'id="calibration"' in page and 'id="pass-by-level"' in page
        assert 'id="pass-by-skill"' in page and "3 accepted tasks attempted 2 times" in page
        shown = subprocess.run([sys.executable, "-m", "taskloom.cli", "runs", "show", str(out)],
                               capture_output=True, text=True, check=True).stdout
        assert ("calibration (scripted, k=2): 3 tasks measured, 2 in the band; attempts "
                "passed: 1/2: 2, 2/2: 1") in " ".join(shown.split())

        # Another band: re-decided from the stored pass rates, no request sent.
        summary = Runner(load_run_config(None, calibrating(server.base_url, "[0, 1]")), out,
                         resume=True).run()
        assert summary.exported == 3 and len(server.requests) == sent
    finally:
        server.close()


@pytest.mark.slow
def test_a_calibration_model_that_is_down_gives_errors_and_a_resume_finishes(
        bwrap_rootfs, tmp_path):
    out = tmp_path / "run"
    solutions = uncalibrated_run(out)
    server = ScriptedServer([], respond=Solver(solutions, sorted(solutions)[0]))
    url = server.base_url
    server.close()  # nothing answers on its port now
    summary = Runner(load_run_config(None, calibrating(url, retries=0)), out,
                     resume=True).run()
    assert summary.exported == 0
    with RunDirectory(out).open(read_only=True) as store:
        items = store.items()
        assert store.calibrations() == ()
    assert [(i.stage, i.status) for i in items] == [("calibrate", "error")] * 3
    assert "not scored" in items[0].reason and "ModelUnavailable" in items[0].reason
    assert not (out / "tasks").exists() or not list((out / "tasks").iterdir())

    server = ScriptedServer([], respond=Solver(solutions, sorted(solutions)[0]))
    try:
        summary = Runner(load_run_config(None, calibrating(server.base_url)), out,
                         resume=True).run()
        assert summary.exported == 2
    finally:
        server.close()
