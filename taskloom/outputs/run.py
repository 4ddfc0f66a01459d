"""Read a finished (or interrupted) run directory for exports, reports and `runs show`.

A run directory is the run store (`run.duckdb`, `run.payloads`) plus `tasks/` (see
`taskloom.pipeline.store.RunDirectory`). `load_run` reads what every output needs in one
pass over the store's typed reads: the run row, the exported tasks in item order, why every
other item was left out, the funnel, and failed checks with an example log per reason.
`run_metrics` adds the corpus diversity metrics of `taskloom.metrics.corpus` computed from
the store and the task folders.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import Field

from taskloom.errors import StoreError, TaskloomError
from taskloom.metrics.corpus import CorpusMetrics, TaskRecord, corpus_metrics
from taskloom.models import Frozen
from taskloom.pipeline.records import (
    CalibratedItem,
    FunnelRow,
    ItemRecord,
    ItemStatus,
    RunInfo,
    RunTask,
    StageCost,
    StoredVerdict,
)
from taskloom.pipeline.store import RunDirectory

OVER_TARGET = "over target: accepted after the run had its --count tasks"


class LeftOut(Frozen):
    """Items of one kind that are not in the dataset."""

    status: str = Field(description="Item status: rejected, failed, duplicate, error, "
                                     "accepted (over target) or unfinished.")
    stage: str | None = Field(default=None, description="The stage a failed or errored item "
                                                        "stopped at.")
    reason: str = Field(description="Why: the stage and its message for a failure or error, "
                                    "the reason codes of a rejection, the filter's verdict.")
    count: int = Field(description="How many items.")
    items: tuple[int, ...] = Field(description="Their item indices (the first ten).")


class RunData(Frozen):
    """Everything outputs read from one run directory."""

    root: Path = Field(description="The run directory.")
    run: RunInfo = Field(description="The run row.")
    tasks: tuple[RunTask, ...] = Field(description="Exported tasks, by item.")
    items: int = Field(description="Items the run planned.")
    statuses: dict[str, int] = Field(description="Items by final status.")
    left_out: tuple[LeftOut, ...] = Field(description="Items not in the dataset, by reason.")
    funnel: tuple[FunnelRow, ...] = Field(description="The funnel, in stage order.")
    stage_costs: tuple[StageCost, ...] = Field(description="Work per stage.")
    failed_checks: tuple[StoredVerdict, ...] = Field(
        description="Failed checks of every validation round, by item and round.")
    calibrations: tuple[CalibratedItem, ...] = Field(
        default=(), description="Items the calibration stage measured (kept or not).")

    @property
    def calibration_spread(self) -> tuple[str, int, dict[int, int]]:
        """(models, k, {attempts passed: tasks}) over the calibrated items, every count shown."""
        k = max((row.calibration.k for row in self.calibrations), default=0)
        passes = {n: 0 for n in range(k + 1)}
        for row in self.calibrations:
            passes[row.calibration.passes] += 1
        return ", ".join(sorted({row.calibration.model for row in self.calibrations})), k, passes

    @property
    def left_out_total(self) -> int:
        """Items planned but not in the dataset."""
        return sum(group.count for group in self.left_out)


def load_run(root: Path | str) -> RunData:
    """Read a run directory.

    Raises:
        StoreError: The folder holds no run store, or the store holds no run.
    """
    directory = RunDirectory(Path(root))
    with directory.open(read_only=True) as store:
        run = store.run()
        if run is None:
            raise StoreError("the run store holds no run", path=directory.store_path,
                             fix="pass a run directory written by `taskloom generate`")
        tasks = store.tasks()
        items = store.items()
        funnel = store.funnel()
        costs = store.stage_costs()
        failed = store.verdicts(failed_only=True)
        calibrations = store.calibrations()
    return RunData(root=directory.root.resolve(), run=run, tasks=tasks, items=len(items),
                   statuses=_count_statuses(items),
                   left_out=_left_out(items, {t.item for t in tasks}), funnel=funnel,
                   stage_costs=costs, failed_checks=failed, calibrations=calibrations)


def _count_statuses(items: tuple[ItemRecord, ...]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for item in items:
        counts[item.status or "unfinished"] += 1
    return dict(sorted(counts.items()))


def _left_out(items: tuple[ItemRecord, ...], exported: set[int]) -> tuple[LeftOut, ...]:
    groups: dict[tuple[str, str | None, str], list[int]] = defaultdict(list)
    for item in items:
        if item.item in exported:
            continue
        status = item.status or "unfinished"
        if status == ItemStatus.ACCEPTED:
            groups[(status, None, OVER_TARGET)].append(item.item)
        elif status in (ItemStatus.FAILED, ItemStatus.ERROR):
            reason = f"{item.stage}: {item.reason}" if item.reason else str(item.stage)
            groups[(status, item.stage, reason)].append(item.item)
        else:
            groups[(status, None, item.reason or "")].append(item.item)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0][0], kv[0][2]))
    return tuple(LeftOut(status=status, stage=stage, reason=reason, count=len(indices),
                         items=tuple(indices[:10]))
                 for (status, stage, reason), indices in ordered)


def load_graph_of(run: RunInfo):
    """The skill graph the run planned on (the shipped graph plus the run's extra files)."""
    from taskloom.skill_graph.model import load_graph

    return load_graph([Path(p) for p in run.config.get("graph", [])])


def task_records(data: RunData) -> list[TaskRecord]:
    """Coverage records of the exported tasks (solutions read from the task folders)."""
    records = []
    for task in data.tasks:
        solve = task.folder / "solution" / "solve.sh"
        records.append(TaskRecord(
            task_id=task.task_id, scenario=task.scenario, skills=task.skills,
            solution=solve.read_text(encoding="utf-8", errors="replace")
            if solve.is_file() else ""))
    return records


def run_metrics(data: RunData, graph=None) -> CorpusMetrics:
    """Diversity metrics of a run's dataset.

    Near-duplicates are the items the corpus filter dropped (status 'duplicate'); the
    items it saw are those plus the exported tasks.
    """
    graph = graph or load_graph_of(data.run)
    outcomes = ["accepted"] * len(data.tasks) + ["duplicate"] * data.statuses.get("duplicate",
                                                                                   0)
    return corpus_metrics(task_records(data), graph, outcomes)


class RunListing(Frozen):
    """One run found under a folder, as `taskloom runs list` shows it."""

    path: Path = Field(description="The run directory, relative to the folder searched.")
    run: RunInfo | None = Field(default=None, description="Its run row (None: unreadable).")
    verified: int = Field(default=0, description="Tasks exported.")
    items: int = Field(default=0, description="Items planned.")
    problem: str | None = Field(default=None, description="Why the store cannot be read.")


def list_runs(root: Path) -> list[RunListing]:
    """Every run directory under `root`, with its row and counts (unreadable ones say why)."""
    listings = []
    for directory in RunDirectory.below(root):
        where = directory.root.relative_to(root)
        try:
            with directory.open(read_only=True) as store:
                listings.append(RunListing(path=where, run=store.run(),
                                           verified=len(store.task_folders()),
                                           items=len(store.items())))
        except TaskloomError as exc:
            listings.append(RunListing(path=where, problem=exc.reason))
    return listings
