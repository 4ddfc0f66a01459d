"""Harbor itself, a pinned release, runs taskloom's tasks: its own oracle earns 1 and its
nop 0 in both verifier modes, and a tamper probe that forges a naive task under Harbor
forges nothing with the verifier taskloom ships or with a separate verifier, as
`taskloom validate` judged them."""

from __future__ import annotations

import pytest
from harbor_env import harbor_copy, harbor_reward, harbor_rewards
from taskfactory import DEBIAN_PATH_DOCKERFILE, NAIVE_TEST_SH, make_multi_step_task, make_task

from taskloom.config import RunConfig, ValidationConfig
from taskloom.generators.backends import backend_for
from taskloom.harbor import read_task_folder, write_task_folder
from taskloom.validators.engine import validate_folder
from taskloom.validators.probes import probes_for

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.mark.parametrize("verifier", ["shared", "separate"])
def test_harbor_oracle_earns_1_and_nop_0_in_both_modes(tmp_path, docker_runtime, verifier):
    backend = backend_for(RunConfig(seed=7, verifier=verifier))
    draft = backend.generator.generate(backend.planner.plan(0))
    assert draft.task.config.verifier.separate == (verifier == "separate")
    folder = write_task_folder(draft.task, tmp_path / "task")
    assert validate_folder(folder, docker_runtime, ValidationConfig()).accepted
    copy = harbor_copy(folder, tmp_path / "harbor-task")
    assert harbor_reward(copy, "oracle", tmp_path / "jobs") == 1.0
    assert harbor_reward(copy, "nop", tmp_path / "jobs") == 0.0


@pytest.mark.parametrize(("case", "forged"), [("naive", 1.0), ("hardened", 0.0),
                                               ("naive-separate", 0.0),
                                               ("hardened-debian-path", 1.0)])
def test_harbor_gives_the_probe_the_reward_taskloom_judged(tmp_path, docker_runtime, case,
                                                           forged):
    """hardened-debian-path: the shipped verifier in an image with Debian's PATH, where the
    `bash` Harbor starts the tests with can be shadowed (taskloom's base image puts
    /usr/bin first)."""
    options = {} if case.startswith("hardened") else {"test_sh": NAIVE_TEST_SH}
    if case.endswith("debian-path"):
        options["dockerfile"] = DEBIAN_PATH_DOCKERFILE
    folder = make_task(tmp_path, case, **options)
    if case.endswith("separate"):
        text = (folder / "task.toml").read_text()
        text = text.replace('schema_version = "1.4"\n',
                            'schema_version = "1.4"\nartifacts = ["/app/out.txt"]\n')
        (folder / "task.toml").write_text(text.replace(
            "[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n'))
    (probe,) = probes_for(read_task_folder(folder), combined=True)
    ours = validate_folder(folder, docker_runtime, ValidationConfig(checks=("tamper",)))
    assert ours.accepted == (forged == 0.0)
    copy = harbor_copy(folder, tmp_path / "harbor-task")
    assert harbor_reward(copy, "probe", tmp_path / "jobs", probe=probe.script) == forged


def test_harbor_runs_a_multi_step_task_as_taskloom_judged_it(tmp_path, docker_runtime):
    """Steps in one environment, min_reward stopping the nop after its first step, and the
    mean of the steps' rewards: Harbor's oracle earns 1 and its nop 0, as taskloom's did."""
    folder = make_multi_step_task(tmp_path, "steps", settings={"write": "min_reward = 1.0\n"})
    report = validate_folder(folder, docker_runtime, ValidationConfig(checks=("nop", "oracle")))
    assert report.accepted, report
    shown = {v.check: v.details for v in report.verdicts}
    assert "(steps: write 1, join 1)" in shown["oracle"] and "(steps: write 0)" in shown["nop"]
    copy = harbor_copy(folder, tmp_path / "harbor-task")
    assert harbor_rewards(copy, "oracle", tmp_path / "jobs") == {"reward": 1.0}
    assert harbor_rewards(copy, "nop", tmp_path / "jobs") == {"reward": 0.0}
