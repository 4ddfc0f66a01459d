"""An item's way through the stages, without a container: the transition function, the
funnel's counting rules, stored results read back as outcomes, and config names checked
before a run starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from taskloom.config import load_run_config
from taskloom.errors import ConfigError
from taskloom.generators.backends import backend_for
from taskloom.models import Calibration, TaskReport, Usage, Verdict
from taskloom.pipeline.funnel import Funnel
from taskloom.pipeline.items import STAGE_TABLE, ItemState, advance, stored_outcome
from taskloom.pipeline.preflight import check_run_config
from taskloom.pipeline.records import ItemStatus, Stage, StoredResult
from taskloom.pipeline.stages import Outcome, StageKeys, StageOutcome

CONFIG = load_run_config(None, ["count=1"])
ROUNDS = {n: CONFIG.model_copy(update={"refine_rounds": n}) for n in (1, 2)}
CALIBRATED = load_run_config(None, ["calibration.model=\"m\"", "calibration.k=4",
                                    "calibration.band=[0.25, 0.75]"])
BACKEND = backend_for(CONFIG)
BLUEPRINT = BACKEND.planner.plan(0)
DRAFT = BACKEND.generator.generate(BLUEPRINT)
ACCEPTED = TaskReport(task="t", verdicts=(Verdict(check="oracle", passed=True),))
REJECTED = TaskReport(task="t", verdicts=(
    Verdict(check="oracle", passed=False, reason="oracle-fails"),
    Verdict(check="leakage", passed=False, reason="leak")))


def ok(stage: Stage, value) -> StageOutcome:
    return StageOutcome(stage=stage, status=Outcome.OK, value=value)


def test_an_item_goes_plan_generate_validate_accepted():
    item = ItemState(0)
    item = advance(item, ok(Stage.PLAN, BLUEPRINT), ROUNDS[2])
    assert (item.stage, item.blueprint, item.status) == (Stage.GENERATE, BLUEPRINT, None)
    item = advance(item, ok(Stage.GENERATE, DRAFT), ROUNDS[2])
    assert (item.stage, item.draft) == (Stage.VALIDATE, DRAFT)
    item = advance(item, ok(Stage.VALIDATE, ACCEPTED), ROUNDS[2])
    assert (item.status, item.report, item.round) == (ItemStatus.ACCEPTED, ACCEPTED, 0)


def test_a_rejected_draft_is_refined_until_the_rounds_run_out():
    item = ItemState(0, stage=Stage.VALIDATE, blueprint=BLUEPRINT, draft=DRAFT)
    item = advance(item, ok(Stage.VALIDATE, REJECTED), ROUNDS[1])
    assert (item.stage, item.status, item.report) == (Stage.REFINE, None, REJECTED)
    item = advance(item, ok(Stage.REFINE, DRAFT), ROUNDS[1])
    assert (item.stage, item.round) == (Stage.VALIDATE, 1)
    item = advance(item, ok(Stage.VALIDATE, REJECTED), ROUNDS[1])
    assert (item.status, item.reason) == (ItemStatus.REJECTED, "oracle-fails, leak")


@pytest.mark.parametrize(("stage", "status"), [
    (Stage.PLAN, ItemStatus.FAILED), (Stage.GENERATE, ItemStatus.FAILED),
    (Stage.VALIDATE, ItemStatus.REJECTED), (Stage.REFINE, ItemStatus.REJECTED)])
def test_rejections_and_errors_end_the_item_with_the_stages_own_message(stage, status):
    item = ItemState(3, stage=stage)
    rejected = advance(item, StageOutcome(stage=stage, status=Outcome.REJECTED,
                                          reason="no usable answer"), ROUNDS[2])
    assert (rejected.status, rejected.reason, rejected.stage) == (status, "no usable answer",
                                                                   stage)
    failed = advance(item, StageOutcome(stage=stage, status=Outcome.ERROR, reason="down"),
                     ROUNDS[2])
    assert (failed.status, failed.reason) == (ItemStatus.ERROR, "down")


def test_an_outcome_of_another_stage_is_a_bug():
    with pytest.raises(ValueError, match="is at plan"):
        advance(ItemState(0), ok(Stage.GENERATE, DRAFT), ROUNDS[2])


def test_every_worker_stage_has_a_table_entry_whose_value_reads_back():
    assert list(STAGE_TABLE) == [Stage.PLAN, Stage.GENERATE, Stage.VALIDATE, Stage.REFINE,
                                 Stage.CALIBRATE]
    for stage, value in ((Stage.PLAN, BLUEPRINT), (Stage.GENERATE, DRAFT),
                         (Stage.VALIDATE, ACCEPTED), (Stage.REFINE, DRAFT),
                         (Stage.CALIBRATE, measured(2))):
        stored = StoredResult(status="ok", reason=None, payload=value.model_dump(mode="json"),
                              seconds=1.0, tokens_in=5, tokens_out=7, cost_usd=0.25)
        outcome = stored_outcome(stage, stored)
        assert outcome.value == value and outcome.usage == Usage(tokens_in=5, tokens_out=7,
                                                                 cost_usd=0.25)
    gone = stored_outcome(Stage.GENERATE, StoredResult(
        status="rejected", reason="leak", payload=None, seconds=0.1, tokens_in=0,
        tokens_out=0, cost_usd=0.0))
    assert (gone.status, gone.value, gone.reason) == (Outcome.REJECTED, None, "leak")


def test_funnel_counts_first_validations_and_repairs_apart():
    funnel = Funnel()
    funnel.record(ok(Stage.PLAN, BLUEPRINT), round_=0, seconds=1.0)
    funnel.record(ok(Stage.GENERATE, DRAFT), round_=0, seconds=2.0)
    funnel.record(ok(Stage.VALIDATE, REJECTED), round_=0, seconds=3.0)
    funnel.record(ok(Stage.REFINE, DRAFT), round_=0, seconds=4.0)
    funnel.record(ok(Stage.VALIDATE, ACCEPTED), round_=1, seconds=5.0)  # not a new item
    funnel.record(StageOutcome(stage=Stage.PLAN, status=Outcome.REJECTED, reason="x",
                               usage=Usage(tokens_in=10, tokens_out=2, cost_usd=0.5)),
                  round_=0, seconds=1.0)
    funnel.filtered(kept=True)
    funnel.exported(0.5)
    rows = {row.stage: row for row in funnel.rows(items=2, verified=1, wall=10.0)}
    assert list(rows) == ["plan", "generate", "validate", "refine", "filter", "export",
                          "verified"]
    assert (rows["plan"].n_in, rows["plan"].n_out, rows["plan"].tokens) == (2, 1, 12)
    assert (rows["validate"].n_in, rows["validate"].n_out) == (1, 0)
    assert (rows["refine"].n_in, rows["refine"].n_out) == (1, 1)  # accepted after a repair
    assert rows["validate"].median_seconds == 4.0  # both validations' seconds
    assert (rows["verified"].n_in, rows["verified"].n_out) == (2, 1)
    assert rows["verified"].median_seconds == 10.0 and rows["verified"].cost_usd == 0.5


@pytest.mark.parametrize(("overrides", "field", "words"), [
    (["scenario=web-incident-triag"], "scenario", "did you mean web-incident-triage"),
    (["skills=[\"csv.sort_rows\", \"not-a-skill\"]"], "skills", "unknown skill 'not-a-skill'"),
    (['validation.checks=["oracel"]'], "validation.checks", "unknown check 'oracel'"),
])
def test_names_in_a_run_config_are_checked_before_a_run(overrides, field, words):
    with pytest.raises(ConfigError) as caught:
        check_run_config(load_run_config(None, overrides))
    assert caught.value.field == field and words in str(caught.value) and caught.value.fix


def test_generate_with_a_misspelled_scenario_ends_in_one_line_and_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "taskloom.cli", "generate", "--set",
                           "scenario=typo", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "[scenario]: unknown scenario 'typo'" in done.stderr and "fix:" in done.stderr
    assert not (tmp_path / "run").exists()  # nothing was started


def measured(passes: int, k: int = 4) -> Calibration:
    return Calibration(model="m", k=k, passes=passes, pass_rate=passes / k,
                       date="2026-12-04T00:00:00+00:00")


@pytest.mark.parametrize(("passes", "status"), [
    (0, ItemStatus.OUT_OF_BAND), (1, ItemStatus.ACCEPTED), (3, ItemStatus.ACCEPTED),
    (4, ItemStatus.OUT_OF_BAND)])
def test_with_calibration_on_an_accepted_task_stays_only_if_its_pass_rate_is_in_the_band(
        passes, status):
    item = ItemState(0, stage=Stage.VALIDATE, blueprint=BLUEPRINT, draft=DRAFT)
    item = advance(item, ok(Stage.VALIDATE, ACCEPTED), CALIBRATED)
    assert (item.stage, item.status) == (Stage.CALIBRATE, None)
    item = advance(item, ok(Stage.CALIBRATE, measured(passes)), CALIBRATED)
    assert (item.status, item.calibration) == (status, measured(passes))
    if status is ItemStatus.OUT_OF_BAND:
        assert item.reason == (f"m passed {passes} of 4 attempts (pass rate {passes / 4:g}, "
                               "band [0.25, 0.75])")


def test_the_band_is_not_part_of_the_calibration_key_the_model_and_k_are():
    keys = StageKeys(CALIBRATED)
    wider = load_run_config(None, ["calibration.model=\"m\"", "calibration.k=4",
                                   "calibration.band=[0, 1]"])
    assert StageKeys(wider).calibrate(DRAFT) == keys.calibrate(DRAFT)
    for other in (["calibration.model=\"n\"", "calibration.k=4"],
                  ["calibration.model=\"m\"", "calibration.k=8"],
                  ["calibration.model=\"m\"", "calibration.k=4", "runtime=\"bwrap\""]):
        assert StageKeys(load_run_config(None, other)).calibrate(DRAFT) != \
            keys.calibrate(DRAFT)


@pytest.mark.parametrize("band", ["[0.9, 0.1]", "[-0.1, 0.5]", "[0.5, 1.5]"])
def test_a_band_that_is_not_an_interval_in_0_1_is_refused_with_the_key(band):
    with pytest.raises(ConfigError, match=r"calibration\.band.*not \[low, high\]"):
        load_run_config(None, [f"calibration.band={band}"])


def test_the_funnel_has_a_calibration_row_only_when_it_is_on_and_lets_out_the_band():
    assert "calibrate" not in [row.stage for row in Funnel().rows(items=0, verified=0,
                                                                   wall=1.0)]
    funnel = Funnel(CALIBRATED.calibration)
    for passes in (0, 2, 3, 4):
        funnel.record(ok(Stage.CALIBRATE, measured(passes)), round_=0, seconds=1.0)
    rows = {row.stage: row for row in funnel.rows(items=4, verified=2, wall=1.0)}
    assert list(rows)[4:6] == ["calibrate", "filter"]
    assert (rows["calibrate"].n_in, rows["calibrate"].n_out) == (4, 2)
