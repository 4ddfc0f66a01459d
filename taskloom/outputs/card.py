"""The dataset card (README.md) every export carries.

It says what the dataset is and how it was made: counts, what was left out and why,
skill coverage, scenario and difficulty distributions, the column schema (from
`TaskRow`), how to load it and how to run it with Harbor, and the license.
"""

from __future__ import annotations

import types
import typing
from collections import Counter
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel

from taskloom.generators.protocols import DIMENSIONS
from taskloom.metrics.corpus import CorpusMetrics
from taskloom.outputs.rows import ROW_SCHEMA_VERSION, TaskRow
from taskloom.outputs.run import RunData

_VALIDATION = ("Every task passed taskloom's validation protocol: the environment builds; "
               "the tests give reward 0 on the untouched environment (nop agent) and reward "
               "1 after the reference solution, in every repeat from fresh state (oracle "
               "agent); every other correct solution the task ships (other tools, other "
               "allowed formats) earns reward 1 too; a solution with any one step removed, "
               "or ignoring any one rule the instruction states, earns reward 0; and no "
               "test or solution file is in the environment's build context or image.")


def schema_rows() -> Iterator[tuple[str, str, str]]:
    """(column, type, description) for every column and struct field of `TaskRow`."""
    yield from _fields(TaskRow, "")


def schema_markdown() -> str:
    """The column table of the card (and of the README), as Markdown."""
    lines = ["| column | type | description |", "|---|---|---|"]
    lines += [f"| `{c}` | `{t}` | {_cell(d)} |" for c, t, d in schema_rows()]
    return "\n".join(lines)


def _fields(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, str, str]]:
    for name, info in model.model_fields.items():
        annotation = info.annotation
        yield f"{prefix}{name}", _type_name(annotation), info.description or ""
        inner = _struct_of(annotation)
        if inner is not None:
            marker = "[]." if typing.get_origin(annotation) is tuple else "."
            yield from _fields(inner, f"{prefix}{name}{marker}")


def _struct_of(annotation: Any) -> type[BaseModel] | None:
    if typing.get_origin(annotation) is tuple:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return _type_name(next(a for a in args if a is not type(None))) + " (nullable)"
    if origin is tuple:
        return f"list<{_type_name(args[0])}>"
    if origin is Literal:
        return _type_name(type(args[0]))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "struct"
    return {str: "string", bytes: "binary", int: "int64", float: "float64",
            bool: "bool"}.get(annotation, str(annotation))


def _size_category(count: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if count < limit:
            return label
    return "100K<n<1M"


def dataset_card(data: RunData, metrics: CorpusMetrics, *, name: str, fmt: str,
                 license_id: str) -> str:
    """The README.md of an export of `data` in format `fmt`."""
    tasks = data.tasks
    lines = ["---", f"license: {license_id}", f"pretty_name: {name}",
             "tags:", "- taskloom", "- harbor", "- terminal", "- agents", "- synthetic",
             "task_categories:", "- reinforcement-learning",
             "size_categories:", f"- {_size_category(len(tasks))}"]
    if fmt in ("hf", "parquet"):
        lines += ["configs:", "- config_name: default", "  data_files:",
                  "  - split: train", "    path: data/train-*.parquet"]
    lines += ["---", "", f"# {name}", "",
              f"{len(tasks)} verified terminal tasks for training and evaluating AI agents, "
              f"made by taskloom run `{data.run.id}` (seed {data.run.seed}, "
              f"{data.run.backend} backend, taskloom {data.run.taskloom_version}, started "
              f"{data.run.created_iso}). Each task is a Harbor task folder: an instruction, "
              "a Dockerfile environment, a reference solution and pytest checks that write "
              "the reward.", "", _VALIDATION, "", "## Counts", "",
              "| | |", "|---|---|", f"| tasks in this dataset | {len(tasks)} |",
              f"| items the run tried | {data.items} |",
              f"| items left out | {data.left_out_total} |",
              f"| run status | {data.run.status} (target {data.run.target}) |", ""]
    lines += _left_out_section(data)
    lines += _coverage_section(data, metrics)
    lines += _distribution_section(data)
    lines += ["## Columns", "",
              f"One row per task (row schema {ROW_SCHEMA_VERSION}); the same columns in the "
              "Hugging Face dataset, the Parquet shards and the JSONL file (where binary "
              "values are URL-safe base64 strings).", "", schema_markdown()]
    lines += ["", *_usage_section(fmt, name), "", "## License", "",
              f"The tasks are released under `{license_id}`. They were generated by taskloom; "
              "the data inside each environment is synthetic.", ""]
    return "\n".join(lines)


def _left_out_section(data: RunData) -> list[str]:
    if not data.left_out:
        return ["Every item the run tried is in the dataset.", ""]
    lines = ["### Left out", "",
             "Only tasks that passed validation and the corpus filter are exported. These "
             "items of the run are not in the dataset:", "",
             "| status | reason | items | examples (item index) |", "|---|---|---|---|"]
    for group in data.left_out:
        examples = ", ".join(str(i) for i in group.items[:5])
        lines.append(f"| {group.status} | {_cell(group.reason) or '-'} | {group.count} | "
                     f"{examples} |")
    return [*lines, ""]


def _coverage_section(data: RunData, metrics: CorpusMetrics) -> list[str]:
    skills = Counter(s for t in data.tasks for s in t.skills)
    lines = ["## Skill coverage", "",
             f"{metrics.skills_used} of the {metrics.skills_total} skills of the skill graph "
             f"({metrics.skill_coverage:.0%}) and {metrics.transitions_used} of its "
             f"{metrics.transitions_total} typed skill transitions "
             f"({metrics.transition_coverage:.0%}) appear in the tasks. Normalized entropy: "
             f"scenarios {metrics.scenario_entropy:.2f}, skill categories "
             f"{metrics.category_entropy:.2f} (1 = spread evenly over the whole graph). "
             f"Reference solutions run {metrics.commands_mean:.1f} commands on average, "
             f"{len(metrics.tools)} distinct programs in all; near-duplicate rate "
             f"{metrics.near_duplicate_rate:.1%}.", "",
             "| skill | tasks |", "|---|---|"]
    lines += [f"| `{skill}` | {count} |" for skill, count in skills.most_common(20)]
    if len(skills) > 20:
        lines.append(f"| ... {len(skills) - 20} more | |")
    return [*lines, ""]


def _distribution_section(data: RunData) -> list[str]:
    count = len(data.tasks) or 1
    scenarios = Counter(t.scenario for t in data.tasks)
    lines = ["## Scenarios", "", "| scenario | tasks | share |", "|---|---|---|"]
    lines += [f"| `{s}` | {n} | {n / count:.0%} |" for s, n in scenarios.most_common()]
    lines += ["", "## Difficulty", "",
              "Seven dimensions, each from 1 (easy) to 3 (hard); tasks per level:", "",
              "| dimension | 1 | 2 | 3 |", "|---|---|---|---|"]
    for dimension in DIMENSIONS:
        levels = Counter(t.difficulty.get(dimension) for t in data.tasks)
        lines.append(f"| {dimension} | {levels[1]} | {levels[2]} | {levels[3]} |")
    return [*lines, ""]


def _usage_section(fmt: str, name: str) -> list[str]:
    run = ["harbor run -p tasks/ -a oracle     # every task: reward 1",
           "harbor run -p tasks/ -a nop        # every task: reward 0",
           'harbor run -p tasks/ -a <agent> -m <model>']
    if fmt == "harbor":
        return ["## Use it", "",
                "This folder is a Harbor dataset: one task folder per task and "
                "`dataset.toml`, which pins each task by its content digest.", "",
                "```bash", *(line.replace("tasks/", ".") for line in run),
                "taskloom validate .                 # re-prove every task here", "```"]
    if fmt == "hf":
        return _hf_usage(name, run)
    load = {"parquet": ['from datasets import load_dataset',
                        'rows = load_dataset("parquet", data_files="data/*.parquet", '
                        'split="train")'],
            "jsonl": ["import json",
                      'rows = [json.loads(line) for line in open("tasks.jsonl")]']}[fmt]
    return ["## Use it", "", "```python", *load, "```", "",
            "Turn the rows back into Harbor task folders (byte-identical to the originals) "
            "and run them with Harbor:", "", "```bash",
            "taskloom import THIS_FOLDER --out tasks/", *run, "```", "",
            "Without taskloom, each row's `archive` is the task folder as a tar.gz "
            "(`tar xzf`)."]


def _hf_usage(name: str, run: list[str]) -> list[str]:
    """How trainers and Harbor read an hf export: the `tasks/` tree, or the rows."""
    return ["## Use it", "",
            "`tasks/<task_id>/` holds every task folder byte for byte (`task_id` is a column) "
            "and `dataset.toml` pins each by its Harbor content digest. Trainers that read "
            "Harbor tasks take the folder, or this repository once it is on the Hub:", "",
            "| reader | the one line |", "|---|---|",
            "| Harbor | `harbor run -p tasks/ -a <agent> -m <model>` |",
            f'| TRL (`trl[harbor]`) | `HarborSpec("{name}", agent="bash")`, or '
            '`HarborSpec("tasks/", agent="bash")` from a local copy |',
            '| SkyRL (Harbor integration) | `data.train_data="[\'tasks/\']"` |',
            "| NeMo Gym | `gym eval run tasks/ --agent <agent>` |",
            '| verifiers (`HarborEnv`) | `HarborEnv(run_command=..., dataset_path="tasks/")` |',
            "", f"Get the folder with `hf download {name} --repo-type dataset --local-dir "
            "DIR`, then run Harbor on it:", "", "```bash", *run,
            "taskloom validate tasks/            # re-prove every task", "```", "",
            "The same tasks as rows (metadata columns, and each folder as a tar.gz in "
            "`archive`):", "", "```python", "from datasets import load_dataset, load_from_disk",
            f'rows = load_dataset("{name}", split="train")',
            'rows = load_from_disk("THIS_FOLDER")   # this folder, before it is pushed',
            "```"]


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (no pipes, newlines or HTML tags)."""
    return (text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")
            .replace(">", "&gt;")[:160])
