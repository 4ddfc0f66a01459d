"""The batch runner: items stream through plan → generate → validate ⇄ refine → filter → export.

The driver (this module, one thread) owns the run store; workers only compute. For each
item it looks up the result of the stage the item is at by content key; a hit is reused,
a miss is submitted to the executor; either way the outcome moves the item on through
`items.advance`. At most `window` items are in flight, so memory stays flat whatever the
run size. Items are finalized (filtered, exported) strictly in index order, and the
dataset is the first `count` accepted items by index: a killed and resumed run therefore
produces exactly the dataset of an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from taskloom.config import DiversityConfig, RunConfig, with_llm_environment
from taskloom.errors import InfrastructureError, StoreError
from taskloom.pipeline import stages
from taskloom.pipeline.allocator import keep_large_buffers_out_of_heap
from taskloom.pipeline.corpus_filter import CorpusFilter
from taskloom.pipeline.executors import Executor, make_executor
from taskloom.pipeline.exporter import Exporter
from taskloom.pipeline.funnel import Funnel
from taskloom.pipeline.items import STAGE_TABLE, ItemState, advance, stored_outcome
from taskloom.pipeline.preflight import check_run_config
from taskloom.pipeline.records import FunnelRow, ItemStatus, Stage
from taskloom.pipeline.stages import Outcome, StageOutcome
from taskloom.pipeline.store import RunDirectory, RunStore
from taskloom.skill_graph.steering import CoverageSnapshot, CoverageTracker

MAX_CONSECUTIVE_INFRA_ERRORS = 5


class Progress(Protocol):
    """Receives counts as the run advances (the CLI draws bars; tests may ignore it)."""

    def update(self, stage: str, done: int, total: int | None) -> None:
        """`done` items have passed `stage` (of `total` when known)."""
        ...


class _Silent:
    def update(self, stage: str, done: int, total: int | None) -> None:
        pass


@dataclass(frozen=True)
class RunSummary:
    """What a run produced."""

    out: Path
    exported: int
    target: int
    items: int
    funnel: tuple[FunnelRow, ...]
    seconds: float
    status: str


class StoredCoverage:
    """What a run's exported tasks cover, read from its store as planning moves on.

    Item i is steered by the exported tasks of items below i - `steering_lag`, final by then,
    so a resumed run plans item i as the first pass did. Ask for items in rising order.
    """

    def __init__(self, diversity: DiversityConfig) -> None:
        self.diversity = diversity
        self.tracker = CoverageTracker()
        self.read_before = 0  # the exported tasks of items below it are in the tracker

    def for_item(self, store: RunStore, index: int) -> CoverageSnapshot | None:
        """The snapshot item `index` is planned with (None when the run does not steer)."""
        if not self.diversity.steering:
            return None
        before = max(0, index - self.diversity.steering_lag)
        if before > self.read_before:
            for _, scenario, skills in store.exported_tasks(self.read_before, before):
                self.tracker.add(skills, scenario)
            self.read_before = before
        return self.tracker.snapshot(before)


@dataclass(frozen=True)
class _Submitted:
    index: int
    key: str
    started: float


class Runner:
    """Runs (or resumes) one batch run into `out/` (run.duckdb, run.payloads, tasks/)."""

    def __init__(self, config: RunConfig, out: Path, *, resume: bool = False,
                 progress: Progress | None = None, executor: Executor | None = None) -> None:
        """Check the config against the skill graph (a typo fails here, not mid-run).

        Raises:
            ConfigError: The config names an unknown scenario, skill or check, or needs a
                model and names none.
        """
        check_run_config(config)
        # Model and server named once, stored with the run.
        self.config = with_llm_environment(config) if stages.run_asks_model(config) \
            else config
        self.directory = RunDirectory(Path(out))
        self.resume = resume
        self.progress = progress or _Silent()
        self.executor = executor
        self.keys = stages.StageKeys(self.config)
        self.funnel = Funnel(self.config.calibration)
        self.items: dict[int, ItemState] = {}
        self.futures: dict[Future, _Submitted] = {}
        self.next_index = 0
        self.frontier = 0  # items below it are finalized
        self.exported = 0
        self.infra_errors: Counter[Stage] = Counter()  # consecutive, by stage
        self.coverage = StoredCoverage(self.config.diversity)
        self.ctrl_c = threading.Event()  # set by the first Ctrl-C of a run

    def run(self) -> RunSummary:
        """Run to completion; KeyboardInterrupt stops cleanly (the store says how far)."""
        if self.directory.exists() and not self.resume:
            raise StoreError("a run already exists here", path=self.directory.root,
                             fix=f"resume it with `taskloom generate --resume --out "
                                 f"{self.directory.root}`, or choose another --out")
        keep_large_buffers_out_of_heap()  # else peak memory creeps with run length
        diversity = self.config.diversity
        embedder = None
        if diversity.embeds:  # before any file exists: a missing extra fails cleanly
            from taskloom.embedding import load_embedder

            embedder = load_embedder(diversity.model, download=diversity.download)
        self.directory.tasks.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        from importlib.metadata import version

        with self.directory.open() as store:
            self.store = store
            previous = store.run()
            store.start_run(previous.id if previous else uuid.uuid4().hex[:12],
                            self.config.model_dump(mode="json"), target=self.config.count,
                            seed=self.config.seed, backend=self.config.backend,
                            version=version("taskloom"))
            self.executor = self.executor or make_executor(
                self.config.executor, self.config.workers, self.config.ray_address)
            status = "finished"
            try:
                self.corpus_filter = CorpusFilter(diversity, store, embedder)
                self.exporter = Exporter(self.directory, store)
                with ctrl_c_between_steps() as self.ctrl_c:
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
            funnel = self.funnel.rows(items=self.next_index, verified=self.exported,
                                      wall=time.monotonic() - started)
            store.write_funnel(funnel)
            store.set_status(status, f"{self.exported} of {self.config.count} tasks")
        return RunSummary(out=self.directory.root, exported=self.exported,
                          target=self.config.count, items=self.next_index, funnel=funnel,
                          seconds=time.monotonic() - started, status=status)

    # -- the loop -----------------------------------------------------------------------

    def _loop(self) -> None:
        config = self.config
        window = max(4, 3 * config.workers)
        while True:
            if self.ctrl_c.is_set():
                raise KeyboardInterrupt
            while (self.exported < config.count and len(self.items) < window
                   and self.next_index < config.item_limit
                   and self._may_plan(self.next_index)):
                item = ItemState(self.next_index,
                                 coverage=self.coverage.for_item(self.store, self.next_index))
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

    def _advance(self, item: ItemState) -> None:
        """Move an item forward through cached results until it needs real work."""
        while item.status is None:
            spec = STAGE_TABLE[item.stage]
            key = spec.key(self.keys, item)
            stored = self.store.result(key)
            if stored is None or stored.status == Outcome.ERROR:
                self._submit(item, key)
                return
            item = self._apply(item, stored_outcome(item.stage, stored), stored.seconds)

    def _submit(self, item: ItemState, key: str) -> None:
        function, args = STAGE_TABLE[item.stage].call(self.config, item)
        if stages.asks_model(self.config, item.stage):  # replay what the item paid for
            args = (*args, self.store.exchanges(item.index))
        future = self.executor.submit(item.stage, function, *args)
        self.futures[future] = _Submitted(item.index, key, time.monotonic())

    def _collect(self, future: Future) -> None:
        submitted = self.futures.pop(future)
        item = self.items[submitted.index]
        outcome: StageOutcome = future.result()
        seconds = time.monotonic() - submitted.started
        if outcome.status is Outcome.ERROR:
            self._error(item, outcome)
            return
        self.infra_errors[item.stage] = 0  # a plan that works must not hide a dead sandbox
        usage = outcome.usage
        # One commit for the result and what it changes (item, verdicts); the fresh value
        # goes on as it is (a draft can hold megabytes: no JSON round trip).
        with self.store.transaction():
            self.store.put_result(
                key=submitted.key, stage=item.stage, version=STAGE_TABLE[item.stage].version(
                    self.config), item=item.index, round_=item.round, status=outcome.status,
                reason=outcome.reason or None,
                payload=outcome.value.model_dump_json() if outcome.value is not None else None,
                seconds=seconds, tokens_in=usage.tokens_in, tokens_out=usage.tokens_out,
                cost_usd=usage.cost_usd)
            self.store.put_exchanges(item.index, item.stage, outcome.exchanges)
            item = self._apply(item, outcome, seconds)
        self._advance(item)

    def _error(self, item: ItemState, outcome: StageOutcome) -> None:
        """An infrastructure failure: the item stops here (rerun on resume); too many stop all."""
        stage = item.stage
        self.infra_errors[stage] += 1
        self.items[item.index] = advance(item, outcome, self.config)
        with self.store.transaction():
            self.store.put_item(item.index, stage=stage, status=ItemStatus.ERROR,
                                reason=outcome.reason)
            self.store.put_exchanges(item.index, stage, outcome.exchanges)
        if self.infra_errors[stage] >= MAX_CONSECUTIVE_INFRA_ERRORS:
            raise InfrastructureError(f"{self.infra_errors[stage]} infrastructure failures in "
                                      f"a row at {stage}; last: {outcome.reason}",
                                      fix=outcome.fix or "fix the sandbox engine (`taskloom "
                                                         "doctor`), then resume")

    def _apply(self, item: ItemState, outcome: StageOutcome, seconds: float) -> ItemState:
        """Count an outcome, move the item on, and store what changed about it."""
        self.funnel.record(outcome, round_=item.round, seconds=seconds)
        moved = advance(item, outcome, self.config)
        self.items[item.index] = moved
        with self.store.transaction():
            if outcome.stage is Stage.VALIDATE and moved.report is not None:
                self.store.put_verdicts(item.index, item.round, moved.report.task,
                                        moved.report.verdicts)
            if outcome.stage is Stage.CALIBRATE and moved.calibration is not None:
                self.store.put_calibration(item.index, moved.calibration,
                                           kept=moved.status is ItemStatus.ACCEPTED)
            if moved.status is None:
                self.store.put_item(item.index, stage=moved.stage, status=None)
            else:
                self._record(moved)
        self._report_progress()
        return moved

    def _record(self, item: ItemState) -> None:
        blueprint, draft = item.blueprint, item.draft
        self.store.put_item(
            item.index, stage=item.stage, status=item.status, reason=item.reason,
            task_id=draft.task.name if draft else None,
            fingerprint=stages.draft_fingerprint(draft) if draft else None,
            scenario=blueprint.scenario if blueprint else None,
            skills=list(blueprint.path) if blueprint else None,
            difficulty=blueprint.difficulty.model_dump() if blueprint else None,
            rounds=item.round)

    def _finalize(self) -> None:
        """Filter and export finished items in index order."""
        while self.frontier in self.items and self.items[self.frontier].status:
            item = self.items.pop(self.frontier)
            self.frontier += 1
            if item.status is not ItemStatus.ACCEPTED:  # an earlier run may have exported it
                self.exporter.left_out(item.index)
                continue
            if self.exported >= self.config.count:
                continue
            verdict = self.corpus_filter.admit(item.index, item.draft)
            self.funnel.filtered(kept=verdict is None)
            if verdict is not None:
                self.exporter.duplicate(item, verdict)
                continue
            started = time.monotonic()
            self.exporter.export(item, stages.draft_fingerprint(item.draft))
            self.exported += 1
            self.funnel.exported(time.monotonic() - started)
        self._report_progress()

    def _may_plan(self, index: int) -> bool:
        """With steering, item i is planned only once items < i - lag are all finalized."""
        diversity = self.config.diversity
        return not diversity.steering or self.frontier >= index - diversity.steering_lag

    def _report_progress(self) -> None:
        self.progress.update("plan", self.funnel.passed(Stage.PLAN), self.config.item_limit)
        self.progress.update("generate", self.funnel.passed(Stage.GENERATE), None)
        self.progress.update("validate", self.funnel.passed(Stage.VALIDATE), None)
        if self.config.calibration.enabled:
            self.progress.update("calibrate", self.funnel.passed(Stage.CALIBRATE), None)
        self.progress.update("export", self.exported, self.config.count)


def run_dir_for(config: RunConfig, root: Path = Path("runs")) -> Path:
    """Default output directory for a run: runs/<backend>-seed<seed>-n<count>."""
    return root / f"{config.backend}-seed{config.seed}-n{config.count}"



def stored_config(out: Path) -> dict | None:
    """The config a run in `out` was started with (None when there is no run there yet)."""
    directory = RunDirectory(Path(out))
    if not directory.exists():
        return None
    with directory.open(read_only=True) as store:
        run = store.run()
    return run.config if run is not None else None


@contextlib.contextmanager
def ctrl_c_between_steps() -> Iterator[threading.Event]:
    """The first Ctrl-C sets an event the loop obeys between steps; a second one stops now.

    Python's default raises KeyboardInterrupt wherever the driver is, and inside a DuckDB
    query DuckDB turns it into "RuntimeError: Query interrupted": the run then ended as
    failed (exit 1) instead of interrupted (exit 130). Off the main thread (a runner
    driven by a test's thread) signals cannot be caught, and the default stays.
    """
    event = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event
        return

    def first(signum, frame) -> None:
        event.set()
        signal.signal(signal.SIGINT, previous)

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous)
