"""What the run store answers: frozen rows of a run, for the runner, outputs and the CLI.

`RunStore`'s typed reads return these; nothing outside the store reads its tables. Item
statuses and stage names are the enums of `taskloom.pipeline.stages`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import Field

from taskloom.models import Calibration, Frozen, Verdict


class Stage(StrEnum):
    """The stages of a batch run, in funnel order."""

    PLAN = "plan"
    GENERATE = "generate"
    VALIDATE = "validate"
    REFINE = "refine"
    CALIBRATE = "calibrate"
    FILTER = "filter"
    EXPORT = "export"


class ItemStatus(StrEnum):
    """Where an item ended (an item in flight has none)."""

    ACCEPTED = "accepted"    # passed validation (exported unless filtered or over target)
    REJECTED = "rejected"    # failed validation (or its repair was unusable)
    FAILED = "failed"        # no blueprint or no draft could be made
    DUPLICATE = "duplicate"  # dropped by the corpus filter
    OUT_OF_BAND = "out_of_band"  # accepted, but the calibration model's pass rate is outside
                                 # the band (always or never solved)
    ERROR = "error"          # the infrastructure failed; the stage reruns on resume


class RunInfo(Frozen):
    """The run row of the store."""

    id: str = Field(description="Run id.")
    created: float = Field(description="Unix time the run started.")
    status: str = Field(description="running, finished, interrupted or failed.")
    target: int = Field(description="Verified tasks wanted (--count).")
    seed: int = Field(description="Run seed.")
    backend: str = Field(description="procedural, llm or hybrid.")
    taskloom_version: str = Field(description="taskloom version that wrote the run.")
    config: dict[str, Any] = Field(description="The run config, as JSON.")

    @property
    def created_iso(self) -> str:
        """Creation time as an ISO 8601 UTC timestamp."""
        return datetime.fromtimestamp(self.created, UTC).isoformat(timespec="seconds")


class RunTask(Frozen):
    """One exported task and what the store knows about it."""

    item: int = Field(description="Item index in the run.")
    task_id: str = Field(description="Task id (folder name).")
    folder: Path = Field(description="Absolute path of the Harbor task folder.")
    fingerprint: str = Field(description="Content fingerprint of the task.")
    scenario: str = Field(description="Scenario id.")
    skills: tuple[str, ...] = Field(description="Skill ids in workflow order.")
    categories: tuple[str, ...] = Field(description="Skill categories of the task.")
    difficulty: dict[str, int] = Field(description="Difficulty vector by dimension.")
    round: int = Field(description="Validation round it was accepted in (0 = first draft).")


class ItemRecord(Frozen):
    """One item's state as stored."""

    item: int = Field(description="Item index.")
    stage: Stage | None = Field(description="The stage it reached (or failed at).")
    status: ItemStatus | None = Field(description="Where it ended; None while in flight.")
    reason: str | None = Field(description="Why it ended so: the failing stage's message, "
                                           "the reason codes of a rejection, or the "
                                           "corpus filter's verdict.")


class StoredVerdict(Frozen):
    """A verdict of one validation round of an item, as the verdicts table keeps it."""

    item: int = Field(description="Item index.")
    round: int = Field(description="Validation round.")
    task_id: str = Field(description="Task id.")
    verdict: Verdict = Field(description="The verdict (its log cut to 4000 characters).")


class FunnelRow(Frozen):
    """One line of the run's funnel."""

    stage: str = Field(description="Stage name, or 'verified' for the per-task line.")
    n_in: int = Field(description="Items in.")
    n_out: int = Field(description="Items out.")
    yield_: float | None = Field(description="n_out / n_in.")
    median_seconds: float | None = Field(description="Median seconds per item (the "
                                                     "'verified' line: wall seconds per task).")
    tokens: int = Field(description="Tokens (the 'verified' line: per verified task).")
    cost_usd: float = Field(description="Dollars (the 'verified' line: per verified task).")


class StageCost(Frozen):
    """Machine time and model usage one stage spent over the whole run."""

    stage: str = Field(description="Stage name.")
    results: int = Field(description="Stage results computed.")
    seconds: float = Field(description="Seconds of work, summed over results.")
    tokens: int = Field(description="Tokens in and out.")
    cost_usd: float = Field(description="Dollars.")


class StoredResult(Frozen):
    """A stage result found by its content key."""

    status: str = Field(description="ok, rejected or error.")
    reason: str | None = Field(description="Why the stage rejected or failed.")
    payload: Any = Field(description="The stage's value as JSON data (None unless ok).")
    seconds: float = Field(description="Seconds the stage took.")
    tokens_in: int = Field(description="Prompt tokens.")
    tokens_out: int = Field(description="Completion tokens.")
    cost_usd: float = Field(description="Dollars.")


class CalibratedItem(Frozen):
    """One item the calibration stage measured, with what its plan asked for."""

    item: int = Field(description="Item index.")
    task_id: str | None = Field(description="Task id.")
    skills: tuple[str, ...] = Field(description="Skill ids in workflow order.")
    difficulty: dict[str, int] = Field(description="Difficulty vector by dimension.")
    calibration: Calibration = Field(description="The pass rate and how it was measured.")
    kept: bool = Field(description="Its pass rate lay in the run's band.")
