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
from taskloom.models import TaskReport, Usage, Verdict
from taskloom.pipeline.funnel import Funnel
from taskloom.pipeline.items import STAGE_TABLE, ItemState, advance, stored_outcome
from taskloom.pipeline.preflight import check_run_config
from taskloom.pipeline.records import ItemStatus, Stage, StoredResult
from taskloom.pipeline.stages import Outcome, StageOutcome

CONFIG = load_run_config(None, ["count=1"])
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
    item = advance(item, ok(Stage.PLAN, BLUEPRINT), 2)
    assert (item.stage, item.blueprint, item.status) == (Stage.GENERATE, BLUEPRINT, None)
    item = advance(item, ok(Stage.GENERATE, DRAFT), 2)
    assert (item.stage, item.draft) == (Stage.VALIDATE, DRAFT)
    item = advance(item, ok(Stage.VALIDATE, ACCEPTED), 2)
    assert (item.status, item.report, item.round) == (ItemStatus.ACCEPTED, ACCEPTED, 0)


def test_a_rejected_draft_is_refined_until_the_rounds_run_out():
    item = ItemState(0, stage=Stage.VALIDATE, blueprint=BLUEPRINT, draft=DRAFT)
    item = advance(item, ok(Stage.VALIDATE, REJECTED), 1)
    assert (item.stage, item.status, item.report) == (Stage.REFINE, None, REJECTED)
    item = advance(item, ok(Stage.REFINE, DRAFT), 1)
    assert (item.stage, item.round) == (Stage.VALIDATE, 1)
    item = advance(item, ok(Stage.VALIDATE, REJECTED), 1)
    assert (item.status, item.reason) == (ItemStatus.REJECTED, "oracle-fails, leak")


@pytest.mark.parametrize(("stage", "status"), [
    (Stage.PLAN, ItemStatus.FAILED), (Stage.GENERATE, ItemStatus.FAILED),
    (Stage.VALIDATE, ItemStatus.REJECTED), (Stage.REFINE, ItemStatus.REJECTED)])
def test_rejections_and_errors_end_the_item_with_the_stages_own_message(stage, status):
    item = ItemState(3, stage=stage)
    rejected = advance(item, StageOutcome(stage=stage, status=Outcome.REJECTED,
                                          reason="no usable answer"), 2)
    assert (rejected.status, rejected.reason, rejected.stage) == (status, "no usable answer",
                                                                   stage)
    failed = advance(item, StageOutcome(stage=stage, status=Outcome.ERROR, reason="down"), 2)
    assert (failed.status, failed.reason) == (ItemStatus.ERROR, "down")


def test_an_outcome_of_another_stage_is_a_bug():
    with pytest.raises(ValueError, match="is at plan"):
        advance(ItemState(0), ok(Stage.GENERATE, DRAFT), 2)


def test_every_worker_stage_has_a_table_entry_whose_value_reads_back():
    assert list(STAGE_TABLE) == [Stage.PLAN, Stage.GENERATE, Stage.VALIDATE, Stage.REFINE]
    for stage, value in ((Stage.PLAN, BLUEPRINT), (Stage.GENERATE, DRAFT),
                         (Stage.VALIDATE, ACCEPTED), (Stage.REFINE, DRAFT)):
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
