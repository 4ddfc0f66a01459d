"""Harbor itself (the pinned release) runs tasks in taskloom's bwrap environment plugin: no
Docker daemon, no network, and the rewards taskloom's validation proves.

Every task here is run as it is (no offline workaround: the plugin honours
`network_mode = "no-network"` itself): generated tasks in both verifier modes, a multi-step
task, the hand-written example, and a tamper probe that the hardened verifier withstands.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from harbor_env import harbor_dataset_rewards, harbor_exceptions, harbor_reward
from taskfactory import NAIVE_TEST_SH, make_multi_step_task, make_task

from taskloom.config import RunConfig
from taskloom.generators.backends import backend_for
from taskloom.harbor import read_task_folder, write_task_folder
from taskloom.validators.probes import probes_for

pytestmark = [pytest.mark.bwrap, pytest.mark.slow]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples/tasks/rotate-nginx-logs"
OFFLINE = 'network_mode = "no-network"\n'


def offline(folder: Path) -> Path:
    """Declare that the task needs no network (what taskloom's own tasks declare)."""
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]\n", f"[environment]\n{OFFLINE}"))
    return folder


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, bwrap_rootfs) -> Path:
    """Generated tasks (shared and separate verifier), a multi-step task and the example."""
    root = tmp_path_factory.mktemp("plugin") / "tasks"
    for seed, verifier in ((7, "shared"), (8, "separate")):
        backend = backend_for(RunConfig(seed=seed, verifier=verifier))
        draft = backend.generator.generate(backend.planner.plan(0))
        assert draft.task.config.verifier.separate == (verifier == "separate")
        write_task_folder(draft.task, root / draft.task.name)
    offline(make_multi_step_task(root, "steps", settings={"write": "min_reward = 1.0\n"}))
    shutil.copytree(EXAMPLE, root / EXAMPLE.name)
    return root


def test_harbor_oracle_earns_1_and_nop_0_on_every_task_in_the_plugin(dataset, tmp_path):
    oracle = harbor_dataset_rewards(dataset, "oracle", tmp_path / "jobs", plugin=True)
    nop = harbor_dataset_rewards(dataset, "nop", tmp_path / "jobs", plugin=True)
    assert harbor_exceptions(tmp_path / "jobs", "oracle") == []
    assert len(oracle) == len(nop) == 4, (oracle, nop)
    assert set(oracle.values()) == {1.0}, oracle
    assert set(nop.values()) == {0.0}, nop


@pytest.mark.parametrize(("case", "forged"), [("naive", 1.0), ("hardened", 0.0)])
def test_the_plugin_gives_a_probe_the_reward_taskloom_judged(tmp_path, bwrap_rootfs, case,
                                                             forged):
    """A probe that forges the naive verifier's reward forges it under the plugin too (the
    plugin is a faithful container), and forges nothing against the hardened one."""
    options = {"test_sh": NAIVE_TEST_SH} if case == "naive" else {}
    folder = make_task(tmp_path, case, extra=OFFLINE, **options)
    (probe,) = probes_for(read_task_folder(folder), combined=True)
    assert harbor_reward(folder, "probe", tmp_path / "jobs", probe=probe.script,
                         plugin=True) == forged


def test_a_task_that_asks_for_a_network_is_refused_with_the_fix(tmp_path, bwrap_rootfs):
    folder = make_task(tmp_path / "tasks", "online")
    rewards = harbor_dataset_rewards(tmp_path / "tasks", "oracle", tmp_path / "jobs",
                                     plugin=True)
    assert rewards == {"tests/online": None}
    (exception,) = harbor_exceptions(tmp_path / "jobs", "oracle")
    assert "no network" in exception and 'network_mode = "no-network"' in exception
    assert folder.is_dir()
