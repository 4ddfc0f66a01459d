"""The funnel of a run: per stage, items in and out, seconds, tokens and dollars.

The counting rules: validation counts an item once (its first round), refine counts the
items that needed at least one repair, and an item accepted after a repair counts as
refine's output, not validation's; calibration (a row only when it is on) lets out the
tasks whose pass rate lies in the band; an infrastructure error counts nowhere (the stage
reruns). The last row, `verified`, is per verified task: wall seconds, tokens and dollars.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from taskloom.config import CalibrationConfig
from taskloom.models import Calibration, TaskReport
from taskloom.pipeline.records import FunnelRow, Stage
from taskloom.pipeline.stages import Outcome, StageOutcome


@dataclass
class _Counts:
    n_in: int = 0
    n_out: int = 0
    seconds: list[float] = field(default_factory=list)
    tokens: int = 0
    cost_usd: float = 0.0


class Funnel:
    """Counts outcomes as the run goes; `rows` is the funnel at the end."""

    def __init__(self, calibration: CalibrationConfig | None = None) -> None:
        self.calibration = calibration or CalibrationConfig()
        self.counts = {stage: _Counts() for stage in Stage
                       if stage is not Stage.CALIBRATE or self.calibration.enabled}

    def record(self, outcome: StageOutcome, *, round_: int, seconds: float) -> None:
        """Count one worker-stage outcome of an item in refine round `round_`."""
        stage = outcome.stage
        counts = self.counts[stage]
        counts.seconds.append(seconds or 0.0)
        counts.tokens += outcome.usage.tokens_in + outcome.usage.tokens_out
        counts.cost_usd += outcome.usage.cost_usd
        if stage is Stage.REFINE:
            counts.n_in += round_ == 0  # items that needed at least one repair
        elif not (stage is Stage.VALIDATE and round_ > 0):
            counts.n_in += 1
        if outcome.status is not Outcome.OK:
            return
        if stage in (Stage.PLAN, Stage.GENERATE):
            counts.n_out += 1
        elif isinstance(outcome.value, Calibration):
            counts.n_out += self.calibration.keeps(outcome.value.pass_rate)
        elif isinstance(outcome.value, TaskReport) and outcome.value.accepted:
            self.counts[Stage.VALIDATE if round_ == 0 else Stage.REFINE].n_out += 1

    def filtered(self, *, kept: bool) -> None:
        """Count one accepted item the corpus filter decided on."""
        counts = self.counts[Stage.FILTER]
        counts.n_in += 1
        counts.n_out += kept

    def exported(self, seconds: float) -> None:
        """Count one task written to the dataset."""
        counts = self.counts[Stage.EXPORT]
        counts.n_in += 1
        counts.n_out += 1
        counts.seconds.append(seconds)

    def passed(self, stage: Stage) -> int:
        """Items out of `stage` so far (validation and calibration: items in)."""
        counts = self.counts[stage]
        return counts.n_in if stage in (Stage.VALIDATE, Stage.CALIBRATE) else counts.n_out

    def rows(self, *, items: int, verified: int, wall: float) -> tuple[FunnelRow, ...]:
        """Per stage: in, out, yield, median seconds, tokens, cost; then the verified line."""
        rows = [FunnelRow(stage=stage.value, n_in=c.n_in, n_out=c.n_out,
                          yield_=round(c.n_out / c.n_in, 4) if c.n_in else None,
                          median_seconds=round(statistics.median(c.seconds), 4)
                          if c.seconds else None,
                          tokens=c.tokens, cost_usd=round(c.cost_usd, 6))
                for stage, c in self.counts.items()]
        tokens = sum(c.tokens for c in self.counts.values())
        cost = sum(c.cost_usd for c in self.counts.values())
        rows.append(FunnelRow(
            stage="verified", n_in=items, n_out=verified,
            yield_=round(verified / items, 4) if items else None,
            median_seconds=round(wall / verified, 4) if verified else None,
            tokens=tokens // verified if verified else tokens,
            cost_usd=round(cost / verified, 6) if verified else round(cost, 6)))
        return tuple(rows)
