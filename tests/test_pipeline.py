"""The batch pipeline: a real run, a SIGKILL mid-run and a resume, stage-level caching, the
DuckDB store answering plain SQL, and config errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from taskloom.config import load_run_config
from taskloom.errors import ConfigError, InfrastructureError
from taskloom.pipeline.runner import Runner, ctrl_c_between_steps
from taskloom.pipeline.store import RunStore

TASKLOOM = [sys.executable, "-m", "taskloom.cli"]


def folder_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def run_generate(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TASKLOOM, "generate", "--count", "6", "--seed", "3", "--out",
                           str(out), "-w", "2", *extra], capture_output=True, text=True,
                          timeout=600)


def exported(out: Path) -> int:
    tasks = out / "tasks"
    return sum(1 for p in tasks.iterdir() if (p / "task.toml").exists()) if tasks.exists() else 0


@pytest.mark.docker
@pytest.mark.slow
def test_sigkill_then_resume_equals_uninterrupted_run(tmp_path):
    reference = tmp_path / "reference"
    done = run_generate(reference)
    assert done.returncode == 0, done.stdout + done.stderr
    assert exported(reference) == 6

    # One worker exports one task at a time (two finish validating together and are
    # exported in one burst): the kill lands mid-run. The dataset does not depend on it.
    killed = tmp_path / "killed"
    process = subprocess.Popen([*TASKLOOM, "generate", "--count", "6", "--seed", "3", "--out",
                                str(killed), "-w", "1"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and exported(killed) < 2:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert 2 <= exported(killed) < 6, "the run should be killed mid-way"

    resumed = run_generate(killed, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    reference_tasks = folder_bytes(reference / "tasks")
    assert folder_bytes(killed / "tasks") == reference_tasks
    with RunStore(killed / "run.duckdb", read_only=True) as store:
        items = store.query("SELECT item, count(*) FROM tasks GROUP BY item HAVING count(*) > 1")
        assert items == []  # no duplicates
        indices = [row[0] for row in store.query("SELECT item FROM tasks ORDER BY item")]
        events = [row[0] for row in store.query("SELECT event FROM events ORDER BY happened")]
    assert len(indices) == 6
    assert events[0] == "started" and "resumed" in events and events[-1] == "finished"


@pytest.mark.docker
def test_resume_reuses_finished_work_and_reruns_changed_stages(tmp_path):
    out = tmp_path / "run"
    config = load_run_config(None, ["count=3", "seed=5", "workers=2"])
    first = Runner(config, out).run()
    assert first.exported == 3

    def results() -> dict[str, tuple[str, int, float]]:
        with RunStore(out / "run.duckdb", read_only=True) as store:
            rows = store.query("SELECT key, stage, item, created FROM results")
        return {key: (stage, item, created) for key, stage, item, created in rows}

    before = results()
    again = Runner(config, out, resume=True).run()
    assert again.exported == 3
    assert results() == before  # nothing recomputed, nothing added

    changed = load_run_config(None, ["count=3", "seed=5", "workers=2",
                                     "validation.repeats=3"])
    Runner(changed, out, resume=True).run()
    after = results()
    for key, (stage, item, created) in before.items():
        if stage in ("plan", "generate"):
            assert after[key] == (stage, item, created), f"{stage} of item {item} re-ran"
    validated_before = {item for stage, item, _ in before.values() if stage == "validate"}
    new_validations = {item for key, (stage, item, _) in after.items()
                       if stage == "validate" and key not in before}
    assert validated_before & new_validations  # the changed stage ran again


@pytest.mark.docker
def test_store_answers_plain_sql(tmp_path):
    out = tmp_path / "run"
    Runner(load_run_config(None, ["count=2", "seed=9"]), out).run()
    db = duckdb.connect(str(out / "run.duckdb"), read_only=True)
    stages = [row[0] for row in db.execute("SELECT stage FROM funnel ORDER BY position")
              .fetchall()]
    assert stages == ["plan", "generate", "validate", "refine", "filter", "export", "verified"]
    checks = db.execute("SELECT DISTINCT \"check\" FROM verdicts ORDER BY 1").fetchall()
    assert ("oracle",) in checks and ("nop",) in checks
    skills = db.execute("SELECT skills FROM tasks").fetchall()
    assert all(json.loads(row[0]) for row in skills)
    config = json.loads(db.execute("SELECT config FROM run").fetchone()[0])
    assert config["seed"] == 9


@pytest.mark.docker
def test_runs_list_and_show(tmp_path):
    out = tmp_path / "runs" / "small"
    Runner(load_run_config(None, ["count=1", "seed=2"]), out).run()
    listing = subprocess.run([*TASKLOOM, "runs", "list", "--root", str(tmp_path / "runs")],
                             capture_output=True, text=True)
    assert "finished" in listing.stdout and "small" in listing.stdout
    shown = subprocess.run([*TASKLOOM, "runs", "show", str(out)], capture_output=True,
                           text=True)
    assert "funnel" in shown.stdout and "verified" in shown.stdout


@pytest.mark.docker
def test_existing_run_needs_resume(tmp_path):
    out = tmp_path / "run"
    Runner(load_run_config(None, ["count=1", "seed=4"]), out).run()
    done = run_generate(out)
    assert done.returncode == 2
    assert "--resume" in done.stderr


@pytest.mark.docker
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    out = tmp_path / "run"
    process = subprocess.Popen([*TASKLOOM, "generate", "--count", "30", "--seed", "1",
                                "--out", str(out)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and exported(out) < 1:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130
    assert "--resume --out" in stderr
    with RunStore(out / "run.duckdb", read_only=True) as store:
        assert store.run().status == "interrupted"
    leftovers = subprocess.run(["docker", "ps", "-aq", "--filter", "label=taskloom.sandbox"],
                               capture_output=True, text=True).stdout.split()
    assert not [c for c in leftovers if _owned_by(c, process.pid)]


def test_first_ctrl_c_waits_for_a_step_boundary_even_inside_a_duckdb_query():
    """A Ctrl-C inside a DuckDB query became "RuntimeError: Query interrupted" (exit 1)."""
    db = duckdb.connect()
    with ctrl_c_between_steps() as ctrl_c:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs between bytecodes
        assert db.execute("SELECT count(*) FROM range(1000)").fetchone() == (1000,)
        assert ctrl_c.is_set()
        with pytest.raises(KeyboardInterrupt):  # the second one stops at once
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _owned_by(container: str, pid: int) -> bool:
    label = subprocess.run(["docker", "inspect", "-f",
                            "{{index .Config.Labels \"taskloom.owner\"}}", container],
                           capture_output=True, text=True).stdout.strip()
    return label.endswith(f":{pid}")


def test_config_errors_name_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"validation\.repets"):
        load_run_config(None, ["validation.repets=3"])
    bad = tmp_path / "run.toml"
    bad.write_text("count = 'many'\n")
    with pytest.raises(ConfigError) as caught:
        load_run_config(bad)
    assert str(bad) in str(caught.value) and "count" in str(caught.value)


@pytest.mark.docker
def test_unreachable_engine_stops_the_run_instead_of_erroring_every_item(tmp_path,
                                                                        monkeypatch):
    """Plans keep succeeding while the sandbox is down: that must not hide the outage."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    out = tmp_path / "run"
    with pytest.raises(InfrastructureError, match="in a row at validate"):
        Runner(load_run_config(None, ["count=20", "seed=5", "workers=2"]), out).run()
    with RunStore(out / "run.duckdb", read_only=True) as store:
        errors = store.query("SELECT count(*) FROM items WHERE status = 'error'")[0][0]
        assert store.run().status == "failed"
    assert 5 <= errors < 20


@pytest.mark.docker
@pytest.mark.slow
def test_readme_command_starts_with_resume_and_repeats_without_new_work(tmp_path):
    """`generate --dedup --out DIR --resume`: starts a run when none exists, and the same
    command again reuses every stored result (the README's main command is repeatable)."""
    out = tmp_path / "run"
    first = run_generate(out, "--dedup", "--resume")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no run in" in first.stderr
    with RunStore(out / "run.duckdb", read_only=True) as store:
        assert store.run().config["diversity"]["enabled"] is True
        results = store.query("SELECT count(*) FROM results")[0][0]
        embedded = store.query("SELECT count(*) FROM embeddings")[0][0]
    assert embedded >= 6
    before = folder_bytes(out / "tasks")
    again = run_generate(out, "--dedup", "--resume")
    assert again.returncode == 0, again.stdout + again.stderr
    with RunStore(out / "run.duckdb", read_only=True) as store:
        assert store.query("SELECT count(*) FROM results")[0][0] == results
        assert store.query("SELECT count(*) FROM embeddings")[0][0] == embedded
        events = [row[0] for row in store.query("SELECT event FROM events ORDER BY happened")]
    assert events.count("resumed") == 1
    assert folder_bytes(out / "tasks") == before


def test_large_payloads_live_compressed_beside_the_store_and_read_back(tmp_path):
    """A draft over 4 KB goes zlib-compressed into run.payloads (inside DuckDB, checkpoints
    rewrote such rows over and over and run memory grew with the store); small payloads
    stay plain JSON in SQL. Bytes lost with the machine read as absent: the stage reruns."""
    import duckdb

    from taskloom.pipeline.payloads import PAYLOAD_INLINE_BYTES

    big = json.dumps({"files": ["line of a data file\n" * 50_000]})
    small = json.dumps({"path": ["csv.sort_rows"]})
    assert len(big) > PAYLOAD_INLINE_BYTES > len(small)
    with RunStore(tmp_path / "run.duckdb") as store, store.transaction():
        for key, payload in (("big", big), ("small", small), ("big2", big + " ")):
            store.put_result(key=key, stage="generate", version="1", item=0, round_=0,
                             status="ok", reason=None, payload=payload, seconds=0.1)
    with RunStore(tmp_path / "run.duckdb", read_only=True) as store:
        assert store.result("big").payload == json.loads(big)
        assert store.result("big2").payload == json.loads(big)
        assert store.result("small").payload == json.loads(small)
    rows = {key: (payload, at, size) for key, payload, at, size in duckdb.connect(
        str(tmp_path / "run.duckdb"), read_only=True).execute(
        "SELECT key, payload, payload_at, payload_bytes FROM results").fetchall()}
    assert rows["small"] == (small, None, None)
    assert rows["big"][0] is None and rows["big"][2] < len(big) / 100
    payloads = tmp_path / "run.payloads"
    assert payloads.stat().st_size == rows["big"][2] + rows["big2"][2]

    with payloads.open("r+b") as damaged:  # the second draft's bytes never reached disk
        damaged.truncate(rows["big2"][1] + 3)
    with RunStore(tmp_path / "run.duckdb") as store:
        assert store.result("big2") is None
        assert store.result("big").payload == json.loads(big)
