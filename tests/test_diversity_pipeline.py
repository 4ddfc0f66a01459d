"""The corpus filter and coverage steering inside real runs (Docker validation, the real
embedding model, DuckDB run stores): steered plans use exactly the frontier's coverage,
near-duplicates forced by a threshold are dropped with verdicts and store rows, a resumed
run with the filter turned on equals a fresh run, and `--reference` decontaminates."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from taskloom.config import load_run_config
from taskloom.embedding import embedding_text, load_embedder
from taskloom.harbor import read_task_folder
from taskloom.outputs.run import load_run, run_metrics
from taskloom.pipeline import stages
from taskloom.pipeline.runner import Runner
from taskloom.pipeline.store import RunStore
from taskloom.skill_graph.steering import CoverageTracker

pytestmark = pytest.mark.docker
TASKLOOM = [sys.executable, "-m", "taskloom.cli"]
BASE = ["count=4", "seed=21", "workers=2", "diversity.steering_lag=2"]


def folder_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def query(out: Path, sql: str, params: list | None = None) -> list[tuple]:
    with RunStore(out / "run.duckdb", read_only=True) as store:
        return store.query(sql, params)


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    """A steered run (lag 2) without the near-duplicate filter."""
    out = tmp_path_factory.mktemp("plain") / "run"
    summary = Runner(load_run_config(None, BASE), out).run()
    assert summary.exported == 4
    return out


def test_steered_plans_use_the_coverage_of_the_finalized_frontier(plain_run):
    config = load_run_config(None, BASE)
    keys = stages.StageKeys(config)
    exported = query(plain_run, "SELECT item, scenario, skills FROM tasks ORDER BY item")
    plans = query(plain_run, "SELECT item, key FROM results WHERE stage = 'plan'")
    assert len(plans) >= 5
    steered = 0
    for item, key in plans:
        tracker = CoverageTracker()
        for done, scenario, skills in exported:
            if done < item - 2:
                tracker.add(json.loads(skills), scenario)
        assert key == keys.plan(item, tracker.snapshot(max(0, item - 2))), item
        steered += tracker.tasks > 0
    assert steered >= 2  # later items really were planned from a non-empty snapshot


def test_forced_near_duplicates_are_dropped_and_a_resume_equals_a_fresh_run(plain_run,
                                                                           tmp_path):
    embedder = load_embedder()
    tasks = query(plain_run, "SELECT item, task_id, folder FROM tasks ORDER BY item")
    vectors = {item: embedder.embed([embedding_text(read_task_folder(plain_run / folder))])[0]
               for item, _, folder in tasks}
    (first, second), best = max(
        (((a, b), float(vectors[a] @ vectors[b]))
         for a, b in itertools.combinations(sorted(vectors), 2)), key=lambda pair: pair[1])
    threshold = round(best - 1e-4, 6)  # exactly the most similar pair collides
    names = {item: task_id for item, task_id, _ in tasks}
    dropped_folder = plain_run / dict((i, f) for i, _, f in tasks)[second]

    resumed = tmp_path / "resumed"
    shutil.copytree(plain_run, resumed)
    dropped_folder = resumed / dropped_folder.relative_to(plain_run)
    assert dropped_folder.is_dir()
    filtered = load_run_config(None, [*BASE, "diversity.enabled=true",
                                      f"diversity.threshold={threshold}"])
    summary = Runner(filtered, resumed, resume=True).run()
    assert summary.exported == 4
    metrics = run_metrics(load_run(resumed))
    assert metrics.near_duplicates >= 1
    assert metrics.near_duplicate_rate == pytest.approx(
        metrics.near_duplicates / (4 + metrics.near_duplicates))

    status, reason = query(resumed, "SELECT status, reason FROM items WHERE item = ?",
                           [second])[0]
    assert status == "duplicate"
    assert reason.startswith(f"near-duplicate of task {names[first]} (item {first}): cosine")
    verdicts = query(resumed, 'SELECT item, passed, reason, details FROM verdicts WHERE '
                              '"check" = \'duplicate\' ORDER BY item')
    duplicates = query(resumed, "SELECT item, reason FROM items WHERE status = 'duplicate' "
                                "ORDER BY item")
    assert [(i, False, "duplicate", r) for i, r in duplicates] == verdicts
    assert not dropped_folder.exists()  # the earlier run's export of it is undone
    exported = query(resumed, "SELECT item, folder FROM tasks ORDER BY item")
    assert second not in {item for item, _ in exported} and len(exported) == 4
    on_disk = sorted(p.name for p in (resumed / "tasks").iterdir())
    assert on_disk == sorted(Path(folder).name for _, folder in exported)
    funnel = dict((s, (i, o)) for s, i, o in query(resumed, "SELECT stage, n_in, n_out FROM "
                                                             "funnel"))
    assert funnel["filter"] == (4 + len(duplicates), 4)

    # every drop names a kept task at or above the threshold; kept tasks are all below it
    stored = {f: np.asarray(v, dtype=np.float32) for f, v in query(
        resumed, "SELECT fingerprint, vector FROM embeddings")}
    fingerprints = dict(query(resumed, "SELECT item, fingerprint FROM items"))
    kept = [fingerprints[item] for item, _ in exported]
    assert all(float(stored[a] @ stored[b]) < threshold for a, b in
               itertools.combinations(kept, 2))
    for item, details in duplicates:
        named = int(details.split("(item ")[1].split(")")[0])
        assert named < item and named in {i for i, _ in exported}
        assert float(stored[fingerprints[item]] @ stored[fingerprints[named]]) >= threshold

    fresh = tmp_path / "fresh"  # the same config from scratch: the same dataset and drops
    Runner(filtered, fresh).run()
    assert folder_bytes(fresh / "tasks") == folder_bytes(resumed / "tasks")
    # (items past the last export are in flight when the run ends: timing decides those)
    every = ("SELECT item, status, reason, task_id FROM items WHERE item <= (SELECT "
             "max(item) FROM tasks) ORDER BY item")
    assert query(fresh, every) == query(resumed, every)
    assert query(fresh, 'SELECT item, details FROM verdicts WHERE "check" = \'duplicate\' '
                        "ORDER BY item") == [(i, d) for i, _, _, d in verdicts]

    before = query(resumed, "SELECT key, created FROM results ORDER BY key")
    made = query(resumed, "SELECT fingerprint, created FROM embeddings ORDER BY 1")
    Runner(filtered, resumed, resume=True).run()  # nothing new to compute
    assert query(resumed, "SELECT key, created FROM results ORDER BY key") == before
    assert query(resumed, "SELECT fingerprint, created FROM embeddings ORDER BY 1") == made
    assert query(resumed, every) == query(fresh, every)


def test_reference_folder_decontaminates_a_run(plain_run, tmp_path):
    early = query(plain_run, "SELECT item, task_id, folder FROM tasks WHERE item <= 2 "
                             "ORDER BY item")
    assert early, "plans of items 0-2 do not depend on coverage (lag 2): reuse one"
    item, task_id, folder = early[0]
    reference = tmp_path / "benchmark"
    shutil.copytree(plain_run / folder, reference / task_id)
    out = tmp_path / "run"
    done = subprocess.run([*TASKLOOM, "generate", "--count", "2", "--seed", "21", "--out",
                           str(out), "-w", "2", "--set", "diversity.steering_lag=2",
                           "--reference", str(reference)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "near-duplicate rate" in done.stdout
    status, reason = query(out, "SELECT status, reason FROM items WHERE item = ?", [item])[0]
    assert status == "duplicate"
    assert reason.startswith(f"too similar to reference task {task_id} ")
    assert "cosine 1.0000" in reason
    assert query(out, 'SELECT count(*) FROM verdicts WHERE "check" = \'duplicate\' AND '
                      "item = ?", [item]) == [(1,)]
    exported = query(out, "SELECT item, fingerprint FROM tasks")
    assert len(exported) == 2 and item not in {i for i, _ in exported}
    config = json.loads(query(out, "SELECT config FROM run")[0][0])
    assert config["diversity"]["reference"] == [str(reference.resolve())]
