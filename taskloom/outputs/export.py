"""Export a run's accepted tasks: a Harbor dataset, JSONL, Parquet or a Hugging Face dataset.

```
harbor   <out>/<task_id>/...   the task folders, byte for byte
         <out>/dataset.toml    Harbor's dataset manifest: [dataset] and one [[tasks]]
                               name + digest ("sha256:<hex>") per task
         <out>/README.md       the dataset card
jsonl    <out>/tasks.jsonl + README.md
parquet  <out>/data/train-*.parquet + README.md
hf       <out>/ save_to_disk files + data/train-*.parquet + README.md
         <out>/tasks/<task_id>/...   the task folders, byte for byte (what TRL, OpenEnv,
                               SkyRL, NeMo Gym and verifiers read)
         <out>/dataset.toml    the manifest pinning them, as for harbor
--images (harbor, hf)  every task.toml names its prebuilt image ([environment]
         docker_image); <out>/images.tar holds them, unless they went to --registry
```

The Harbor manifest follows Harbor's `DatasetManifest` (harbor/models/dataset/manifest.py
in the harbor-framework repository: `schema_version = "1.0"`, a `[dataset]` table with an
`org/name`, and `[[tasks]]` entries of `name` (`org/name`) and `digest` (`sha256:<64
hex>`)); a local dataset is a folder of task folders, which `harbor run -p DIR` runs
(harborframework.com/docs/datasets). Only tasks in the run's `tasks` table (accepted,
filtered, exported) are exported; every other item is counted, with its reason, in the
card and the manifest's header.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import tomli_w
from pydantic import Field

from taskloom.errors import InputError
from taskloom.harbor import harbor_digest, read_files, read_task_folder, staged_folder, write_files
from taskloom.models import Frozen, TaskFile
from taskloom.outputs.card import dataset_card
from taskloom.outputs.dataset import check_repo_id, write_hf, write_jsonl, write_parquet
from taskloom.outputs.images import (
    ARCHIVE_NAME,
    build_image,
    check_registry,
    image_name,
    in_registry,
    naming,
    push_images,
    save_images,
)
from taskloom.outputs.rows import task_rows
from taskloom.outputs.run import LeftOut, RunData, load_run, run_metrics
from taskloom.pipeline.records import RunTask

ExportFormat = Literal["harbor", "jsonl", "parquet", "hf"]
FORMATS: tuple[str, ...] = ("harbor", "jsonl", "parquet", "hf")
DATASET_SCHEMA_VERSION = "1.0"  # Harbor's dataset.toml schema
TASKS_DIR = "tasks"  # the task folders of an hf export: <out>/tasks/<task_id>/


class ExportSummary(Frozen):
    """What an export wrote."""

    format: ExportFormat = Field(description="The format written.")
    out: Path = Field(description="The export folder.")
    name: str = Field(description="Dataset name, org/name.")
    tasks: int = Field(description="Tasks exported.")
    left_out: tuple[LeftOut, ...] = Field(description="Items not exported, by reason.")
    files: tuple[Path, ...] = Field(description="Files and task folders written.")

    @property
    def left_out_total(self) -> int:
        """Items of the run not exported."""
        return sum(group.count for group in self.left_out)


def export_run(run_dir: Path, fmt: str, out: Path, *, name: str | None = None,
               license_id: str = "apache-2.0", force: bool = False, images: bool = False,
               registry: str | None = None,
               progress: Callable[[str], None] | None = None) -> ExportSummary:
    """Export the accepted tasks of the run in `run_dir` to the folder `out`.

    The export is written into a temporary sibling and renamed into place, so `out` is
    either complete or untouched. With `images`, every task's environment is built (see
    `taskloom.outputs.images`) and named in its task.toml; the images are pushed to
    `registry`, or saved to `images.tar` in the export without one. `progress` is called
    with each image built or pushed.

    Raises:
        InputError: Unknown format, bad dataset name, a run with no exported task, an
            `out` that exists and is not empty (without `force`), or `images` with a
            format that holds no task folders.
        InfrastructureError: An image does not build or push.
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}", field="--format",
                         fix=f"use one of: {', '.join(FORMATS)}")
    if (images or registry) and fmt not in ("harbor", "hf"):
        raise InputError(f"--images writes task folders; --format {fmt} has none",
                         field="--images", fix="use --format harbor or --format hf")
    if registry:
        check_registry(registry)
    data = load_run(run_dir)
    name = check_repo_id(name or f"taskloom/run-{data.run.id}", "--name")
    if not data.tasks:
        raise InputError(f"the run has no exported task ({data.left_out_total} items left "
                         "out)", path=run_dir,
                         fix="see why with `taskloom report RUN`; resume or extend the run with "
                             "`taskloom generate --resume --out RUN`")
    if out.exists() and any(out.iterdir()) and not force:
        raise InputError("exists and is not empty", path=out,
                         fix="choose another --out, or pass --force to replace it")
    named: dict[str, tuple[TaskFile, ...]] = {}  # task id -> files naming its image
    tags: list[str] = []
    if images or registry:
        for task in data.tasks:
            files = read_files(task.folder)
            local = image_name(task.task_id, files)
            tags.append(in_registry(local, registry))
            built = build_image(files, local, tags[-1])
            named[task.task_id] = naming(files, tags[-1])
            if progress is not None:
                progress(f"{'built' if built else 'cached'} {tags[-1]}")
    with staged_folder(out) as staging:
        written = _write(data, fmt, staging, name, license_id,
                         lambda task: named.get(task.task_id) or read_files(task.folder))
        if tags and not registry:
            written.append(save_images(tags, staging / ARCHIVE_NAME))
    if tags and registry:
        push_images(tags, progress=(lambda image: progress(f"pushed {image}"))
                    if progress else None)
    return ExportSummary(format=fmt, out=out, name=name, tasks=len(data.tasks),
                         left_out=data.left_out,
                         files=tuple(out / p.relative_to(staging) for p in written))


def _write(data: RunData, fmt: str, out: Path, name: str, license_id: str,
           files_of: Callable[[RunTask], tuple[TaskFile, ...]]) -> list[Path]:
    metrics = run_metrics(data)
    card = dataset_card(data, metrics, name=name, fmt=fmt, license_id=license_id)
    (out / "README.md").write_text(card, encoding="utf-8")
    written = [out / "README.md"]
    if fmt == "harbor":
        return written + _write_harbor(data, out, name, folders=out, files_of=files_of)
    # A generator: one task in memory at a time (a shard for Parquet).
    rows = task_rows(data, files_of)
    if fmt == "jsonl":
        return written + write_jsonl(rows, out)
    if fmt == "parquet":
        return written + write_parquet(rows, out)
    return written + _write_harbor(data, out, name, folders=out / TASKS_DIR,
                                   files_of=files_of) + \
        write_hf(rows, out, description=_description(data), license_id=license_id)


def _description(data: RunData) -> str:
    return (f"{len(data.tasks)} verified terminal tasks made by taskloom (run {data.run.id}, "
            f"seed {data.run.seed}).")


def _write_harbor(data: RunData, out: Path, name: str, *, folders: Path,
                  files_of: Callable[[RunTask], tuple[TaskFile, ...]]) -> list[Path]:
    """The task folders under `folders`, and `out/dataset.toml` pinning each by digest."""
    entries = []
    written = []
    for task in data.tasks:
        files = files_of(task)
        parsed = read_task_folder(task.folder)  # a folder Harbor cannot read is an error
        package = parsed.config.task.name if parsed.config.task else f"taskloom/{task.task_id}"
        entries.append({"name": package, "digest": harbor_digest(files)})
        written.append(write_files(files, folders / task.task_id))
    manifest = out / "dataset.toml"
    manifest.write_text(dataset_toml(data, name, entries), encoding="utf-8")
    return [manifest, *written]


def dataset_toml(data: RunData, name: str, tasks: list[dict[str, str]]) -> str:
    """Harbor's dataset.toml for the tasks, with a comment header saying what was left out.

    Args:
        data: The run.
        name: Dataset name, org/name.
        tasks: One {"name": org/name, "digest": "sha256:<hex>"} per task.
    """
    header = [f"# Harbor dataset manifest written by taskloom from run {data.run.id} "
              f"(seed {data.run.seed}).",
              f"# {len(tasks)} tasks exported; {data.left_out_total} items of the run left out:"]
    header += [f"#   {group.count} {group.status}: {group.reason or '-'}"
               for group in data.left_out] or ["#   none"]
    document = {
        "schema_version": DATASET_SCHEMA_VERSION,
        "dataset": {
            "name": name,
            "description": _description(data),
            "keywords": ["taskloom", "terminal", "synthetic",
                         *sorted({t.scenario for t in data.tasks})],
        },
        "tasks": tasks,
    }
    return "\n".join(header) + "\n\n" + tomli_w.dumps(document)
