"""An item's way through the worker stages: the stage table and the transition function.

```
plan ─ok─► generate ─ok─► validate ─accepted──────────────► (filter, export: the driver)
 │           │              │  │  └─rejected, round < R─► refine ─ok─► validate (round + 1)
 └rejected─► failed ◄───────┘  │ rejected, round = R        └rejected─► rejected
                               └accepted, calibration on─► calibrate ─in band─► accepted
                                                                     └outside─► out_of_band
any stage ─error─► error (the stage reruns on resume)
```

`STAGE_TABLE` says, per worker stage, how its result is keyed, which function computes it
with which arguments, its version, and where an item goes after an ok result. `advance` is
the pure transition `(item, outcome, config) -> item` the runner applies to fresh and
cached outcomes alike (the band is applied here, not stored: a resume with another band
re-decides without a new attempt). Adding a stage means a stage function, a table entry
and its tests.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

from taskloom.config import RunConfig
from taskloom.generators.protocols import Blueprint, Draft
from taskloom.models import Calibration, TaskReport, Usage
from taskloom.pipeline import stages
from taskloom.pipeline.records import ItemStatus, Stage, StoredResult
from taskloom.pipeline.stages import Outcome, StageKeys, StageOutcome
from taskloom.skill_graph.steering import CoverageSnapshot


@dataclass(frozen=True)
class ItemState:
    """One item in flight.

    Attributes:
        index: Item index in the run.
        stage: The stage it is at (or ended at).
        round: Refine rounds so far.
        blueprint: Its plan, once planned.
        draft: Its current draft, once generated.
        report: The latest validation report.
        status: Where it ended (None while in flight).
        reason: Why it ended so (the stage's message, or the rejection's reason codes).
        coverage: The steering snapshot its plan was made with.
        calibration: The calibration model's pass rate on it, once calibrated.
    """

    index: int
    stage: Stage = Stage.PLAN
    round: int = 0
    blueprint: Blueprint | None = None
    draft: Draft | None = None
    report: TaskReport | None = None
    status: ItemStatus | None = None
    reason: str | None = None
    coverage: CoverageSnapshot | None = None
    calibration: Calibration | None = None


@dataclass(frozen=True)
class StageSpec:
    """One worker stage of the table.

    Attributes:
        stage: Its name.
        value: The model of its result (a stored payload is read back as this).
        key: The content key of an item's result at this stage.
        call: The stage function and its arguments for an item.
        version: The stage's version under a config (part of stored results).
        after: The item after an ok result (the config: refine rounds, calibration band).
        rejected: The status of an item this stage rejects.
    """

    stage: Stage
    value: type[Blueprint] | type[Draft] | type[TaskReport] | type[Calibration]
    key: Callable[[StageKeys, ItemState], str]
    call: Callable[[RunConfig, ItemState], tuple[Callable[..., StageOutcome], tuple]]
    version: Callable[[RunConfig], str]
    after: Callable[[ItemState, object, RunConfig], ItemState]
    rejected: ItemStatus


def _planned(item: ItemState, blueprint: object, config: RunConfig) -> ItemState:
    return replace(item, blueprint=blueprint, stage=Stage.GENERATE)


def _generated(item: ItemState, draft: object, config: RunConfig) -> ItemState:
    return replace(item, draft=draft, stage=Stage.VALIDATE)


def _validated(item: ItemState, report: TaskReport, config: RunConfig) -> ItemState:
    if report.accepted and config.calibration.enabled:
        return replace(item, report=report, stage=Stage.CALIBRATE)
    if report.accepted:
        return replace(item, report=report, status=ItemStatus.ACCEPTED)
    if item.round < config.refine_rounds:
        return replace(item, report=report, stage=Stage.REFINE)
    return replace(item, report=report, status=ItemStatus.REJECTED,
                   reason=", ".join(str(r) for r in report.reasons))


def _refined(item: ItemState, draft: object, config: RunConfig) -> ItemState:
    return replace(item, draft=draft, round=item.round + 1, stage=Stage.VALIDATE)


def _calibrated(item: ItemState, calibration: Calibration, config: RunConfig) -> ItemState:
    if config.calibration.keeps(calibration.pass_rate):
        return replace(item, calibration=calibration, status=ItemStatus.ACCEPTED)
    low, high = config.calibration.band
    return replace(item, calibration=calibration, status=ItemStatus.OUT_OF_BAND,
                   reason=f"{calibration.model} passed {calibration.passes} of "
                          f"{calibration.k} attempts (pass rate {calibration.pass_rate:g}, "
                          f"band [{low:g}, {high:g}])")


STAGE_TABLE: dict[Stage, StageSpec] = {spec.stage: spec for spec in (
    StageSpec(Stage.PLAN, Blueprint,
              key=lambda keys, item: keys.plan(item.index, item.coverage),
              call=lambda config, item: (functools.partial(stages.plan,
                                                           coverage=item.coverage),
                                         (config, item.index)),
              version=lambda config: stages.PLAN_VERSION, after=_planned,
              rejected=ItemStatus.FAILED),
    StageSpec(Stage.GENERATE, Draft,
              key=lambda keys, item: keys.generate(item.blueprint),
              call=lambda config, item: (stages.generate, (config, item.blueprint)),
              version=stages.generator_version, after=_generated,
              rejected=ItemStatus.FAILED),
    StageSpec(Stage.VALIDATE, TaskReport,
              key=lambda keys, item: keys.validate(item.draft),
              call=lambda config, item: (stages.validate, (config, item.draft)),
              version=lambda config: stages.VALIDATE_VERSION, after=_validated,
              rejected=ItemStatus.REJECTED),
    StageSpec(Stage.REFINE, Draft,
              key=lambda keys, item: keys.refine(item.draft, item.report, item.round),
              call=lambda config, item: (stages.refine, (config, item.draft, item.report)),
              version=lambda config: stages.REFINE_VERSION, after=_refined,
              rejected=ItemStatus.REJECTED),
    StageSpec(Stage.CALIBRATE, Calibration,
              key=lambda keys, item: keys.calibrate(item.draft),
              call=lambda config, item: (stages.calibrate, (config, item.draft)),
              version=lambda config: stages.CALIBRATE_VERSION, after=_calibrated,
              rejected=ItemStatus.REJECTED),
)}


def advance(item: ItemState, outcome: StageOutcome, config: RunConfig) -> ItemState:
    """The item after one outcome of the stage it is at."""
    if outcome.stage is not item.stage:
        raise ValueError(f"item {item.index} is at {item.stage}, not {outcome.stage}")
    if outcome.status is Outcome.ERROR:
        return replace(item, status=ItemStatus.ERROR, reason=outcome.reason)
    if outcome.status is Outcome.REJECTED:
        return replace(item, status=STAGE_TABLE[item.stage].rejected, reason=outcome.reason)
    return STAGE_TABLE[item.stage].after(item, outcome.value, config)


def stored_outcome(stage: Stage, stored: StoredResult) -> StageOutcome:
    """A stored result as the outcome it was (its JSON payload read back as the model)."""
    status = Outcome(stored.status)
    value = STAGE_TABLE[stage].value.model_validate(stored.payload) \
        if status is Outcome.OK else None
    return StageOutcome(stage=stage, status=status, value=value, reason=stored.reason or "",
                        usage=Usage(tokens_in=stored.tokens_in, tokens_out=stored.tokens_out,
                                    cost_usd=stored.cost_usd))
