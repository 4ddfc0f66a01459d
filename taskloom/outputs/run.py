"""Read a finished (or interrupted) run directory for exports and reports.

A run directory is the run store (`run.duckdb`, `run.payloads`) plus `tasks/` (see
`taskloom.pipeline.runner`). `load_run` reads what every output needs in one pass over the
store: the run row, the exported tasks in item order, why every other item was left out,
the funnel, and failed checks with an example log per reason. `run_metrics` adds the corpus
diversity metrics of `taskloom.metrics.corpus` computed from the store and the task
folders.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from taskloom.errors import InputError
from taskloom.metrics.corpus import CorpusMetrics, TaskRecord, corpus_metrics
from taskloom.models import Frozen

OVER_TARGET = "over target: accepted after the run had its --count tasks"


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


class CheckResult(Frozen):
    """One check of one validation, as stored in the verdicts table."""

    item: int = Field(description="Item index.")
    round: int = Field(description="Validation round.")
    task_id: str = Field(description="Task id.")
    check: str = Field(description="Check name.")
    passed: bool = Field(description="Whether it passed.")
    reason: str | None = Field(description="Reason code of a failure.")
    details: str = Field(description="What happened, in a sentence.")
    log: str = Field(description="Log excerpt (up to 4000 characters).")
    seconds: float = Field(description="Seconds the check took.")


class LeftOut(Frozen):
    """Items of one kind that are not in the dataset."""

    status: str = Field(description="Item status: rejected, failed, duplicate, error, "
                                     "accepted (over target) or unfinished.")
    reason: str = Field(description="Why, as stored (reason codes of a rejection).")
    count: int = Field(description="How many items.")
    items: tuple[int, ...] = Field(description="Their item indices (the first ten).")


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
    failed_checks: tuple[CheckResult, ...] = Field(
        description="Failed checks of every validation round, by item and round.")

    @property
    def left_out_total(self) -> int:
        """Items planned but not in the dataset."""
        return sum(group.count for group in self.left_out)


def load_run(root: Path | str) -> RunData:
    """Read a run directory.

    Raises:
        InputError: The folder holds no run store, or the store holds no run.
    """
    from taskloom.pipeline.runner import STORE_NAME
    from taskloom.pipeline.store import RunStore

    root = Path(root)
    with RunStore(root / STORE_NAME, read_only=True) as store:
        row = store.run_row()
        if row is None:
            raise InputError("the run store holds no run", path=root / STORE_NAME,
                             fix="pass a run directory written by `taskloom generate`")
        version = store.query("SELECT taskloom_version FROM run")[0][0]
        tasks = store.query("SELECT item, task_id, folder, fingerprint, scenario, skills, "
                            "categories, difficulty, round FROM tasks ORDER BY item")
        items = store.query("SELECT item, status, reason FROM items ORDER BY item")
        funnel = store.query("SELECT stage, n_in, n_out, yield, median_seconds, tokens, "
                             "cost_usd FROM funnel ORDER BY position")
        costs = store.query("SELECT stage, count(*), sum(seconds), "
                            "sum(tokens_in + tokens_out), sum(cost_usd) FROM results "
                            "GROUP BY stage")
        checks = store.query('SELECT item, round, task_id, "check", passed, reason, details, '
                             "log, seconds FROM verdicts WHERE NOT passed "
                             "ORDER BY item, round")
    run = RunInfo(id=row["id"], created=row["created"], status=row["status"],
                  target=row["target"], seed=row["seed"], backend=row["backend"],
                  taskloom_version=version or "", config=row["config"])
    exported = tuple(
        RunTask(item=item, task_id=task_id, folder=(root / folder).resolve(),
                fingerprint=fingerprint, scenario=scenario, skills=tuple(json.loads(skills)),
                categories=tuple(json.loads(categories or "[]")),
                difficulty=json.loads(difficulty or "{}"), round=round_)
        for item, task_id, folder, fingerprint, scenario, skills, categories, difficulty,
        round_ in tasks)
    order = {stage: i for i, stage in enumerate(("plan", "generate", "validate", "refine",
                                                  "filter", "export"))}
    return RunData(
        root=root.resolve(), run=run, tasks=exported, items=len(items),
        statuses=_count_statuses(items), left_out=_left_out(items, {t.item for t in exported}),
        funnel=tuple(FunnelRow(stage=s, n_in=i or 0, n_out=o or 0, yield_=y,
                               median_seconds=m, tokens=t or 0, cost_usd=c or 0.0)
                     for s, i, o, y, m, t, c in funnel),
        stage_costs=tuple(sorted((StageCost(stage=s, results=n, seconds=sec or 0.0,
                                            tokens=int(t or 0), cost_usd=c or 0.0)
                                  for s, n, sec, t, c in costs),
                                 key=lambda cost: order.get(cost.stage, 99))),
        failed_checks=tuple(CheckResult(item=i, round=r, task_id=t or "", check=c,
                                        passed=p, reason=reason, details=d or "",
                                        log=log or "", seconds=sec or 0.0)
                            for i, r, t, c, p, reason, d, log, sec in checks))


def _count_statuses(items: list[tuple]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for _, status, _ in items:
        counts[status or "unfinished"] += 1
    return dict(sorted(counts.items()))


def _left_out(items: list[tuple], exported: set[int]) -> tuple[LeftOut, ...]:
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for item, status, reason in items:
        if item in exported:
            continue
        if status == "accepted":
            groups[("accepted", OVER_TARGET)].append(item)
        elif status in ("failed", "error"):
            # "generate: <message>": the stage that failed, then what it said.
            stage, _, message = (reason or "").partition(":")
            groups[(status, f"{stage}: {message.strip()}" if message else stage)].append(item)
        else:
            groups[(status or "unfinished", reason or "")].append(item)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return tuple(LeftOut(status=status, reason=reason, count=len(indices),
                         items=tuple(indices[:10]))
                 for (status, reason), indices in ordered)


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
