"""Dataset files: task rows as JSONL, Parquet shards or a Hugging Face dataset.

Write them, read them back into Harbor task folders, and push a Hugging Face export to
the Hub.

```
<out>/tasks.jsonl                             --format jsonl (bytes as URL-safe base64)
<out>/data/train-00000-of-0000N.parquet       --format parquet
<out>/data-*.arrow, dataset_info.json, state.json  + data/*.parquet   --format hf
     + tasks/<task_id>/ (the folders) + dataset.toml
```

Every format holds the rows of `taskloom.outputs.rows.TaskRow`; `read_rows` accepts any
of them. `datasets` and `pyarrow` are optional (`pip install 'taskloom[hf]'`) and imported
where they are used, with an install hint when missing.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from taskloom.errors import InfrastructureError, InputError, MissingExtra, TaskFolderError
from taskloom.harbor import harbor_digest, unpack, write_files
from taskloom.models import Frozen
from taskloom.outputs.rows import HF_HINT, TaskRow, arrow_schema, require_pyarrow

JSONL_NAME = "tasks.jsonl"
PARQUET_DIR = "data"
SHARD_BYTES = 128 * 1024 * 1024  # raw row bytes per Parquet shard (zstd makes it smaller)
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def _datasets():
    try:
        import datasets
    except ImportError as exc:
        raise MissingExtra("the `datasets` package is not installed", fix=HF_HINT) from exc
    return datasets


def arrow_table(rows: Sequence[TaskRow]):
    """The rows as one Arrow table with the `TaskRow` schema."""
    pa = require_pyarrow()
    return pa.Table.from_pylist([row.model_dump() for row in rows], schema=arrow_schema())


def write_jsonl(rows: Iterable[TaskRow], out: Path) -> list[Path]:
    """Write `out/tasks.jsonl`, one row per line."""
    path = out / JSONL_NAME
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(row.model_dump_json() + "\n")
    return [path]


def write_parquet(rows: Iterable[TaskRow], out: Path) -> list[Path]:
    """Write `out/data/train-XXXXX-of-YYYYY.parquet`, streaming shards of ~SHARD_BYTES.

    Rows are consumed as they come, so memory holds one shard, whatever the run size.
    """
    pa = require_pyarrow()
    folder = out / PARQUET_DIR
    folder.mkdir(parents=True, exist_ok=True)
    parts: list[Path] = []
    pending: list[TaskRow] = []
    size = 0

    def flush() -> None:
        part = folder / f".part-{len(parts):05d}.parquet"
        pa.parquet.write_table(arrow_table(pending), part, compression="zstd")
        parts.append(part)

    for row in rows:
        row_size = len(row.archive) + sum(len(f.content) for f in (
            *row.environment_files, *row.solution_files, *row.test_files))
        if pending and size + row_size > SHARD_BYTES:
            flush()
            pending, size = [], 0
        pending.append(row)
        size += row_size
    if pending or not parts:
        flush()
    shards = []
    for index, part in enumerate(parts):
        shard = folder / f"train-{index:05d}-of-{len(parts):05d}.parquet"
        part.rename(shard)
        shards.append(shard)
    return shards


def write_hf(rows: Iterable[TaskRow], out: Path, *, description: str,
             license_id: str) -> list[Path]:
    """Write a Hugging Face dataset: the Parquet shards, then `save_to_disk` files.

    The dataset is built from the shards memory-mapped, so a large run never sits in
    memory whole.
    """
    datasets = _datasets()
    shards = write_parquet(rows, out)
    save_shards_to_disk(shards, out, features=datasets.Features.from_arrow_schema(
        arrow_schema()), description=description, license_id=license_id)
    return sorted(p for p in out.iterdir() if p.is_file()) + shards


def save_shards_to_disk(shards: Sequence[Path], out: Path, *, features=None,
                        description: str = "", license_id: str | None = None) -> None:
    """`save_to_disk` files in `out` for a dataset read from Parquet shards, memory-mapped.

    Raises:
        MissingExtra: The datasets package is not installed.
    """
    datasets = _datasets()
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # the CLI prints its own summary
    try:
        with tempfile.TemporaryDirectory(prefix="taskloom-hf-") as cache:
            dataset = datasets.Dataset.from_parquet([str(p) for p in shards],
                                                    features=features, cache_dir=cache,
                                                    split="train")
            dataset.info.description = description
            dataset.info.license = license_id
            dataset.save_to_disk(str(out))
            del dataset
    finally:
        if bars:
            datasets.enable_progress_bars()


DatasetFormat = Literal["hf", "jsonl", "parquet"]


def detect_format(folder: Path) -> DatasetFormat:
    """Which export a folder holds.

    Raises:
        InputError: It holds none (or a Harbor export, which needs no import).
    """
    if (folder / "state.json").is_file() and (folder / "dataset_info.json").is_file():
        return "hf"
    if (folder / JSONL_NAME).is_file():
        return "jsonl"
    if sorted((folder / PARQUET_DIR).glob("*.parquet")):
        return "parquet"
    if (folder / "dataset.toml").is_file():
        raise InputError("is a Harbor export: its task folders need no import", path=folder,
                         fix="use the folders directly (`taskloom validate DIR`, "
                             "`harbor run -p DIR`)")
    raise InputError("holds no taskloom dataset export", path=folder,
                     fix="pass a folder written by `taskloom export --format hf|jsonl|parquet`")


def read_rows(folder: Path) -> Iterator[tuple[str, TaskRow]]:
    """(where, row) for every row of an export folder, in order."""
    kind = detect_format(folder)
    if kind == "jsonl":
        path = folder / JSONL_NAME
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield f"{path}:{number}", _row(line, f"{path}:{number}", json=True)
        return
    if kind == "hf":
        dataset = _datasets().load_from_disk(str(folder))
        for index, record in enumerate(dataset):
            yield f"{folder} row {index}", _row(record, f"{folder} row {index}")
        return
    pa = require_pyarrow()
    for path in sorted((folder / PARQUET_DIR).glob("*.parquet")):
        for index, record in enumerate(pa.parquet.read_table(path).to_pylist()):
            yield f"{path} row {index}", _row(record, f"{path} row {index}")


def _row(record: Any, where: str, *, json: bool = False) -> TaskRow:
    try:
        return TaskRow.model_validate_json(record) if json else TaskRow.model_validate(record)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        raise InputError(f"{where}: not a taskloom task row: {error['msg']}", field=field,
                         fix="re-export the run with `taskloom export`") from exc


def import_dataset(folder: Path, out: Path, *, force: bool = False) -> list[Path]:
    """Turn an export back into Harbor task folders under `out`.

    The folders are byte-identical to the ones exported: each archive is checked against
    its sha256 and its Harbor digest before it is written.

    Raises:
        InputError: The export is malformed, an archive does not match its checksum, or
            a task folder exists in `out` (without `force`).
    """
    written = []
    seen: set[str] = set()
    for where, row in read_rows(folder):
        if hashlib.sha256(row.archive).hexdigest() != row.archive_sha256:
            raise InputError(f"{where}: archive does not match archive_sha256 (task "
                             f"{row.task_id})", field="archive",
                             fix="the export is damaged; export the run again")
        name, files = unpack(row.archive, source=where)
        if name != row.task_id or harbor_digest(files) != row.digest:
            raise TaskFolderError(f"archive content does not match the row (task "
                                  f"{row.task_id}: folder {name!r}, digest)", path=where,
                                  fix="the export is damaged; export the run again")
        if name in seen:
            raise InputError(f"{where}: task {name} appears twice", field="task_id",
                             fix="remove the duplicate row")
        seen.add(name)
        target = out / name
        if target.exists() and not force:
            raise InputError("task folder exists", path=target,
                             fix="pass --force to replace it, or choose another --out")
        written.append(write_files(files, target))
    if not written:
        raise InputError("the export holds no task", path=folder,
                         fix="export a run that has accepted tasks")
    return written


# -- the Hugging Face Hub -----------------------------------------------------------------

class HubUpload(Frozen):
    """What `push_to_hub` sends to one dataset repo.

    The card, the manifest, the Parquet shards and the `tasks/<task_id>/` folders.
    """

    repo_id: str = Field(description="ORG/NAME on the Hub.")
    repo_type: Literal["dataset"] = Field(default="dataset", description="Hub repo type.")
    folder: Path = Field(description="The local hf export.")
    allow_patterns: tuple[str, ...] = Field(
        default=("README.md", "dataset.toml", f"{PARQUET_DIR}/*.parquet", "tasks/**"),
        description="Files uploaded from the folder: the card, the manifest, the rows and "
                    "the task folders (the save_to_disk files stay local).")
    private: bool = Field(default=False, description="Create the repo as private.")
    commit_message: str = Field(description="Commit message on the Hub.")


def check_repo_id(repo_id: str, field: str = "--push") -> str:
    """Return `repo_id` if it is ORG/NAME.

    Raises:
        InputError: It is not.
    """
    if not REPO_ID.match(repo_id) or ".." in repo_id:
        raise InputError(f"{repo_id!r} is not ORG/NAME", field=field,
                         fix="write it as ORG/NAME with letters, digits, '.', '_' and '-', "
                             "e.g. my-org/terminal-tasks")
    return repo_id


def hub_upload(folder: Path, repo_id: str, *, private: bool = False) -> HubUpload:
    """Check an hf export and a repo id, and say what pushing them sends.

    Raises:
        InputError: The repo id is not ORG/NAME or the folder is not an hf export.
    """
    check_repo_id(repo_id)
    if not (folder / "README.md").is_file() or not list((folder / PARQUET_DIR).glob("*.parquet")) \
            or not (folder / "tasks").is_dir():
        raise InputError("is not an hf export (README.md, data/*.parquet and tasks/)",
                         path=folder,
                         fix="export with `taskloom export RUN --format hf --out DIR` first")
    return HubUpload(repo_id=repo_id, folder=folder.resolve(), private=private,
                     commit_message=f"Upload {repo_id} (taskloom export)")


def _hub():
    try:
        import huggingface_hub
    except ImportError as exc:
        raise MissingExtra("huggingface_hub is not installed", fix=HF_HINT) from exc
    return huggingface_hub


def hub_token() -> str:
    """The user's Hub token: HF_TOKEN, or the one `hf auth login` saved.

    Raises:
        InputError: There is none.
    """
    token = _hub().get_token()
    if not token:
        raise InputError("no Hugging Face token to push with", field="--push",
                         fix="set HF_TOKEN=hf_... (a token with write access) or run "
                             "`hf auth login`")
    return token


def push_to_hub(upload: HubUpload, token: str, *, api: Any = None) -> str:
    """Create the dataset repo (if needed) and upload what `upload` names.

    Args:
        upload: What to send (from `hub_upload`).
        token: A Hub token with write access (see `hub_token`).
        api: A `huggingface_hub.HfApi` (default: a new one).

    Returns:
        The dataset's URL on the Hub.

    Raises:
        InfrastructureError: The Hub cannot be reached or refused the upload.
    """
    hub = _hub()
    from huggingface_hub.errors import HTTPError

    api = api or hub.HfApi(token=token)
    try:
        api.create_repo(upload.repo_id, repo_type=upload.repo_type, private=upload.private,
                        exist_ok=True, token=token)
        api.upload_folder(repo_id=upload.repo_id, repo_type=upload.repo_type,
                          folder_path=str(upload.folder),
                          allow_patterns=list(upload.allow_patterns),
                          commit_message=upload.commit_message, token=token)
    except (OSError, HTTPError) as exc:
        raise InfrastructureError(
            f"cannot push to the Hugging Face Hub ({upload.repo_id}): "
            f"{type(exc).__name__}: {exc}",
            fix="check the network connection (and that HF_HUB_OFFLINE is unset) and that "
                "the token may write to the organization; the local export is complete"
        ) from exc
    return f"{hub.constants.ENDPOINT}/datasets/{upload.repo_id}"
