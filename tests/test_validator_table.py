"""The table of checks: selection, the engine's order and skip rules, each check's verdicts
over recorded trial results, and a check added from outside (here in memory, and in
`test_validation_docker.py` against a real sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskfactory import make_task
from trials import Replay, phase

from taskloom.config import RunConfig, ValidationConfig
from taskloom.errors import ConfigError
from taskloom.harbor import read_task_folder
from taskloom.models import ReasonCode, Verdict
from taskloom.sandbox.trial import (
    Leak,
    SetupResult,
    TrialResult,
)
from taskloom.validators import registry
from taskloom.validators.engine import plan_trial, validate_task
from taskloom.validators.protocol import Evidence, TrialPart

DEFAULT = ("structure", "build", "nop", "oracle", "alternatives", "mutations", "tamper",
           "leakage")


def names(selection) -> tuple[str, ...]:
    return tuple(v.name for v in selection)


def test_default_selection_is_every_check_but_the_judge():
    assert names(registry.select()) == DEFAULT
    assert names(registry.registered())[-1] == "judge"


def test_edits_exact_sets_and_needs():
    assert names(registry.select(["+judge"])) == (*DEFAULT, "judge")
    assert names(registry.select(["-mutations"])) == tuple(c for c in DEFAULT
                                                            if c != "mutations")
    # an exact set brings what it needs, in table order
    assert names(registry.select(["oracle"])) == ("structure", "build", "oracle")
    assert names(registry.select(["leakage", "structure"])) == ("structure", "leakage")


@pytest.mark.parametrize(("checks", "words"), [
    (["oracel"], "unknown check 'oracel'"),
    (["nop", "+judge"], "mixes check names"),
    (["-build"], "cannot drop build"),
])
def test_bad_selections_name_the_field_and_the_fix(checks, words):
    with pytest.raises(ConfigError) as caught:
        registry.select(checks, field="--checks")
    assert words in str(caught.value) and "[--checks]" in str(caught.value)
    assert caught.value.fix


def test_older_spellings_become_selections():
    assert ValidationConfig(mutations=False).checks == ("-mutations",)
    assert ValidationConfig(mutations=True).checks == ()
    config = RunConfig.model_validate({"llm": {"judge": True}})
    assert config.validation.checks == ("+judge",)
    exact = RunConfig.model_validate({"llm": {"judge": True},
                                      "validation": {"checks": ["nop"]}})
    assert exact.validation.checks == ("nop", "judge")


# -- each check over recorded trial results ------------------------------------------------

@pytest.mark.parametrize(("phases", "expected"), [
    ([phase(0, name="nop"), phase(1), phase(1)], {}),
    ([phase(1, name="nop"), phase(1)], {"nop": ReasonCode.TRIVIAL}),
    ([phase(0, name="nop"), phase(0), phase(0)], {"oracle": ReasonCode.ORACLE_FAILS}),
    ([phase(0, name="nop"), phase(1), phase(0)], {"oracle": ReasonCode.FLAKY}),
    ([phase(0, name="nop"), phase(None, timed_out=True)], {"oracle": ReasonCode.TIMEOUT}),
    ([phase(None, name="nop", error="no reward"), phase(1)], {"nop": ReasonCode.VERIFIER}),
    ([phase(0, name="nop"), phase(1), phase(1, name="mutant-1"), phase(0, name="mutant-2")],
     {"mutations": ReasonCode.WEAK_TESTS}),
    ([phase(0, name="nop"), phase(1), phase(1, name="alternative-awk")], {}),
    ([phase(0, name="nop"), phase(1), phase(0.5, name="alternative-awk")],
     {"alternatives": ReasonCode.OVER_SPECIFIED}),
    ([phase(0, name="nop"), phase(1), phase(None, name="alternative-awk", timed_out=True)],
     {"alternatives": ReasonCode.TIMEOUT}),
])
def test_phase_checks_read_their_own_phases(tmp_path, phases, expected):
    task = read_task_folder(make_task(tmp_path, "good"))
    trial = TrialResult(setup=SetupResult(ok=True), phases=tuple(phases))
    evidence = Evidence(task=task, config=ValidationConfig(), trial=trial, environment="fast")
    verdicts = [v.check(evidence) for v in registry.select(["nop", "oracle", "alternatives",
                                                                    "mutations"])]
    failed = {v.check: v.reason for v in verdicts if v is not None and not v.passed}
    assert failed == expected


# -- the engine, with a runtime that replays a recorded trial ------------------------------

GOOD = TrialResult(setup=SetupResult(ok=True),
                   phases=(phase(0, name="nop"), phase(1, name="oracle-1"),
                           phase(1, name="oracle-2"), phase(0, name="tamper-all-at-once")))


def test_one_trial_carries_every_selected_checks_phases(tmp_path):
    task = read_task_folder(make_task(tmp_path, "good"))
    runtime = Replay(GOOD)
    report = validate_task(task, runtime, ValidationConfig(repeats=2))
    assert report.accepted
    assert [v.check for v in report.verdicts] == ["structure", "build", "nop", "oracle",
                                                  "tamper", "leakage"]
    (plan,) = runtime.plans
    assert [p.name for p in plan.phases] == ["nop", "oracle-1", "oracle-2",
                                             "tamper-all-at-once"]
    assert set(plan.solutions) == {"oracle", "tamper-all-at-once"} and plan.leak_fingerprints
    assert plan == plan_trial(task, ValidationConfig(repeats=2))[0]


def test_a_failed_build_skips_what_needs_it_but_not_the_leak_check(tmp_path):
    task = read_task_folder(make_task(tmp_path, "good"))
    broken = TrialResult(setup=SetupResult(ok=False, log="exit 1"),
                         leaks=(Leak(path="/app/test_outputs.py", origin="tests/x"),))
    report = validate_task(task, Replay(broken), ValidationConfig())
    assert {v.check: v.reason for v in report.verdicts if not v.passed} == {
        "build": ReasonCode.BUILD, "leakage": ReasonCode.LEAK}
    assert [v.check for v in report.verdicts] == ["structure", "build", "leakage"]


def test_checks_without_the_sandbox_run_no_trial(tmp_path):
    task = read_task_folder(make_task(tmp_path, "good"))
    runtime = Replay(GOOD)
    report = validate_task(task, runtime, ValidationConfig(checks=("structure",)))
    assert [v.check for v in report.verdicts] == ["structure"] and not runtime.plans


def test_the_judge_needs_a_model(tmp_path):
    task = read_task_folder(make_task(tmp_path, "good"))
    with pytest.raises(ConfigError, match="judge check needs a model"):
        validate_task(task, Replay(GOOD), ValidationConfig(checks=("+judge",)))


class NamesWorkdir:
    """A check that needs no sandbox: the instruction names /app."""

    name, reasons, needs, default, needs_model = ("names-workdir", ("underspecified",),
                                                  ("structure",), False, False)

    def check(self, evidence: Evidence) -> Verdict:
        ok = "/app" in evidence.task.instruction
        return Verdict(check=self.name, passed=ok, reason=None if ok else "underspecified",
                       details="the instruction names /app" if ok else "no /app")


class Shouts(NamesWorkdir):
    """A check that breaks its table entry: a reason it does not declare."""

    name = "shouts"

    def check(self, evidence: Evidence) -> Verdict:
        return Verdict(check=self.name, passed=False, reason="loud")


@pytest.fixture()
def registered():
    added = []

    def add(validator, **options):
        registry.register(validator, **options)
        added.append(validator.name)

    yield add
    for name in added:
        registry.unregister(name)


def test_a_new_check_is_one_class_and_a_register_call(tmp_path, registered):
    registered(NamesWorkdir())
    assert "names-workdir" not in registry.default_checks()
    folder = make_task(tmp_path, "good")
    instruction = Path(folder, "instruction.md")
    task = read_task_folder(folder)
    report = validate_task(task, Replay(GOOD), ValidationConfig(checks=("+names-workdir",)))
    assert report.verdicts[-1].check == "names-workdir"
    instruction.write_text("Do it somewhere.\n")
    vague = validate_task(read_task_folder(folder), Replay(GOOD),
                          ValidationConfig(checks=("+names-workdir",)))
    assert vague.reasons == ["underspecified"]


def test_a_check_that_gives_an_undeclared_reason_is_a_bug(tmp_path, registered):
    registered(Shouts())
    task = read_task_folder(make_task(tmp_path, "good"))
    with pytest.raises(TypeError, match="declares"):
        validate_task(task, Replay(GOOD), ValidationConfig(checks=("structure", "shouts")))


def test_a_sandbox_checks_phases_join_the_trial(tmp_path, registered):
    class Twice(NamesWorkdir):
        name = "twice"

        def trial_part(self, task, config):
            from taskloom.sandbox.trial import Phase

            return TrialPart(phases=(Phase(name="twice", solution="oracle"),),
                             solutions={"oracle": task.solution})

        def check(self, evidence):
            (run,) = [p for p in evidence.trial.phases if p.name == "twice"]
            return Verdict(check=self.name, passed=run.reward == 1,
                           reason=None if run.reward == 1 else "underspecified")

    registered(Twice(), before="leakage")
    task = read_task_folder(make_task(tmp_path, "good"))
    runtime = Replay(GOOD.model_copy(update={"phases": (*GOOD.phases, phase(1, name="twice"))}))
    report = validate_task(task, runtime, ValidationConfig(checks=("+twice",)))
    assert [p.name for p in runtime.plans[0].phases] == ["nop", "oracle-1", "oracle-2",
                                                         "tamper-all-at-once", "twice"]
    assert [v.check for v in report.verdicts][-2:] == ["twice", "leakage"] and report.accepted
