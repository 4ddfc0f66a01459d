"""The same stage functions on a local Ray instance (validation asks for `sandbox` slots)."""

from __future__ import annotations

import pytest

from taskloom.config import load_run_config
from taskloom.pipeline.executors import make_executor
from taskloom.pipeline.runner import Runner
from taskloom.pipeline.store import RunStore


@pytest.mark.docker
def test_ray_executor_matches_local(tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'taskloom[ray]'")
    local = Runner(load_run_config(None, ["count=2", "seed=21"]), tmp_path / "local").run()
    on_ray = Runner(load_run_config(None, ["count=2", "seed=21", "executor=ray"]),
                    tmp_path / "ray").run()
    assert local.exported == on_ray.exported == 2

    def tasks(folder):
        with RunStore(folder / "run.duckdb", read_only=True) as store:
            return store.query("SELECT item, task_id, fingerprint FROM tasks ORDER BY item")

    assert tasks(tmp_path / "ray") == tasks(tmp_path / "local")


def test_a_local_ray_instance_is_reached_on_loopback_only():
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'taskloom[ray]'")
    executor = make_executor("ray", 2, "local")
    try:
        assert ray.get_runtime_context().gcs_address.startswith("127.0.0.2:")
        assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.2"}
    finally:
        executor.shutdown(cancel=False)
