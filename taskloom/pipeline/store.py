"""The run store: one DuckDB file per run (and its payload file), written only by the driver.

Tables (plain SQL; see the README for example queries):

- `run`        one row: id, created, config (JSON), status, counts.
- `results`    every stage result, keyed by its content fingerprint
               (stage, stage version, input fingerprint, stage config): item, round,
               status (ok / rejected / error), reason, payload (JSON), seconds, tokens, cost;
               a payload over 4 KB (a draft, with its files) is kept zlib-compressed
               in the append-only file `run.payloads` beside the store instead, at
               `payload_at` (offset) and `payload_bytes` (see `PayloadFile`).
               A resumed run looks results up by key, so a stage whose version, input or
               config changed runs again, and so does everything after it.
- `items`      the current state of each item: stage reached, final status, reason,
               task id and fingerprint, round accepted in.
- `verdicts`   one row per check of every validation (item, round, check, passed, reason,
               details, log excerpt).
- `tasks`      exported tasks: item, task id, folder, fingerprint, skills, scenario.
- `funnel`     per stage: in, out, yield, median seconds, tokens, cost (written at the end).
- `events`     run history: started, interrupted, resumed, finished (with timestamps).
- `llm_cache`  every model request and answer, keyed by the request's content hash
               (messages, answer schema, prompt fingerprint, model settings): item, stage,
               purpose, model, the exchange (JSON), tokens, cost. Stages that ask a model
               get their item's rows back as a replay map, so nothing is paid twice.
- `embeddings` one sentence embedding per (task fingerprint, model, text recipe): the
               corpus filter computes each once and reuses it on resume (reference tasks
               too). `vector` is FLOAT[]: `array_cosine_similarity` works on it in SQL.
"""

from __future__ import annotations

import json
import os
import threading
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

from taskloom.errors import StoreError

SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS run (
    id VARCHAR PRIMARY KEY, created DOUBLE, schema_version INTEGER, config JSON,
    status VARCHAR, target INTEGER, seed BIGINT, backend VARCHAR, taskloom_version VARCHAR);
CREATE TABLE IF NOT EXISTS results (
    key VARCHAR PRIMARY KEY, stage VARCHAR, stage_version VARCHAR, item INTEGER,
    round INTEGER, status VARCHAR, reason VARCHAR, payload JSON, seconds DOUBLE,
    tokens_in BIGINT, tokens_out BIGINT, cost_usd DOUBLE, created DOUBLE, payload_at BIGINT,
    payload_bytes INTEGER);
ALTER TABLE results ADD COLUMN IF NOT EXISTS payload_at BIGINT;
ALTER TABLE results ADD COLUMN IF NOT EXISTS payload_bytes INTEGER;
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
CREATE TABLE IF NOT EXISTS embeddings (
    fingerprint VARCHAR, model VARCHAR, recipe VARCHAR, dimensions INTEGER, vector FLOAT[],
    created DOUBLE, PRIMARY KEY (fingerprint, model, recipe));
"""


# Payloads over 4 KB (drafts, with their files) live compressed in the payload file, not in
# DuckDB: it keeps strings that long in overflow blocks, and its checkpoints rewrote them
# again and again as the store grew, so peak memory grew with the run.
# `benchmarks/pipeline_memory.py --small 100 --large 2000`: 326 vs 1,588 MiB with drafts
# inline, 193 vs 254 MiB with those over 64 KB compressed inline, 172 vs 223 MiB with this
# (146 vs 173 MiB once large buffers also stayed out of the heap: pipeline/allocator.py).
PAYLOAD_INLINE_BYTES = 4096
PAYLOADS_SUFFIX = ".payloads"
RESULT_COLUMNS = ("key", "stage", "stage_version", "item", "round", "status", "reason",
                  "payload", "seconds", "tokens_in", "tokens_out", "cost_usd", "created",
                  "payload_at", "payload_bytes")
ITEM_COLUMNS = ("stage", "status", "reason", "task_id", "fingerprint", "scenario", "skills",
                "difficulty", "rounds")



_ENCODE_SLICE = 1 << 18  # characters of a payload encoded and compressed at a time


class PayloadFile:
    """Append-only zlib-compressed payloads; the store keeps each one's offset and length.

    Bytes are appended before their row commits: a killed run leaves at most unreferenced
    bytes at the end. A row whose bytes are missing or damaged (the machine lost power
    before the OS wrote them) reads as absent, so its stage simply runs again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._append_fd: int | None = None
        self._read_fd: int | None = None

    def append(self, payload: str) -> tuple[int, int]:
        """Store a payload; its (offset, length) in the file."""
        compressor = zlib.compressobj(6)
        # Encoded a slice at a time: a multi-MB draft is not held a second time as bytes.
        packed = b"".join(compressor.compress(payload[start:start + _ENCODE_SLICE].encode())
                          for start in range(0, len(payload), _ENCODE_SLICE))
        packed += compressor.flush()
        if self._append_fd is None:
            self._append_fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        at = os.fstat(self._append_fd).st_size
        os.write(self._append_fd, packed)
        return at, len(packed)

    def read(self, at: int, size: int) -> str | None:
        """The payload at `at`, or None when its bytes are missing or damaged."""
        if self._read_fd is None:
            try:
                self._read_fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                return None
        packed = os.pread(self._read_fd, size, at)
        try:
            return zlib.decompress(packed).decode() if len(packed) == size else None
        except zlib.error:
            return None

    def close(self) -> None:
        """Close the file."""
        for fd in (self._append_fd, self._read_fd):
            if fd is not None:
                os.close(fd)
        self._append_fd = self._read_fd = None


class RunStore:
    """A run's DuckDB file and its payload file.

    Use from one thread (the driver); every write commits.
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
        self.payloads = PayloadFile(self.path.with_suffix(PAYLOADS_SUFFIX))
        self._lock = threading.RLock()
        self._depth = 0  # open transaction() blocks of the thread holding the lock

    def close(self) -> None:
        """Close the database and payload files."""
        self.db.close()
        self.payloads.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self):
        """Group writes so a killed process leaves either all or none of them.

        Nested blocks join the outermost one: it alone commits (or rolls back).
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.db
                finally:
                    self._depth -= 1
                return
            self.db.execute("BEGIN TRANSACTION")
            self._depth = 1
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self.db.execute("COMMIT")

    # -- run ------------------------------------------------------------------------------

    def run_row(self) -> dict | None:
        """The run's row, or None for a new store."""
        row = self.db.execute("SELECT id, created, config, status, target, seed, backend "
                              "FROM run").fetchone()
        if row is None:
            return None
        keys = ("id", "created", "config", "status", "target", "seed", "backend")
        data = dict(zip(keys, row, strict=True))
        data["config"] = json.loads(data["config"])
        return data

    def start_run(self, run_id: str, config: dict, *, target: int, seed: int, backend: str,
                  version: str) -> None:
        """Create the run row (new run) or mark a resumed one as running."""
        with self.transaction() as db:
            if db.execute("SELECT count(*) FROM run").fetchone()[0]:
                db.execute("UPDATE run SET status = 'running', config = ?",
                           [json.dumps(config)])
                db.execute("INSERT INTO events VALUES (?, 'resumed', '')", [time.time()])
            else:
                db.execute("INSERT INTO run VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                           [run_id, time.time(), SCHEMA_VERSION, json.dumps(config), target,
                            seed, backend, version])
                db.execute("INSERT INTO events VALUES (?, 'started', '')", [time.time()])

    def set_status(self, status: str, detail: str = "") -> None:
        """Record the run's status (finished, interrupted, failed) as an event too."""
        with self.transaction() as db:
            db.execute("UPDATE run SET status = ?", [status])
            db.execute("INSERT INTO events VALUES (?, ?, ?)", [time.time(), status, detail])

    # -- stage results ---------------------------------------------------------------------

    def result(self, key: str) -> dict | None:
        """A stored stage result by key: status, reason, payload (parsed), seconds."""
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
        return {"status": status, "reason": reason,
                "payload": json.loads(payload) if payload else None, "seconds": seconds,
                "tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost}

    def put_result(self, db, *, key: str, stage: str, version: str, item: int, round_: int,
                   status: str, reason: str | None, payload: str | None, seconds: float,
                   tokens_in: int = 0, tokens_out: int = 0, cost_usd: float = 0.0) -> None:
        """Store one stage result (inside a transaction)."""
        at = size = None
        if payload is not None and len(payload) > PAYLOAD_INLINE_BYTES:
            (at, size), payload = self.payloads.append(payload), None
        db.execute(f"INSERT OR REPLACE INTO results ({', '.join(RESULT_COLUMNS)}) VALUES "
                   f"({', '.join('?' * len(RESULT_COLUMNS))})",
                   [key, stage, version, item, round_, status, reason, payload, seconds,
                    tokens_in, tokens_out, cost_usd, time.time(), at, size])

    def put_item(self, db, item: int, **values) -> None:
        """Insert or update an item's state (inside a transaction)."""
        unknown = set(values) - set(ITEM_COLUMNS)
        if unknown:
            raise ValueError(f"items has no column {sorted(unknown)[0]!r}")
        row = {name: json.dumps(value) if name in ("skills", "difficulty") else value
               for name, value in values.items()}
        row["updated"] = time.time()
        # An UPDATE, not INSERT OR REPLACE: DuckDB replaces a keyed row at twice the cost.
        assignments = ", ".join(f"{name} = ?" for name in row)
        if not db.execute(f"UPDATE items SET {assignments} WHERE item = ?",
                          [*row.values(), item]).fetchone()[0]:
            columns = ("item", *row)
            db.execute(f"INSERT INTO items ({', '.join(columns)}) "
                       f"VALUES ({', '.join('?' * len(columns))})", [item, *row.values()])

    def put_verdicts(self, db, item: int, round_: int, task_id: str, verdicts) -> None:
        """Store the verdicts of one validation (inside a transaction)."""
        db.execute("DELETE FROM verdicts WHERE item = ? AND round = ?", [item, round_])
        self._insert_verdicts(db, item, round_, task_id, verdicts)

    def _insert_verdicts(self, db, item: int, round_: int, task_id: str, verdicts) -> None:
        rows = [[item, round_, task_id, str(verdict.check), verdict.passed,
                 str(verdict.reason) if verdict.reason else None, verdict.details,
                 verdict.log[:4000], verdict.seconds] for verdict in verdicts]
        if rows:  # one statement: DuckDB pays ~0.4 ms per statement, not per row
            db.execute("INSERT INTO verdicts VALUES " +
                       ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows)),
                       [value for row in rows for value in row])

    def put_task(self, db, *, item: int, task_id: str, folder: str, fingerprint: str,
                 scenario: str, skills: list[str], categories: list[str], difficulty: dict,
                 round_: int) -> None:
        """Record an exported task (inside a transaction)."""
        db.execute("INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [item, task_id, folder, fingerprint, scenario, json.dumps(skills),
                    json.dumps(categories), json.dumps(difficulty), round_, time.time()])

    def drop_task(self, db, item: int) -> str | None:
        """Forget an item's exported task (inside a transaction); its folder, if it had one."""
        row = db.execute("SELECT folder FROM tasks WHERE item = ?", [item]).fetchone()
        if row is None:
            return None
        db.execute("DELETE FROM tasks WHERE item = ?", [item])
        return row[0]

    def put_filter_verdict(self, db, item: int, round_: int, task_id: str, verdict) -> None:
        """Replace the corpus filter's verdict of an item (inside a transaction).

        `verdict` None clears it (the item is kept, or no longer reaches the filter).
        """
        db.execute('DELETE FROM verdicts WHERE item = ? AND "check" = \'duplicate\'', [item])
        if verdict is not None:
            self._insert_verdicts(db, item, round_, task_id, [verdict])

    def exported_tasks(self, first: int, stop: int) -> list[tuple[int, str, list[str]]]:
        """(item, scenario, skills) of exported tasks with first <= item < stop, by item."""
        rows = self.db.execute("SELECT item, scenario, skills FROM tasks WHERE item >= ? AND "
                               "item < ? ORDER BY item", [first, stop]).fetchall()
        return [(item, scenario, json.loads(skills)) for item, scenario, skills in rows]

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

    def put_embedding(self, db, fingerprint: str, model: str, recipe: str,
                      vector: list[float]) -> None:
        """Store an embedding (inside a transaction); float32 values round-trip exactly."""
        db.execute("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?)",
                   [fingerprint, model, recipe, len(vector), vector, time.time()])

    def finished_items(self) -> dict[int, str]:
        """Item -> final status, for items that reached one."""
        rows = self.db.execute("SELECT item, status FROM items WHERE status IN "
                               "('accepted', 'rejected', 'failed', 'duplicate')").fetchall()
        return dict(rows)

    def write_funnel(self, rows: list[dict]) -> None:
        """Replace the funnel table."""
        with self.transaction() as db:
            db.execute("DELETE FROM funnel")
            for position, row in enumerate(rows):
                db.execute("INSERT INTO funnel VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           [row["stage"], position, row["in"], row["out"], row["yield"],
                            row["median_seconds"], row["tokens"], row["cost_usd"]])

    def put_exchanges(self, db, item: int, stage: str, exchanges) -> None:
        """Cache model exchanges (inside a transaction); a known key keeps its first row."""
        for exchange in exchanges:
            db.execute("INSERT OR IGNORE INTO llm_cache VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       [exchange.key, item, stage, exchange.purpose, exchange.model,
                        exchange.model_dump_json(), exchange.tokens_in, exchange.tokens_out,
                        exchange.cost_usd, exchange.seconds, time.time()])

    def exchanges(self, item: int) -> dict:
        """The cached exchanges of one item: request hash -> Exchange."""
        from taskloom.generators.llm.exchange import Exchange

        rows = self.db.execute("SELECT key, exchange FROM llm_cache WHERE item = ?",
                               [item]).fetchall()
        return {key: Exchange.model_validate_json(text) for key, text in rows}

    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        """Run read-only SQL and return all rows."""
        return self.db.execute(sql, params or []).fetchall()
