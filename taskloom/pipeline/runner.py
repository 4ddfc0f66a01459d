"""The batch runner: items stream through plan → generate → validate ⇄ refine → filter → export.

The driver (this module, one thread) owns the run store; workers only compute. For each
item it looks up the next stage's result by content key; a hit is reused, a miss is
submitted to the executor. At most `window` items are in flight, so memory stays flat
whatever the run size. Items are finalized (filtered, exported) strictly in index order,
and the dataset is the first `count` accepted items by index: a killed and resumed run
therefore produces exactly the dataset of an uninterrupted one.
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import time
import uuid
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from taskloom.config import RunConfig, with_llm_environment
from taskloom.errors import InfrastructureError, StoreError
from taskloom.generators.llm.exchange import Recorded
from taskloom.generators.protocols import Blueprint, Draft
from taskloom.harbor import write_task_folder
from taskloom.metrics.corpus import CorpusMetrics
from taskloom.models import TaskReport
from taskloom.pipeline import stages
from taskloom.pipeline.allocator import keep_large_buffers_out_of_heap
from taskloom.pipeline.corpus_filter import CorpusFilter
from taskloom.pipeline.executors import Executor, make_executor
from taskloom.pipeline.store import RunStore
from taskloom.skill_graph.steering import CoverageSnapshot, CoverageTracker

STORE_NAME = "run.duckdb"
TASKS_DIR = "tasks"
MAX_CONSECUTIVE_INFRA_ERRORS = 5
STAGES = ("plan", "generate", "validate", "refine", "filter", "export")


class Progress(Protocol):
    """Receives counts as the run advances (the CLI draws bars; tests may ignore it)."""

    def update(self, stage: str, done: int, total: int | None) -> None:
        """`done` items have passed `stage` (of `total` when known)."""
        ...


class _Silent:
    def update(self, stage: str, done: int, total: int | None) -> None:
        pass


@dataclass
class Item:
    """An item in flight."""

    index: int
    stage: str = "plan"
    round: int = 0
    blueprint: Blueprint | None = None
    draft: Draft | None = None
    report: TaskReport | None = None
    status: str | None = None  # accepted, rejected, failed, error
    reason: str | None = None
    coverage: CoverageSnapshot | None = None  # what its plan was steered by


@dataclass
class StageStats:
    """Counts and timings of one stage in this run."""

    n_in: int = 0
    n_out: int = 0
    seconds: list[float] = field(default_factory=list)
    tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class RunSummary:
    """What a run produced."""

    out: Path
    exported: int
    target: int
    items: int
    funnel: list[dict]
    seconds: float
    status: str
    metrics: CorpusMetrics | None = None  # diversity of the dataset (metrics.corpus)


class Runner:
    """Runs (or resumes) one batch run into `out/` (run.duckdb, run.payloads, tasks/)."""

    def __init__(self, config: RunConfig, out: Path, *, resume: bool = False,
                 progress: Progress | None = None, executor: Executor | None = None) -> None:
        self.config = with_llm_environment(config)  # model and server named once, stored
        self.out = Path(out)
        self.resume = resume
        self.progress = progress or _Silent()
        self.executor = executor
        self.keys = stages.StageKeys(self.config)
        self.stats = {stage: StageStats() for stage in STAGES}

    def run(self) -> RunSummary:
        """Run to completion; KeyboardInterrupt stops cleanly (the store says how far)."""
        store_path = self.out / STORE_NAME
        if store_path.exists() and not self.resume:
            raise StoreError("a run already exists here", path=self.out,
                             fix=f"resume it with `taskloom generate --resume --out "
                                 f"{self.out}`, or choose another --out")
        keep_large_buffers_out_of_heap()  # else peak memory creeps with run length
        diversity = self.config.diversity
        embedder = None
        if diversity.embeds:  # before any file exists: a missing extra fails cleanly
            from taskloom.embedding import load_embedder

            embedder = load_embedder(diversity.model, download=diversity.download)
        (self.out / TASKS_DIR).mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        from importlib.metadata import version

        with RunStore(store_path) as store:
            self.store = store
            previous = store.run_row()
            run_id = previous["id"] if previous else uuid.uuid4().hex[:12]
            store.start_run(run_id, self.config.model_dump(mode="json"),
                            target=self.config.count, seed=self.config.seed,
                            backend=self.config.backend, version=version("taskloom"))
            self.executor = self.executor or make_executor(
                self.config.executor, self.config.workers, self.config.ray_address)
            status = "finished"
            try:
                self.corpus_filter = CorpusFilter(diversity, store, embedder)
                self._loop()
            except KeyboardInterrupt:
                status = "interrupted"
                self.executor.shutdown(cancel=True)
                store.set_status(status, "Ctrl-C")
                raise
            except BaseException as exc:
                self.executor.shutdown(cancel=True)
                store.set_status("failed", str(exc)[:500])
                raise
            self.executor.shutdown(cancel=False)
            funnel = self._funnel(time.monotonic() - started)
            store.write_funnel(funnel)
            store.set_status(status, f"{self.exported} of {self.config.count} tasks")
        from taskloom.outputs.run import load_run, run_metrics

        return RunSummary(out=self.out, exported=self.exported, target=self.config.count,
                          items=self.next_index, funnel=funnel,
                          seconds=time.monotonic() - started, status=status,
                          metrics=run_metrics(load_run(self.out)))

    # -- the loop -----------------------------------------------------------------------

    def _loop(self) -> None:
        config = self.config
        window = max(4, 3 * config.workers)
        self.items: dict[int, Item] = {}
        self.futures: dict[Future, tuple[int, str, str, float]] = {}
        self.next_index = 0
        self.frontier = 0
        self.exported = 0
        self.infra_errors: Counter[str] = Counter()  # consecutive, by stage
        # What earlier runs left in the store, so changed outcomes can be undone.
        self.stored_folders = dict(self.store.query("SELECT item, folder FROM tasks"))
        self.stored_duplicates = {row[0] for row in self.store.query(
            "SELECT DISTINCT item FROM verdicts WHERE \"check\" = 'duplicate'")}
        self.coverage = CoverageTracker()
        self.coverage_before = 0
        while True:
            while (self.exported < config.count and len(self.items) < window
                   and self.next_index < config.item_limit
                   and self._may_plan(self.next_index)):
                item = Item(self.next_index, coverage=self._coverage_for(self.next_index))
                self.items[item.index] = item
                self.next_index += 1
                self._advance(item)
            self._finalize()
            if not self.futures:
                if all(i.status for i in self.items.values()) and (
                        self.exported >= config.count or self.next_index >= config.item_limit):
                    self._finalize()
                    return
                continue
            done, _ = wait(list(self.futures), timeout=1.0, return_when=FIRST_COMPLETED)
            for future in done:
                self._collect(future)

    def _advance(self, item: Item) -> None:
        """Move an item forward through cached results until it needs real work."""
        while item.status is None:
            stage, key = self._next_key(item)
            cached = self.store.result(key)
            if cached is None or cached["status"] == "error":
                self._submit(item, stage, key)
                return
            self._apply(item, stage, cached["status"], cached["reason"], cached["payload"],
                        cached["seconds"], cached["tokens_in"] + cached["tokens_out"],
                        cached["cost_usd"])

    def _next_key(self, item: Item) -> tuple[str, str]:
        if item.stage == "plan":
            return "plan", self.keys.plan(item.index, item.coverage)
        if item.stage == "generate":
            return "generate", self.keys.generate(item.blueprint)
        if item.stage == "validate":
            return "validate", self.keys.validate(item.draft)
        return "refine", self.keys.refine(item.draft, item.report, item.round)

    def _submit(self, item: Item, stage: str, key: str) -> None:
        config = self.config
        function, args = {
            "plan": (functools.partial(stages.plan, coverage=item.coverage),
                     (config, item.index)),
            "generate": (stages.generate, (config, item.blueprint)),
            "validate": (stages.validate, (config, item.draft)),
            "refine": (stages.refine, (config, item.draft, item.report)),
        }[stage]
        if stages.uses_llm(config, stage):  # replay what this item already paid for
            args = (*args, self.store.exchanges(item.index))
        future = self.executor.submit(stage, function, *args)
        self.futures[future] = (item.index, stage, key, time.monotonic())

    def _collect(self, future: Future) -> None:
        from taskloom.errors import NoDraft

        index, stage, key, started = self.futures.pop(future)
        item = self.items[index]
        seconds = time.monotonic() - started
        exchanges, usage = (), None
        try:
            value = future.result()
            if isinstance(value, Recorded):  # an LLM stage: its exchanges go to llm_cache
                exchanges, usage = value.exchanges, value.usage
                value = value.unwrap()
        except NoDraft as exc:
            status, reason, payload = "rejected", f"{stage}: {exc}", None
        except (InfrastructureError, OSError) as exc:
            self.infra_errors[stage] += 1
            item.status, item.reason = "error", f"{stage}: {exc}"
            with self.store.transaction() as db:
                self.store.put_item(db, index, stage=stage, status="error", reason=item.reason)
                self.store.put_exchanges(db, index, stage, exchanges)
            if self.infra_errors[stage] >= MAX_CONSECUTIVE_INFRA_ERRORS:
                raise InfrastructureError(f"{self.infra_errors[stage]} infrastructure failures "
                                          f"in a row at {stage}; last: {exc}",
                                          fix=getattr(exc, "fix", None) or
                                          "fix the sandbox engine (`taskloom doctor`), "
                                          "then resume") from exc
            return
        else:
            # Per stage: plans that still work must not hide a sandbox that is down.
            self.infra_errors[stage] = 0
            status, reason, payload = "ok", None, value.model_dump_json()
        if usage is None and status == "ok":
            usage = getattr(value, "usage", None)
        tokens_in, tokens_out = (usage.tokens_in, usage.tokens_out) if usage else (0, 0)
        cost = usage.cost_usd if usage else 0.0
        # One commit for the result and what it changes (item, verdicts); the fresh value
        # goes on as it is (a draft can hold megabytes: no JSON round trip).
        with self.store.transaction() as db:
            self.store.put_result(db, key=key, stage=stage, version=self._version(stage),
                                  item=index, round_=item.round, status=status, reason=reason,
                                  payload=payload, seconds=seconds, tokens_in=tokens_in,
                                  tokens_out=tokens_out, cost_usd=cost)
            self.store.put_exchanges(db, index, stage, exchanges)
            self._apply(item, stage, status, reason, value if payload else None,
                        seconds, tokens_in + tokens_out, cost)
        self._advance(item)

    def _version(self, stage: str) -> str:
        return {"plan": stages.PLAN_VERSION, "generate": stages.generator_version(self.config),
                "validate": stages.VALIDATE_VERSION, "refine": stages.REFINE_VERSION}[stage]

    def _apply(self, item: Item, stage: str, status: str, reason: str | None,
               payload: object, seconds: float, tokens: int, cost: float) -> None:
        """Record a stage outcome on the item (and in the store's item/verdict tables).

        `payload` is the stage's value: a model fresh from a worker, or the stored JSON
        (model_validate returns a model unchanged).
        """
        stats = self.stats[stage]
        stats.seconds.append(seconds or 0.0)
        stats.tokens += tokens or 0
        stats.cost_usd += cost or 0.0
        if stage == "refine" and item.round == 0:
            stats.n_in += 1  # items that needed at least one repair
        elif stage != "refine" and not (stage == "validate" and item.round > 0):
            stats.n_in += 1
        if status != "ok":
            item.status = "failed" if stage in ("plan", "generate") else "rejected"
            item.reason = reason
            self._record(item)
            return
        if stage == "plan":
            stats.n_out += 1
            item.blueprint = Blueprint.model_validate(payload)
            item.stage = "generate"
        elif stage == "generate":
            stats.n_out += 1
            item.draft = Draft.model_validate(payload)
            item.stage = "validate"
        elif stage == "refine":
            item.draft = Draft.model_validate(payload)
            item.round += 1
            item.stage = "validate"
        else:
            item.report = TaskReport.model_validate(payload)
            with self.store.transaction() as db:
                self.store.put_verdicts(db, item.index, item.round, item.report.task,
                                        item.report.verdicts)
            if item.report.accepted:
                item.status = "accepted"
                if item.round == 0:
                    stats.n_out += 1
                else:
                    self.stats["refine"].n_out += 1
            elif item.round < self.config.refine_rounds:
                item.stage = "refine"
            else:
                item.status = "rejected"
                item.reason = ", ".join(str(r) for r in item.report.reasons)
        if item.status:
            self._record(item)
        else:
            with self.store.transaction() as db:
                self.store.put_item(db, item.index, stage=item.stage, status=None)
            self._report_progress()

    def _record(self, item: Item) -> None:
        blueprint = item.blueprint
        draft = item.draft
        with self.store.transaction() as db:
            self.store.put_item(
                db, item.index, stage=item.stage, status=item.status, reason=item.reason,
                task_id=draft.task.name if draft else None,
                fingerprint=stages.draft_fingerprint(draft) if draft else None,
                scenario=blueprint.scenario if blueprint else None,
                skills=list(blueprint.path) if blueprint else None,
                difficulty=blueprint.difficulty.model_dump() if blueprint else None,
                rounds=item.round)
        self._report_progress()

    def _finalize(self) -> None:
        """Filter and export finished items in index order."""
        while self.frontier in self.items and self.items[self.frontier].status:
            item = self.items.pop(self.frontier)
            self.frontier += 1
            if item.status != "accepted":  # an earlier run may have filtered it
                self._drop_stale_export(item.index)
                self._drop_stale_duplicate(item.index)
                continue
            if self.exported >= self.config.count:
                continue
            filter_stats = self.stats["filter"]
            filter_stats.n_in += 1
            verdict = self.corpus_filter.admit(item.index, item.draft)
            if verdict is not None:
                with self.store.transaction() as db:
                    self.store.put_item(db, item.index, status="duplicate",
                                        reason=verdict.details)
                    self.store.put_filter_verdict(db, item.index, item.round,
                                                  item.draft.task.name, verdict)
                self._drop_stale_export(item.index)
                continue
            filter_stats.n_out += 1
            self._export(item, stages.draft_fingerprint(item.draft))
        self._report_progress()

    def _drop_stale_export(self, index: int, keep: str | None = None) -> None:
        """Forget an earlier run's export of an item: its tasks row and folder.

        `keep` is the folder the item is exported to now: its row is then replaced by the
        caller and only a folder of another name is removed.
        """
        folder = self.stored_folders.pop(index, None)
        if folder is None:
            return
        if keep is None:
            with self.store.transaction() as db:
                self.store.drop_task(db, index)
        if folder != keep:
            stale = (self.out / folder).resolve()
            if stale.parent == (self.out / TASKS_DIR).resolve() and stale.is_dir():
                shutil.rmtree(stale)

    def _drop_stale_duplicate(self, index: int) -> None:
        """Forget an earlier run's duplicate verdict of an item that is not a duplicate now."""
        if index in self.stored_duplicates:
            self.stored_duplicates.discard(index)
            with self.store.transaction() as db:
                self.store.put_filter_verdict(db, index, 0, "", None)

    def _may_plan(self, index: int) -> bool:
        """With steering, item i is planned only once items < i - lag are all finalized."""
        diversity = self.config.diversity
        return not diversity.steering or self.frontier >= index - diversity.steering_lag

    def _coverage_for(self, index: int) -> CoverageSnapshot | None:
        """What the exported tasks among items < index - lag cover (read from the store)."""
        diversity = self.config.diversity
        if not diversity.steering:
            return None
        before = max(0, index - diversity.steering_lag)
        if before > self.coverage_before:
            for _, scenario, skills in self.store.exported_tasks(self.coverage_before, before):
                self.coverage.add(skills, scenario)
            self.coverage_before = before
        return self.coverage.snapshot(before)

    def _export(self, item: Item, fingerprint: str) -> None:
        started = time.monotonic()
        task = item.draft.task
        folder = self.out / TASKS_DIR / task.name
        write_task_folder(task, folder)
        blueprint = item.blueprint
        metadata = task.config.metadata
        self._drop_stale_export(item.index, keep=os.path.relpath(folder, self.out))
        self._drop_stale_duplicate(item.index)
        with self.store.transaction() as db:
            self.store.put_task(db, item=item.index, task_id=task.name,
                                folder=os.path.relpath(folder, self.out),
                                fingerprint=fingerprint, scenario=blueprint.scenario,
                                skills=list(blueprint.path),
                                categories=list(metadata.get("categories", [])),
                                difficulty=blueprint.difficulty.model_dump(),
                                round_=item.round)
        self.exported += 1
        stats = self.stats["export"]
        stats.n_in += 1
        stats.n_out += 1
        stats.seconds.append(time.monotonic() - started)

    def _report_progress(self) -> None:
        limit = self.config.item_limit
        self.progress.update("plan", self.stats["plan"].n_out, limit)
        self.progress.update("generate", self.stats["generate"].n_out, None)
        self.progress.update("validate", self.stats["validate"].n_in, None)
        self.progress.update("export", self.exported, self.config.count)

    def _funnel(self, wall: float) -> list[dict]:
        """Per stage: in, out, yield, median seconds, tokens, cost; then the verified line."""
        rows = []
        for stage in STAGES:
            stats = self.stats[stage]
            rows.append({
                "stage": stage, "in": stats.n_in, "out": stats.n_out,
                "yield": round(stats.n_out / stats.n_in, 4) if stats.n_in else None,
                "median_seconds": round(statistics.median(stats.seconds), 4)
                if stats.seconds else None,
                "tokens": stats.tokens, "cost_usd": round(stats.cost_usd, 6)})
        verified = self.exported
        tokens = sum(s.tokens for s in self.stats.values())
        cost = sum(s.cost_usd for s in self.stats.values())
        rows.append({"stage": "verified", "in": self.next_index, "out": verified,
                     "yield": round(verified / self.next_index, 4) if self.next_index else None,
                     "median_seconds": round(wall / verified, 4) if verified else None,
                     "tokens": tokens // verified if verified else tokens,
                     "cost_usd": round(cost / verified, 6) if verified else round(cost, 6)})
        return rows


def run_dir_for(config: RunConfig, root: Path = Path("runs")) -> Path:
    """Default output directory for a run: runs/<backend>-seed<seed>-n<count>."""
    return root / f"{config.backend}-seed{config.seed}-n{config.count}"

