"""A run directory and its store: one DuckDB file per run (and its payload file).

`RunDirectory` knows a run folder's files; `RunStore` is the only code that reads or writes
the tables: the runner writes (only the driver, one thread), everyone reads through typed
methods returning the frozen rows of `taskloom.pipeline.records`. `query` is the door for
a user's own SQL (see the README), not for taskloom's code.

Tables:

- `run`        one row: id, created, config (JSON), status, counts.
- `results`    every stage result, keyed by its content fingerprint
               (stage, stage version, input fingerprint, stage config): item, round,
               status (ok / rejected / error), reason, payload (JSON), seconds, tokens, cost;
               a payload over 4 KB (a draft, with its files) is kept zlib-compressed
               in the append-only file `run.payloads` beside the store instead, at
               `payload_at` (offset) and `payload_bytes` (see `PayloadFile`).
               A resumed run looks results up by key, so a stage whose version, input or
               config changed runs again, and so does everything after it.
- `items`      the current state of each item: the stage it reached (or failed at), its
               final status, why (the stage's own message, without the stage name), task
               id and fingerprint, rounds.
- `verdicts`   one row per check of every validation (item, round, check, passed, reason,
               details, log excerpt).
- `tasks`      exported tasks: item, task id, folder, fingerprint, skills, scenario.
- `funnel`     per stage: in, out, yield, median seconds, tokens, cost (written at the end).
- `events`     run history: started, interrupted, resumed, finished (with timestamps).
- `llm_cache`  every model request and answer, keyed by the request's content hash
               (messages, answer schema, prompt fingerprint, model settings): item, stage,
               purpose, model, the exchange (JSON), tokens, cost. Stages that ask a model
               get their item's rows back as a replay map, so nothing is paid twice.
- `calibrations` one row per item the calibration stage measured: model, k, passes,
               errors (retried), pass rate, date, whether the band kept it, and the whole
               result (JSON); join `items` on `item` for its skills and difficulty.
- `embeddings` one sentence embedding per (task fingerprint, model, text recipe): the
               corpus filter computes each once and reuses it on resume (reference tasks
               too). `vector` is FLOAT[]: `array_cosine_similarity` works on it in SQL.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskloom.errors import StoreError
from taskloom.models import Calibration, Verdict
from taskloom.pipeline.payloads import PAYLOAD_INLINE_BYTES, PayloadFile
from taskloom.pipeline.records import (
    CalibratedItem,
    FunnelRow,
    ItemRecord,
    RunInfo,
    RunTask,
    Stage,
    StageCost,
    StoredResult,
    StoredVerdict,
)

if TYPE_CHECKING:
    from taskloom.generators.llm.exchange import Exchange

# 3: items.reason holds the stage's message alone (the stage is its own column).
SCHEMA_VERSION = 3
SCHEMA = """
CREATE TABLE IF NOT EXISTS run (
    id VARCHAR PRIMARY KEY, created DOUBLE, schema_version INTEGER, config JSON,
    status VARCHAR, target INTEGER, seed BIGINT, backend VARCHAR, taskloom_version VARCHAR);
CREATE TABLE IF NOT EXISTS results (
    key VARCHAR PRIMARY KEY, stage VARCHAR, stage_version VARCHAR, item INTEGER,
    round INTEGER, status VARCHAR, reason VARCHAR, payload JSON, seconds DOUBLE,
    tokens_in BIGINT, tokens_out BIGINT, cost_usd DOUBLE, created DOUBLE, payload_at BIGINT,
    payload_bytes INTEGER);
CREATE TABLE IF NOT EXISTS items (
    item INTEGER PRIMARY KEY, stage VARCHAR, status VARCHAR, reason VARCHAR,
    task_id VARCHAR, fingerprint VARCHAR, scenario VARCHAR, skills JSON,
    difficulty JSON, rounds INTEGER, updated DOUBLE);
CREATE TABLE IF NOT EXISTS verdicts (
    item INTEGER, round INTEGER, task_id VARCHAR, "check" VARCHAR, passed BOOLEAN,
    reason VARCHAR, details VARCHAR, log VARCHAR, seconds DOUBLE);
CREATE TABLE IF NOT EXISTS tasks (
    item INTEGER PRIMARY KEY, task_id VARCHAR, folder VARCHAR, fingerprint VARCHAR,
    scenario VARCHAR, skills JSON, categories JSON, difficulty JSON, round INTEGER,
    exported DOUBLE);
CREATE TABLE IF NOT EXISTS funnel (
    stage VARCHAR PRIMARY KEY, position INTEGER, n_in INTEGER, n_out INTEGER,
    yield DOUBLE, median_seconds DOUBLE, tokens BIGINT, cost_usd DOUBLE);
CREATE TABLE IF NOT EXISTS events (happened DOUBLE, event VARCHAR, detail VARCHAR);
CREATE TABLE IF NOT EXISTS llm_cache (
    key VARCHAR PRIMARY KEY, item INTEGER, stage VARCHAR, purpose VARCHAR, model VARCHAR,
    exchange JSON, tokens_in BIGINT, tokens_out BIGINT, cost_usd DOUBLE, seconds DOUBLE,
    created DOUBLE);
CREATE TABLE IF NOT EXISTS calibrations (
    item INTEGER PRIMARY KEY, model VARCHAR, k INTEGER, passes INTEGER, errors INTEGER,
    pass_rate DOUBLE, kept BOOLEAN, date VARCHAR, calibration JSON);
CREATE TABLE IF NOT EXISTS embeddings (
    fingerprint VARCHAR, model VARCHAR, recipe VARCHAR, dimensions INTEGER, vector FLOAT[],
    created DOUBLE, PRIMARY KEY (fingerprint, model, recipe));
"""
RESULT_COLUMNS = ("key", "stage", "stage_version", "item", "round", "status", "reason",
                  "payload", "seconds", "tokens_in", "tokens_out", "cost_usd", "created",
                  "payload_at", "payload_bytes")
_JSON_ITEM_COLUMNS = frozenset({"skills", "difficulty"})
_UNSET: Any = object()  # an item column a write leaves as it is


@dataclass(frozen=True)
class RunDirectory:
    """A run's folder: `run.duckdb`, `run.payloads` beside it, and `tasks/`."""

    root: Path

    STORE_FILE = "run.duckdb"
    TASKS_FOLDER = "tasks"

    @property
    def store_path(self) -> Path:
        """The DuckDB file."""
        return self.root / self.STORE_FILE

    @property
    def tasks(self) -> Path:
        """Where exported Harbor task folders go."""
        return self.root / self.TASKS_FOLDER

    def exists(self) -> bool:
        """True when a run store is here."""
        return self.store_path.exists()

    def open(self, *, read_only: bool = False) -> RunStore:
        """The run's store (read-only: it must exist)."""
        return RunStore(self.store_path, read_only=read_only)

    @classmethod
    def below(cls, root: Path) -> list[RunDirectory]:
        """Every run directory under `root` (itself included), sorted by path."""
        if not root.is_dir():
            return []
        return [cls(path.parent) for path in sorted(root.glob(f"**/{cls.STORE_FILE}"))]


class RunStore:
    """A run's DuckDB file and its payload file.

    Use from one thread (the driver); every write commits (group them in `transaction`).
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        import duckdb

        self.path = Path(path)
        if read_only and not self.path.exists():
            raise StoreError("no run store here", path=self.path,
                             fix="pass a run directory written by `taskloom generate`")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            raise StoreError(f"cannot open the run store: {exc}", path=self.path,
                             fix="another taskloom process may be using this run; wait for "
                                 "it or pass another --out") from exc
        if not read_only:
            self.db.execute(SCHEMA)
        self.payloads = PayloadFile(self.path.with_suffix(".payloads"))
        self._lock = threading.RLock()
        self._depth = 0  # open transaction() blocks of the thread holding the lock

    @property
    def root(self) -> Path:
        """The run directory."""
        return self.path.parent

    def close(self) -> None:
        """Close the database and payload files."""
        self.db.close()
        self.payloads.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes so a killed process leaves either all or none of them.

        Nested blocks join the outermost one: it alone commits (or rolls back).
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.db.execute("BEGIN TRANSACTION")
            self._depth = 1
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self.db.execute("COMMIT")

    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        """Run a user's read-only SQL and return all rows (taskloom's code never does)."""
        return self.db.execute(sql, params or []).fetchall()

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> RunInfo | None:
        """The run's row, or None for a new store."""
        row = self.db.execute("SELECT id, created, status, target, seed, backend, "
                              "taskloom_version, config FROM run").fetchone()
        if row is None:
            return None
        run_id, created, status, target, seed, backend, version, config = row
        return RunInfo(id=run_id, created=created, status=status, target=target, seed=seed,
                       backend=backend, taskloom_version=version or "",
                       config=json.loads(config))

    def start_run(self, run_id: str, config: dict, *, target: int, seed: int, backend: str,
                  version: str) -> None:
        """Create the run row (new run) or mark a resumed one as running.

        Raises:
            StoreError: The store was written by a taskloom whose tables mean other things.
        """
        with self.transaction():
            found = self.db.execute("SELECT schema_version FROM run").fetchone()
            if found is not None and found[0] != SCHEMA_VERSION:
                raise StoreError(f"the run store has schema {found[0]}; this taskloom "
                                 f"writes schema {SCHEMA_VERSION}", path=self.path,
                                 fix="start the run again in a new --out (export the old "
                                     "run first if you need its tasks)")
            if found is not None:
                self.db.execute("UPDATE run SET status = 'running', config = ?",
                                [json.dumps(config)])
                self._event("resumed")
            else:
                self.db.execute("INSERT INTO run VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                                [run_id, time.time(), SCHEMA_VERSION, json.dumps(config),
                                 target, seed, backend, version])
                self._event("started")

    def set_status(self, status: str, detail: str = "") -> None:
        """Record the run's status (finished, interrupted, failed) as an event too."""
        with self.transaction():
            self.db.execute("UPDATE run SET status = ?", [status])
            self._event(status, detail)

    def _event(self, event: str, detail: str = "") -> None:
        self.db.execute("INSERT INTO events VALUES (?, ?, ?)", [time.time(), event, detail])

    def events(self) -> list[str]:
        """The run's history: started, resumed, interrupted, finished..., oldest first."""
        return [event for (event,) in self.db.execute(
            "SELECT event FROM events ORDER BY happened").fetchall()]

    # -- stage results ---------------------------------------------------------------------

    def result(self, key: str) -> StoredResult | None:
        """A stored stage result by key (None if absent or its payload bytes are lost)."""
        row = self.db.execute("SELECT status, reason, payload, seconds, tokens_in, "
                              "tokens_out, cost_usd, payload_at, payload_bytes FROM results "
                              "WHERE key = ?", [key]).fetchone()
        if row is None:
            return None
        status, reason, payload, seconds, tokens_in, tokens_out, cost, at, size = row
        if at is not None:
            payload = self.payloads.read(at, size)
            if payload is None:
                return None
        return StoredResult(status=status, reason=reason,
                            payload=json.loads(payload) if payload else None,
                            seconds=seconds or 0.0, tokens_in=tokens_in or 0,
                            tokens_out=tokens_out or 0, cost_usd=cost or 0.0)

    def put_result(self, *, key: str, stage: str, version: str, item: int, round_: int,
                   status: str, reason: str | None, payload: str | None, seconds: float,
                   tokens_in: int = 0, tokens_out: int = 0, cost_usd: float = 0.0) -> None:
        """Store one stage result."""
        at = size = None
        if payload is not None and len(payload) > PAYLOAD_INLINE_BYTES:
            (at, size), payload = self.payloads.append(payload), None
        self.db.execute(f"INSERT OR REPLACE INTO results ({', '.join(RESULT_COLUMNS)}) "
                        f"VALUES ({', '.join('?' * len(RESULT_COLUMNS))})",
                        [key, stage, version, item, round_, status, reason, payload, seconds,
                         tokens_in, tokens_out, cost_usd, time.time(), at, size])

    # -- items and verdicts ----------------------------------------------------------------

    def put_item(self, item: int, *, stage: str | None = _UNSET, status: str | None = _UNSET,
                 reason: str | None = _UNSET, task_id: str | None = _UNSET,
                 fingerprint: str | None = _UNSET, scenario: str | None = _UNSET,
                 skills: list[str] | None = _UNSET, difficulty: dict | None = _UNSET,
                 rounds: int | None = _UNSET) -> None:
        """Insert or update an item's state; columns not given keep their value."""
        given = {"stage": stage, "status": status, "reason": reason, "task_id": task_id,
                 "fingerprint": fingerprint, "scenario": scenario, "skills": skills,
                 "difficulty": difficulty, "rounds": rounds}
        row = {name: json.dumps(value) if name in _JSON_ITEM_COLUMNS else value
               for name, value in given.items() if value is not _UNSET}
        row["updated"] = time.time()
        # An UPDATE, not INSERT OR REPLACE: DuckDB replaces a keyed row at twice the cost.
        assignments = ", ".join(f"{name} = ?" for name in row)
        if not self.db.execute(f"UPDATE items SET {assignments} WHERE item = ?",
                               [*row.values(), item]).fetchone()[0]:
            columns = ("item", *row)
            self.db.execute(f"INSERT INTO items ({', '.join(columns)}) "
                            f"VALUES ({', '.join('?' * len(columns))})", [item, *row.values()])

    def items(self) -> tuple[ItemRecord, ...]:
        """Every item's stage, status and reason, by item."""
        rows = self.db.execute("SELECT item, stage, status, reason FROM items "
                               "ORDER BY item").fetchall()
        return tuple(ItemRecord(item=item, stage=stage, status=status, reason=reason)
                     for item, stage, status, reason in rows)

    def put_verdicts(self, item: int, round_: int, task_id: str,
                     verdicts: Iterable[Verdict]) -> None:
        """Store the verdicts of one validation (replacing that round's)."""
        self.db.execute("DELETE FROM verdicts WHERE item = ? AND round = ?", [item, round_])
        self._insert_verdicts(item, round_, task_id, verdicts)

    def put_filter_verdict(self, item: int, round_: int, task_id: str,
                           verdict: Verdict | None) -> None:
        """Replace the corpus filter's verdict of an item (None clears it)."""
        self.db.execute('DELETE FROM verdicts WHERE item = ? AND "check" = \'duplicate\'',
                        [item])
        if verdict is not None:
            self._insert_verdicts(item, round_, task_id, [verdict])

    def _insert_verdicts(self, item: int, round_: int, task_id: str,
                         verdicts: Iterable[Verdict]) -> None:
        rows = [[item, round_, task_id, verdict.check, verdict.passed, verdict.reason,
                 verdict.details, verdict.log[:4000], verdict.seconds] for verdict in verdicts]
        if rows:  # one statement: DuckDB pays ~0.4 ms per statement, not per row
            self.db.execute("INSERT INTO verdicts VALUES " +
                            ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows)),
                            [value for row in rows for value in row])

    def verdicts(self, *, failed_only: bool = False) -> tuple[StoredVerdict, ...]:
        """Stored verdicts by item, round and check order (only failed ones, if asked)."""
        where = "WHERE NOT passed " if failed_only else ""
        rows = self.db.execute('SELECT item, round, task_id, "check", passed, reason, '
                               f"details, log, seconds FROM verdicts {where}"
                               "ORDER BY item, round, rowid").fetchall()
        return tuple(StoredVerdict(item=i, round=r, task_id=t or "", verdict=Verdict(
            check=c, passed=p, reason=reason, details=d or "", log=log or "",
            seconds=s or 0.0)) for i, r, t, c, p, reason, d, log, s in rows)

    def duplicate_items(self) -> set[int]:
        """Items the corpus filter has a duplicate verdict for."""
        return {item for (item,) in self.db.execute(
            'SELECT DISTINCT item FROM verdicts WHERE "check" = \'duplicate\'').fetchall()}

    # -- exported tasks --------------------------------------------------------------------

    def put_task(self, *, item: int, task_id: str, folder: str, fingerprint: str,
                 scenario: str, skills: list[str], categories: list[str], difficulty: dict,
                 round_: int) -> None:
        """Record an exported task (`folder` relative to the run directory)."""
        self.db.execute("INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [item, task_id, folder, fingerprint, scenario, json.dumps(skills),
                         json.dumps(categories), json.dumps(difficulty), round_, time.time()])

    def drop_task(self, item: int) -> None:
        """Forget an item's exported task."""
        self.db.execute("DELETE FROM tasks WHERE item = ?", [item])

    def task_folders(self) -> dict[int, str]:
        """Item -> folder (relative to the run directory) of every exported task."""
        return dict(self.db.execute("SELECT item, folder FROM tasks").fetchall())

    def tasks(self) -> tuple[RunTask, ...]:
        """The exported tasks, by item."""
        rows = self.db.execute("SELECT item, task_id, folder, fingerprint, scenario, skills, "
                               "categories, difficulty, round FROM tasks "
                               "ORDER BY item").fetchall()
        return tuple(
            RunTask(item=item, task_id=task_id, folder=(self.root / folder).resolve(),
                    fingerprint=fingerprint, scenario=scenario,
                    skills=tuple(json.loads(skills)),
                    categories=tuple(json.loads(categories or "[]")),
                    difficulty=json.loads(difficulty or "{}"), round=round_)
            for item, task_id, folder, fingerprint, scenario, skills, categories, difficulty,
            round_ in rows)

    def exported_tasks(self, first: int, stop: int) -> list[tuple[int, str, list[str]]]:
        """(item, scenario, skills) of exported tasks with first <= item < stop, by item."""
        rows = self.db.execute("SELECT item, scenario, skills FROM tasks WHERE item >= ? "
                               "AND item < ? ORDER BY item", [first, stop]).fetchall()
        return [(item, scenario, json.loads(skills)) for item, scenario, skills in rows]

    # -- calibration -----------------------------------------------------------------------

    def put_calibration(self, item: int, calibration: Calibration, *, kept: bool) -> None:
        """Record an item's pass rate and whether the band kept it."""
        self.db.execute("INSERT OR REPLACE INTO calibrations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [item, calibration.model, calibration.k, calibration.passes,
                         calibration.errors, calibration.pass_rate, kept, calibration.date,
                         calibration.model_dump_json()])

    def calibrations(self) -> tuple[CalibratedItem, ...]:
        """Every calibrated item with its plan's skills and difficulty, by item."""
        found = self.db.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = "
                                "'calibrations'").fetchone()[0]
        if not found:  # a store written before calibration existed (opened read-only)
            return ()
        rows = self.db.execute("SELECT c.item, i.task_id, i.skills, i.difficulty, "
                               "c.calibration, c.kept FROM calibrations c LEFT JOIN items i "
                               "USING (item) ORDER BY c.item").fetchall()
        return tuple(CalibratedItem(item=item, task_id=task_id,
                                    skills=tuple(json.loads(skills or "[]")),
                                    difficulty=json.loads(difficulty or "{}"),
                                    calibration=Calibration.model_validate_json(calibration),
                                    kept=kept)
                     for item, task_id, skills, difficulty, calibration, kept in rows)

    # -- funnel and costs ------------------------------------------------------------------

    def write_funnel(self, rows: Sequence[FunnelRow]) -> None:
        """Replace the funnel table."""
        with self.transaction():
            self.db.execute("DELETE FROM funnel")
            for position, row in enumerate(rows):
                self.db.execute("INSERT INTO funnel VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                [row.stage, position, row.n_in, row.n_out, row.yield_,
                                 row.median_seconds, row.tokens, row.cost_usd])

    def funnel(self) -> tuple[FunnelRow, ...]:
        """The funnel as the run last wrote it, in stage order."""
        rows = self.db.execute("SELECT stage, n_in, n_out, yield, median_seconds, tokens, "
                               "cost_usd FROM funnel ORDER BY position").fetchall()
        return tuple(FunnelRow(stage=s, n_in=i or 0, n_out=o or 0, yield_=y,
                               median_seconds=m, tokens=t or 0, cost_usd=c or 0.0)
                     for s, i, o, y, m, t, c in rows)

    def stage_costs(self) -> tuple[StageCost, ...]:
        """Work per stage over every stored result (resumed work included), by stage."""
        rows = self.db.execute("SELECT stage, count(*), sum(seconds), "
                               "sum(tokens_in + tokens_out), sum(cost_usd) FROM results "
                               "GROUP BY stage").fetchall()
        order = {stage.value: position for position, stage in enumerate(Stage)}
        return tuple(StageCost(stage=s, results=n, seconds=sec or 0.0, tokens=int(t or 0),
                               cost_usd=c or 0.0)
                     for s, n, sec, t, c in sorted(rows, key=lambda r: order.get(r[0], 99)))

    # -- model exchanges -------------------------------------------------------------------

    def put_exchanges(self, item: int, stage: str, exchanges: Iterable[Exchange]) -> None:
        """Cache model exchanges; a known key keeps its first row."""
        for exchange in exchanges:
            self.db.execute(
                "INSERT OR IGNORE INTO llm_cache VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [exchange.key, item, stage, exchange.purpose, exchange.model,
                 exchange.model_dump_json(), exchange.tokens_in, exchange.tokens_out,
                 exchange.cost_usd, exchange.seconds, time.time()])

    def exchanges(self, item: int) -> dict[str, Exchange]:
        """The cached exchanges of one item: request hash -> Exchange."""
        from taskloom.generators.llm.exchange import Exchange

        rows = self.db.execute("SELECT key, exchange FROM llm_cache WHERE item = ?",
                               [item]).fetchall()
        return {key: Exchange.model_validate_json(text) for key, text in rows}

    # -- embeddings ------------------------------------------------------------------------

    def embeddings(self, model: str, recipe: str) -> dict:
        """Every stored embedding of a model and text recipe: fingerprint -> float32 array.

        One query (a point lookup per task costs milliseconds in DuckDB); needs numpy.
        """
        import numpy as np

        found = self.db.execute("SELECT fingerprint, vector FROM embeddings WHERE model = ? "
                                "AND recipe = ?", [model, recipe]).fetchnumpy()
        return {str(fingerprint): np.asarray(vector, dtype=np.float32)
                for fingerprint, vector in zip(found["fingerprint"], found["vector"],
                                               strict=True)}

    def put_embedding(self, fingerprint: str, model: str, recipe: str,
                      vector: list[float]) -> None:
        """Store an embedding; float32 values round-trip exactly."""
        self.db.execute("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?)",
                        [fingerprint, model, recipe, len(vector), vector, time.time()])
