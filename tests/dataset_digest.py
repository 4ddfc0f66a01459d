"""Content digests of a run's dataset and of its Hugging Face export.

They read only files on disk (with pyarrow), so the same code gives comparable numbers on
any commit: `test_behaviour_pinned.py` holds the values measured before a restructuring.

- `tasks_digest`: every file under the run's `tasks/` (path, bytes, permission bits).
- `hf_export_digest`: every row of the export's Arrow and Parquet files, its dataset card,
  `dataset_info.json`, `dataset.toml` and the files of its `tasks/` tree, with what differs
  between two runs of the same command replaced by
  placeholders: the random run id, the start time, the seconds each check took, the byte
  sizes that follow from those, and how many items past the target were in flight when the
  run reached its count (they are accepted "over target" and left out; the first `count`
  accepted items are the dataset). `state.json` (datasets' own bookkeeping) is left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00")
# What depends on timing: items in flight at the end, and sizes that follow from seconds.
TIMING = (re.compile(r"(\| items the run tried \| )\d+"), re.compile(r"(\| items left out \| )\d+"),
          re.compile(r"(\| accepted \| over target: [^|]*\| )[^\n]*"),
          re.compile(r'("(?:download_size|dataset_size|size_in_bytes|num_bytes)": )\d+'),
          # dataset.toml's header (the hf export holds one since its tasks/ tree)
          re.compile(r"(tasks exported; )\d+(?= items of the run left out)"),
          re.compile(r"(#   )\d+(?= accepted: over target)"))


def folder_records(root: Path) -> list[str]:
    """`path NUL sha256 NUL mode` of every file below `root`, sorted."""
    return sorted(f"{p.relative_to(root).as_posix()}\0{hashlib.sha256(p.read_bytes()).hexdigest()}"
                  f"\0{p.stat().st_mode & 0o7777:o}" for p in root.rglob("*") if p.is_file())


def tasks_digest(run_dir: Path) -> str:
    """sha256 of every file of the run's task folders."""
    return hashlib.sha256("\n".join(folder_records(run_dir / "tasks")).encode()).hexdigest()


def _normalized(text: str, run_id: str) -> str:
    text = ISO_TIME.sub("<created>", text.replace(run_id, "<run-id>"))
    for pattern in TIMING:
        text = pattern.sub(r"\1<timing>", text)
    return text


def _rows(table, run_id: str) -> list[str]:
    rows = []
    for row in table.to_pylist():
        provenance = row.get("provenance") or {}
        assert provenance.get("run_id") == run_id, provenance
        row["provenance"] = {**provenance, "run_id": "<run-id>", "created": "<created>"}
        row["verdicts"] = [{**verdict, "seconds": 0.0} for verdict in row["verdicts"]]
        rows.append(json.dumps(row, sort_keys=True, default=lambda b: b.hex()))
    return rows


def hf_export_digest(export: Path, run_id: str) -> str:
    """sha256 of an `export --format hf` folder's content, run id and start time masked."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts: list[str] = []
    for path in sorted(export.rglob("*")):
        if not path.is_file() or path.name == "state.json":
            continue
        name = path.relative_to(export).as_posix()
        if path.suffix == ".arrow":
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_stream(source).read_all()
            parts += [name, *_rows(table, run_id)]
        elif path.suffix == ".parquet":
            parts += [name, *_rows(pq.read_table(path), run_id)]
        else:
            data = path.read_bytes()
            try:
                parts += [name, _normalized(data.decode("utf-8"), run_id)]
            except UnicodeDecodeError:  # a task's binary file (a gzip archive) holds no run id
                parts += [name, hashlib.sha256(data).hexdigest()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
