"""The sandbox layer's shared logic, without a container: the fast-mode loop with a fake
driver run, the driver's report as a model, the policy's Docker host config, and pruning."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from taskloom.errors import SandboxError
from taskloom.sandbox import base_image, policy
from taskloom.sandbox.driver import RESULT_MARKER
from taskloom.sandbox.driver_plan import (
    DriverReport,
    parse_driver_output,
    phase_died,
    read_report,
    sandbox_died,
)
from taskloom.sandbox.fast_mode import run_in_place
from taskloom.sandbox.live import LiveCheck
from taskloom.sandbox.trial import (
    CommandResult,
    EnvironmentSpec,
    Leak,
    Phase,
    PhaseResult,
    SetupResult,
    TrialPlan,
)

PHASES = ("nop", "oracle-1", "oracle-2", "mutant-1")


def plan(phases=PHASES) -> TrialPlan:
    return TrialPlan(environment=EnvironmentSpec(image=base_image.BASE_IMAGE), tests=(),
                     phases=tuple(Phase(name=name) for name in phases),
                     solution_timeout=10.0, tests_timeout=10.0)


def passed(name: str) -> PhaseResult:
    return PhaseResult(name=name, reward=0.0 if name == "nop" else 1.0)


class FakeDrive:
    """A driver run per call, scripted: each sandbox runs `runs[i]` phases, then is dirty."""

    def __init__(self, runs: list[int], *, leaks=(), setup_fails_in: int | None = None,
                 dirty: str = "a new entry in /usr/bin"):
        self.runs, self.leaks, self.setup_fails_in, self.dirty = runs, leaks, setup_fails_in, dirty
        self.calls: list[tuple[list[str], bool]] = []

    def __call__(self, phases: list[Phase], first: bool) -> DriverReport:
        index = len(self.calls)
        self.calls.append(([phase.name for phase in phases], first))
        leaks = self.leaks[index] if index < len(self.leaks) else ()
        if index == self.setup_fails_in:
            report = sandbox_died("ran out of memory", "oom", timed_out=False)
            return report.model_copy(update={"leaks": leaks})
        ran = phases[:self.runs[index]]
        rest = phases[len(ran):]
        return DriverReport(setup=SetupResult(ok=True, seconds=0.1),
                            phases=tuple(passed(phase.name) for phase in ran),
                            not_run=tuple(phase.name for phase in rest),
                            dirty=self.dirty if rest else None, leaks=leaks)


def test_every_phase_in_one_sandbox_when_the_state_resets_in_place():
    drive = FakeDrive([4])
    result = run_in_place(plan(), drive)
    assert [phase.name for phase in result.phases] == list(PHASES)
    assert result.sandboxes == 1 and result.notes == () and result.setup.ok
    assert drive.calls == [(list(PHASES), True)]


def test_a_dirty_phase_moves_the_rest_to_a_new_sandbox():
    drive = FakeDrive([1, 2, 1])
    result = run_in_place(plan(), drive)
    assert drive.calls == [(list(PHASES), True), (["oracle-1", "oracle-2", "mutant-1"], False),
                           (["mutant-1"], False)]
    assert [phase.name for phase in result.phases] == list(PHASES)
    assert [phase.reward for phase in result.phases] == [0.0, 1.0, 1.0, 1.0]
    assert result.sandboxes == 3
    assert result.notes == (
        "state after nop could not be reset in place (a new entry in /usr/bin); oracle-1, "
        "oracle-2, mutant-1 ran in a new sandbox",
        "state after oracle-2 could not be reset in place (a new entry in /usr/bin); "
        "mutant-1 ran in a new sandbox")


def test_notes_name_what_the_runtime_calls_a_sandbox():
    result = run_in_place(plan(("nop", "oracle-1")), FakeDrive([1, 1]), sandbox_noun="container")
    assert result.notes == ("state after nop could not be reset in place (a new entry in "
                            "/usr/bin); oracle-1 ran in a new container",)


def test_a_trial_of_no_phases_still_sets_the_environment_up():
    leak = Leak(path="/app/answer", origin="tests/x")
    drive = FakeDrive([0], leaks=[(leak,)])
    result = run_in_place(plan(()), drive)
    assert drive.calls == [([], True)]
    assert result.setup.ok and result.phases == () and result.leaks == (leak,)


def test_a_failed_setup_stops_the_trial():
    drive = FakeDrive([4], setup_fails_in=0)
    result = run_in_place(plan(), drive)
    assert not result.setup.ok and result.phases == () and result.sandboxes == 1
    assert len(drive.calls) == 1


def test_a_failed_setup_in_a_later_sandbox_keeps_the_phases_that_ran():
    drive = FakeDrive([2, 0], setup_fails_in=1)
    result = run_in_place(plan(), drive)
    assert [phase.name for phase in result.phases] == ["nop", "oracle-1"]
    assert not result.setup.ok and "ran out of memory" in result.setup.log
    assert result.sandboxes == 2 and len(drive.calls) == 2


def test_leaks_come_from_the_first_sandbox_only():
    first, later = Leak(path="/app/answer", origin="tests/x"), Leak(path="/b", origin="y")
    drive = FakeDrive([1, 3], leaks=[(first,), (later,)])
    result = run_in_place(plan(), drive)
    assert result.leaks == (first,)
    assert [scan for _, scan in drive.calls] == [True, False]


def test_leaks_are_kept_when_the_first_setup_fails():
    leak = Leak(path="/app/answer", origin="tests/x")
    result = run_in_place(plan(), FakeDrive([4], leaks=[(leak,)], setup_fails_in=0))
    assert result.leaks == (leak,)


def test_a_driver_that_runs_nothing_but_wants_a_new_sandbox_is_an_error():
    with pytest.raises(SandboxError):
        run_in_place(plan(), FakeDrive([0]))


def driver_json(**overrides) -> dict:
    """A report as driver.py writes it."""
    command = {"exit_code": 0, "timed_out": False, "seconds": 0.5, "log": "ok\n"}
    data = {"setup": {"ok": True, "step": None, "exit_code": 0, "timed_out": False,
                      "seconds": 1.25, "log": "setup log"},
            "leaks": [{"path": "/srv/key.txt", "origin": "tests/test_outputs.py"}],
            "phases": [{"name": "nop", "solution": None, "tests": command, "reward": 0.0,
                        "reward_error": None},
                       {"name": "oracle-1", "solution": command, "tests": command,
                        "reward": 1.0, "reward_error": None}],
            "not_run": ["oracle-2"], "dirty": "/usr/bin/upper was added"}
    data.update(overrides)
    return data


def test_the_driver_report_is_a_frozen_model():
    report = parse_driver_output(driver_json())
    assert isinstance(report, DriverReport)
    assert report.setup == SetupResult(ok=True, step=None, command=None, seconds=1.25,
                                       log="setup log")
    assert [(p.name, p.reward, p.solution is None) for p in report.phases] == [
        ("nop", 0.0, True), ("oracle-1", 1.0, False)]
    assert report.phases[1].tests == CommandResult(exit_code=0, timed_out=False,
                                                   seconds=0.5, log="ok\n")
    assert report.not_run == ("oracle-2",) and report.dirty == "/usr/bin/upper was added"
    assert report.leaks == (Leak(path="/srv/key.txt", origin="tests/test_outputs.py"),)
    with pytest.raises(ValidationError):
        report.dirty = None
    with pytest.raises(ValidationError):
        DriverReport(setup=report.setup, unknown=1)


def test_a_failed_setup_step_carries_its_command():
    report = parse_driver_output(driver_json(
        setup={"ok": False, "step": 2, "exit_code": 1, "timed_out": True, "seconds": 3.0,
               "log": "RUN failed"}, phases=[], not_run=[], dirty=None, leaks=[]))
    assert not report.setup.ok and report.setup.step == 2
    assert report.setup.command == CommandResult(exit_code=1, timed_out=True, seconds=3.0,
                                                 log="RUN failed")


@pytest.mark.parametrize("model", [DriverReport, LiveCheck])
def test_every_field_is_described(model):
    assert all(field.description for field in model.model_fields.values())


def test_sandbox_died_takes_the_timeout_from_the_caller_not_the_message():
    # "deadline" in the text must not make it a timeout, nor its absence a non-timeout.
    report = sandbox_died("was killed after its deadline passed", "x", timed_out=False)
    assert report.setup.command.timed_out is False
    report = sandbox_died("was killed", "tail of the log", timed_out=True)
    assert report.setup.command.timed_out is True
    assert not report.setup.ok and report.phases == () and report.not_run == ()
    assert report.setup.log == "the sandbox was killed\ntail of the log"


def test_read_report_finds_the_report_after_the_marker():
    output = "noise\n" + RESULT_MARKER + "\nnot json\n" + RESULT_MARKER + "\n" + json.dumps(
        driver_json()) + "\n"
    report = read_report(output, timed_out=True, out_of_memory=True)
    assert report == parse_driver_output(driver_json())


def test_read_report_without_a_report():
    deadline = read_report("half a log", timed_out=True, out_of_memory=False)
    assert not deadline.setup.ok and deadline.setup.command.timed_out
    assert deadline.setup.log.startswith("the sandbox ran past its overall deadline\n")
    memory = read_report("half a log", timed_out=False, out_of_memory=True)
    assert not memory.setup.command.timed_out
    assert memory.setup.log.startswith("the sandbox ran out of memory\n")
    # The driver failed although its sandbox lived: the runtime raises, not a verdict.
    assert read_report("Traceback ...", timed_out=False, out_of_memory=False) is None


def test_a_sandbox_that_dies_during_its_one_phase_fails_that_phase():
    report = read_report("log", timed_out=True, out_of_memory=False, phase="oracle-1",
                         seconds=25.0)
    assert report == phase_died("oracle-1", "ran past its overall deadline", "log",
                                timed_out=True, seconds=25.0)
    assert report.setup.ok
    (phase,) = report.phases
    assert phase.name == "oracle-1" and phase.reward is None
    assert phase.reward_error == "the sandbox ran past its overall deadline before the tests " \
                                 "finished"
    assert phase.tests == CommandResult(exit_code=-9, timed_out=True, seconds=25.0,
                                        log="the sandbox ran past its overall deadline\nlog")


def test_owner_label_round_trip():
    host, pid = policy.parse_owner(policy.owner())
    assert pid is not None and host and policy.owner() == f"{host}:{pid}"
    assert policy.parse_owner("garbage") == ("", None)
    assert policy.sandbox_labels()[policy.LABEL] == "1"


def test_docker_host_config_is_the_locked_down_policy():
    docker = pytest.importorskip("docker")
    api = docker.APIClient(base_url="unix:///nonexistent.sock", version="1.41")  # no request
    config = policy.docker_host_config(api, memory_mb=512, cpus=1.5, network=False)
    assert config["NetworkMode"] == "none"
    assert config["Memory"] == config["MemorySwap"] == 512 * 1024 * 1024
    assert config["NanoCpus"] == 1_500_000_000
    assert config["PidsLimit"] == policy.PIDS_LIMIT
    assert config["CapDrop"] == ["ALL"] and config["CapAdd"] == list(policy.KEPT_CAPABILITIES)
    assert config["SecurityOpt"] == ["no-new-privileges"]
    assert config["LogConfig"]["Config"]["max-size"] == "4m"
    unlimited = policy.docker_host_config(api, memory_mb=512, cpus=None, network=True)
    assert "NanoCpus" not in unlimited and unlimited["NetworkMode"] == "bridge"


def test_prune_empties_caches_and_docs_but_keeps_locks(tmp_path):
    archives = tmp_path / "var/cache/apt/archives"
    (archives / "partial").mkdir(parents=True)
    (archives / "lock").write_text("")
    (archives / "bash.deb").write_text("x")
    docs = tmp_path / "usr/share/doc/bash"
    docs.mkdir(parents=True)
    (docs / "README").write_text("x")
    (tmp_path / "usr/share/doc/link").symlink_to(docs)
    kept = tmp_path / "usr/share/zoneinfo/UTC"
    kept.parent.mkdir(parents=True)
    kept.write_text("x")
    base_image.prune(tmp_path)
    assert sorted(p.name for p in archives.iterdir()) == ["lock"]
    assert list((tmp_path / "usr/share/doc").iterdir()) == []
    assert kept.exists()
