"""Successful agent attempts as a chat-format SFT dataset (`taskloom export --trajectories`).

Reads a `taskloom solve` folder and keeps the attempts that earned reward 1 (never those of
an adversarial run: a forgery is not a demonstration). Each becomes one conversation in
the messages format chat trainers read (TRL's SFTTrainer, axolotl, OpenAI fine-tuning):

    system     the agent's system prompt, as the model was given it
    user       Task: <instruction.md>     (a multi-step task: each step's, before its turns)
    assistant  {"thought": ..., "commands": [...], "done": false}   (the model's answer)
    user       [exit 0], a newline, the end of the output
    ...
    assistant  {"thought": ..., "commands": [], "done": true}

with the task id, model, attempt, reward and turn count beside it. `jsonl` writes
`trajectories.jsonl`; `hf` writes a Hugging Face dataset (`save_to_disk`) with the same
rows in `data/train-00000-of-00001.parquet`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Literal

from taskloom.errors import InputError
from taskloom.outputs.dataset import save_shards_to_disk
from taskloom.outputs.rows import require_pyarrow
from taskloom.rollouts.solve import AttemptRecord

TrajectoryFormat = Literal["jsonl", "hf"]


def trajectory_rows(folder: Path) -> list[dict]:
    """One row per attempt of the solve folder that earned reward 1, in file order.

    Raises:
        InputError: `folder` is not a solve folder, or holds an adversarial run.
    """
    meta_path, attempts_path = folder / "solve.json", folder / "attempts.jsonl"
    if not meta_path.is_file() or not attempts_path.is_file():
        raise InputError("not a `taskloom solve` folder (no solve.json and attempts.jsonl)",
                         path=folder, fix="pass the --out folder of `taskloom solve`")
    if json.loads(meta_path.read_text()).get("role") == "forger":
        raise InputError("this folder holds an adversarial run: its passes are forgeries, "
                         "not demonstrations", path=folder,
                         fix="export the folder of a plain `taskloom solve` run")
    rows = []
    for line in attempts_path.read_text(encoding="utf-8").splitlines():
        try:
            record = AttemptRecord.model_validate_json(line)
        except ValueError:  # torn by a kill mid-write
            continue
        if record.passed and record.trajectory is not None:
            rows.append(_row(record))
    return rows


def _row(record: AttemptRecord) -> dict:
    trajectory = record.trajectory
    instructions = trajectory.instructions or (record.instruction,)
    messages = [{"role": "system", "content": trajectory.system}]
    step = None
    for turn in trajectory.turns:
        if turn.step != step:  # a multi-step task: each step's instruction before its turns
            step = turn.step
            messages.append({"role": "user",
                             "content": f"Task:\n{instructions[step].strip()}"})
        if not turn.done and turn.exit_code is None:
            continue  # an answer that was not valid: not something to learn from
        answer = {"thought": turn.thought, "commands": list(turn.commands), "done": turn.done}
        messages.append({"role": "assistant", "content": json.dumps(answer)})
        if not turn.done:
            status = "timed out" if turn.timed_out else f"exit {turn.exit_code}"
            messages.append({"role": "user", "content": f"[{status}]\n{turn.output}"})
    return {"task_id": record.task, "model": record.model, "attempt": record.index,
            "reward": record.reward, "turns": len(trajectory.turns), "messages": messages}


def export_trajectories(folder: Path, fmt: TrajectoryFormat, out: Path, *,
                        force: bool = False) -> tuple[int, list[Path]]:
    """Write the successful trajectories of a solve folder; (rows, files written).

    Raises:
        InputError: Not a solve folder, an unknown format, or `out` exists (without force).
        MissingExtra: `hf` without the hf extra.
    """
    if fmt not in ("jsonl", "hf"):
        raise InputError(f"trajectories export as jsonl or hf, not {fmt!r}", field="--format",
                         fix="pass --format jsonl or --format hf")
    rows = trajectory_rows(folder)
    if out.exists():
        if not force:
            raise InputError("already exists", path=out, fix="pass --force to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if fmt == "jsonl":
        path = out / "trajectories.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        return len(rows), [path]
    pa = require_pyarrow()
    shard = out / "data" / "train-00000-of-00001.parquet"
    shard.parent.mkdir()
    pa.parquet.write_table(pa.Table.from_pylist(rows, schema=_arrow_schema(pa)), shard)
    save_shards_to_disk([shard], out, description="Successful agent trajectories "
                        "(taskloom solve) as chat conversations.")
    return len(rows), [*sorted(p for p in out.iterdir() if p.is_file()), shard]


def _arrow_schema(pa):
    """The rows' Arrow schema (an export with no row keeps its columns)."""
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    return pa.schema([("task_id", pa.string()), ("model", pa.string()),
                      ("attempt", pa.int64()), ("reward", pa.float64()),
                      ("turns", pa.int64()), ("messages", pa.list_(message))])
