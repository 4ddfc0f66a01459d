"""Batch runs and their outputs: `generate`, `runs list/show`, `export`, `import`, `report`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from taskloom.cli.common import (
    BaseUrlOption,
    ModelOption,
    app,
    console,
    fail,
    progress_bars,
    runs_app,
    stdout,
)
from taskloom.errors import TaskloomError


class _Bars:
    """Rich progress bars per stage for the runner."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.bars: dict[str, int] = {}

    def update(self, stage: str, done: int, total: int | None) -> None:
        if stage not in self.bars:
            self.bars[stage] = self.progress.add_task(stage, total=total, status="")
        self.progress.update(self.bars[stage], completed=done, total=total)


@app.command()
def generate(
    count: Annotated[int | None, typer.Option("--count", "-n", min=1,
                                              help="Verified tasks wanted.")] = None,
    seed: Annotated[int | None, typer.Option(help="Run seed (same seed, same tasks).")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory: run.duckdb, run.payloads, "
                                                  "tasks/ (default "
                                                  "runs/<backend>-seed<S>-n<N>).")] = None,
    workers: Annotated[int | None, typer.Option("--workers", "-w", min=1,
                                                help="Parallel sandboxes.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in --out: finished work is "
                                              "reused, the rest runs (starts it when "
                                              "there is none yet).")] = False,
    config_file: Annotated[Path | None, typer.Option("--config", help="Run config TOML "
                                                     "(see examples/run.toml).")] = None,
    overrides: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a config key, e.g. --set validation.repeats=3 "
                      "--set difficulty.noise=3 --set 'validation.checks=[\"+judge\"]' "
                      "(repeatable).")] = None,
    backend: Annotated[str | None, typer.Option(help="procedural (offline default), llm (a "
                                                     "model writes tasks) or hybrid (a model "
                                                     "rewrites procedural instructions).")
                       ] = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    runtime: Annotated[str | None, typer.Option(help="Sandbox runtime: docker or bwrap.")
                       ] = None,
    executor: Annotated[str | None, typer.Option(help="local (threads) or ray.")] = None,
    scenario: Annotated[str | None, typer.Option(help="Only this scenario (`taskloom graph "
                                                      "list scenarios`).")] = None,
    reference: Annotated[list[Path] | None, typer.Option(
        "--reference", help="Folder of Harbor tasks (e.g. a benchmark; repeatable): drop "
                            "generated tasks too similar to any of them (needs the embed "
                            "extra; threshold: --set diversity.reference_threshold=0.9).")
                         ] = None,
    dedup: Annotated[bool | None, typer.Option(
        "--dedup/--no-dedup", help="Drop near-duplicates of earlier kept tasks by embedding "
                                   "similarity (threshold: --set diversity.threshold=0.97). "
                                   "Default: on where the embed extra is installed.",
        show_default=False)
                     ] = None,
) -> None:
    """Generate verified tasks: plan → generate → validate ⇄ refine → filter → export.

    The run lives in one folder: run.duckdb (every stage result, resumable; drafts over
    4 KB in run.payloads beside it) and tasks/ (Harbor task folders). Ctrl-C stops cleanly;
    `--resume --out DIR` continues.

    Calibration (off by default) keeps only tasks a model solves sometimes: --set
    calibration.model=NAME --set calibration.base_url=URL --set calibration.k=8 --set
    'calibration.band=[0.1,0.9]' (the README's calibration section has every key).
    """
    from taskloom.config import load_run_config
    from taskloom.pipeline.runner import Runner, run_dir_for, stored_config

    options = {"count": count, "seed": seed, "workers": workers, "backend": backend,
               "runtime": runtime, "executor": executor, "scenario": scenario,
               "llm.model": model, "llm.base_url": base_url, "diversity.enabled": dedup,
               "diversity.reference": [str(p.resolve()) for p in reference] if reference
               else None}
    try:
        stored = None
        if resume:
            if out is None:
                raise typer.BadParameter("--resume needs --out RUN_DIR")
            stored = stored_config(out)
            if stored is None:  # nothing to resume yet: start it, so the command re-runs
                console.print(f"no run in {out} yet: starting one")
        config = load_run_config(config_file, overrides, stored=stored, **options)
        runner = Runner(config, out or run_dir_for(config), resume=resume)
        with progress_bars() as progress:
            runner.progress = _Bars(progress)
            summary = runner.run()
    except KeyboardInterrupt:
        where = out or "the run directory"
        console.print(f"[yellow]interrupted: finished work is saved; resume with[/] "
                      f"taskloom generate --resume --out {where}", soft_wrap=True)
        raise typer.Exit(130) from None
    except TaskloomError as exc:
        raise fail(exc) from exc
    _print_funnel(summary.funnel)
    _print_metrics(summary.out)
    console.print(f"[bold]{summary.exported}[/] verified tasks of {summary.target} wanted "
                  f"({summary.items} items tried) in {summary.seconds:.1f} s; tasks in "
                  f"{runner.directory.tasks}, run store {runner.directory.store_path}")
    if summary.exported < summary.target:
        raise typer.Exit(1)


def _print_funnel(rows) -> None:
    table = Table(title="funnel")
    for column in ("stage", "in", "out", "yield", "median s", "tokens", "$"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for row in rows:
        label = "per verified task" if row.stage == "verified" else row.stage
        table.add_row(label, str(row.n_in), str(row.n_out),
                      "-" if row.yield_ is None else f"{row.yield_:.0%}",
                      "-" if row.median_seconds is None else f"{row.median_seconds:.2f}",
                      str(row.tokens), f"{row.cost_usd:.4f}")
    stdout.print(table)


def _print_metrics(run: Path, data=None) -> None:
    """The corpus diversity metrics of a run's dataset (`taskloom.metrics.corpus`)."""
    from taskloom.outputs.run import load_run, run_metrics

    try:
        metrics = run_metrics(data or load_run(run))
    except TaskloomError as exc:
        raise fail(exc) from exc
    table = Table(title="diversity", show_header=False)
    for name, value in (
            ("skill coverage", f"{metrics.skill_coverage:.1%} ({metrics.skills_used} of "
                               f"{metrics.skills_total} skills)"),
            ("transition coverage", f"{metrics.transition_coverage:.1%} "
                                    f"({metrics.transitions_used} of "
                                    f"{metrics.transitions_total})"),
            ("scenario entropy", f"{metrics.scenario_entropy:.3f} (normalized)"),
            ("skill-category entropy", f"{metrics.category_entropy:.3f} (normalized)"),
            ("action complexity", f"{metrics.commands_total} commands "
                                  f"({metrics.commands_mean:.1f} per solution), "
                                  f"{len(metrics.tools)} distinct programs"),
            ("near-duplicate rate", f"{metrics.near_duplicate_rate:.1%} "
                                    f"({metrics.near_duplicates} dropped)")):
        table.add_row(name, value)
    stdout.print(table)


@runs_app.command("list")
def runs_list(root: Annotated[Path, typer.Option(help="Folder holding run directories.")] = Path(
        "runs")) -> None:
    """One line per run found under --root: status, tasks, seed, backend."""
    from taskloom.outputs.run import list_runs

    found = list_runs(root)
    if not found:
        stdout.print(f"no runs under {root}")
        return
    table = Table()
    for column in ("run", "status", "verified", "target", "items", "seed", "backend"):
        table.add_column(column, overflow="fold")
    for listing in found:
        run = listing.run
        if run is None:
            table.add_row(str(listing.path), f"[red]unreadable: {listing.problem or 'empty'}[/]",
                          "", "", "", "", "")
            continue
        table.add_row(str(listing.path), run.status, str(listing.verified), str(run.target),
                      str(listing.items), str(run.seed), run.backend)
    stdout.print(table)


@runs_app.command("show")
def runs_show(run: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """The run's config, funnel, rejection reasons and coverage at a glance."""
    from collections import Counter

    from taskloom.outputs.run import load_run

    try:
        data = load_run(run)
    except TaskloomError as exc:
        raise fail(exc) from exc
    info = data.run
    stdout.print(f"[bold]run {info.id}[/] status {info.status}, seed {info.seed}, backend "
                 f"{info.backend}, target {info.target}")
    statuses = sorted(data.statuses.items(), key=lambda kv: -kv[1])
    stdout.print("items: " + ", ".join(f"{s.replace('unfinished', 'in progress')} {n}"
                                       for s, n in statuses))
    skills = {skill for task in data.tasks for skill in task.skills}
    scenarios = {task.scenario for task in data.tasks}
    stdout.print(f"coverage: {len(skills)} distinct skills, {len(scenarios)} scenarios in "
                 "exported tasks")
    _print_metrics(run, data)
    if data.funnel:
        _print_funnel(data.funnel)
    reasons = Counter(v.verdict.reason for v in data.failed_checks).most_common()
    if reasons:
        stdout.print("failed checks: " + ", ".join(f"{r} {n}" for r, n in reasons))
    _print_calibration(data)


def _print_calibration(data) -> None:
    """How many attempts the calibration model passed, over the calibrated tasks."""
    if not data.calibrations:
        return
    models, k, passes = data.calibration_spread
    spread = ", ".join(f"{n}/{k}: {count}" for n, count in passes.items() if count)
    stdout.print(f"calibration ({models}, k={k}): {len(data.calibrations)} tasks measured, "
                 f"{sum(row.kept for row in data.calibrations)} in the band; attempts "
                 f"passed: {spread}")


@app.command("export")
def export_command(
    run: Annotated[Path, typer.Argument(help="A run directory (run.duckdb + tasks/), or with "
                                             "--trajectories a `taskloom solve` folder.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="harbor: task folders + "
                                     "dataset.toml; jsonl; parquet; hf: a Hugging Face "
                                     "dataset (save_to_disk + Parquet shards) holding the "
                                     "tasks/<task_id>/ tree trainers read.")],
    output: Annotated[Path, typer.Option("--out", help="Export folder to write.")],
    name: Annotated[str | None, typer.Option(help="Dataset name, org/name (default "
                                                  "taskloom/run-<id>).")] = None,
    license_id: Annotated[str, typer.Option("--license", help="License id for the dataset "
                                                             "card.")] = "apache-2.0",
    push: Annotated[str | None, typer.Option(help="With --format hf: also push to this Hub "
                                                  "dataset repo, ORG/NAME (token: HF_TOKEN "
                                                  "or `hf auth login`).")] = None,
    private: Annotated[bool, typer.Option(help="Create the Hub repo as private.")] = False,
    images: Annotated[bool, typer.Option(
        "--images", help="Build every task's environment with Docker (cached by content), "
                         "name it in task.toml as docker_image, and save the images to "
                         "images.tar in the export (`docker load -i` reads it); harbor "
                         "and hf formats.")] = False,
    registry: Annotated[str | None, typer.Option(
        help="With --images: name the images REGISTRY/taskloom/<task>:<digest> and push "
             "them there (after `docker login`) instead of saving images.tar.")] = None,
    force: Annotated[bool, typer.Option(help="Replace --out if it exists.")] = False,
    trajectories: Annotated[bool, typer.Option(
        "--trajectories", help="Export the attempts of a `taskloom solve` folder that earned "
                               "reward 1 as a chat-format SFT dataset (messages, with task "
                               "id and reward): --format jsonl or hf.")] = False,
) -> None:
    """Export a run's accepted tasks as a Harbor dataset, JSONL, Parquet or HF dataset.

    Only tasks that passed validation and the corpus filter are exported; the command
    says how many items were left out and why (and so do the card and the manifest).
    With --trajectories, export a solve run's successful trajectories instead.
    """
    from taskloom.outputs.dataset import check_repo_id, hub_token, hub_upload, push_to_hub
    from taskloom.outputs.export import export_run

    if trajectories:
        from taskloom.outputs.trajectories import export_trajectories

        unused = [flag for flag, value in (("--push", push), ("--images", images),
                                           ("--registry", registry), ("--name", name))
                  if value]
        if unused:
            raise typer.BadParameter(f"{', '.join(unused)} do not apply to --trajectories")
        try:
            count, _ = export_trajectories(run, fmt, output, force=force)
        except TaskloomError as exc:
            raise fail(exc) from exc
        stdout.print(f"exported {count} successful trajectories as {fmt} to {output}")
        return
    try:
        token = None
        if push:  # fail before the export, not after it
            if fmt != "hf":
                raise typer.BadParameter("--push needs --format hf")
            check_repo_id(push)
            token = hub_token()
        if registry and not images:
            raise typer.BadParameter("--registry needs --images")
        summary = export_run(run, fmt, output, name=name, license_id=license_id, force=force,
                             images=images, registry=registry,
                             progress=lambda line: stdout.print(line, markup=False,
                                                                highlight=False,
                                                                soft_wrap=True))
        stdout.print(f"exported {summary.tasks} tasks as {summary.format} to {summary.out} "
                     f"(dataset {summary.name})")
        if summary.left_out:
            stdout.print(f"left out {summary.left_out_total} items of the run:")
            for group in summary.left_out:
                stdout.print(f"  {group.count} {group.status}: {group.reason or '-'}",
                             markup=False, highlight=False)
        if push:
            url = push_to_hub(hub_upload(summary.out, push, private=private), token)
            stdout.print(f"pushed to {url}")
    except TaskloomError as exc:
        raise fail(exc) from exc


@app.command("import")
def import_command(
    export: Annotated[Path, typer.Argument(help="An export folder (--format hf, jsonl or "
                                                "parquet).")],
    output: Annotated[Path, typer.Option("--out", help="Folder to write task folders into.")],
    force: Annotated[bool, typer.Option(help="Replace task folders that exist.")] = False,
) -> None:
    """Turn a dataset export back into Harbor task folders, byte-identical to the originals."""
    from taskloom.outputs.dataset import import_dataset

    try:
        written = import_dataset(export, output, force=force)
    except TaskloomError as exc:
        raise fail(exc) from exc
    stdout.print(f"imported {len(written)} task folders into {output} (checked against their "
                 "sha256 and Harbor digests)")


@app.command("report")
def report_command(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    output: Annotated[Path | None, typer.Option("--out", help="HTML file to write (default "
                                                               "RUN/report.html).")] = None,
) -> None:
    """Write one self-contained HTML page about a run (no scripts, no external assets).

    Funnel, skill coverage on the graph, scenario and difficulty distributions, rejection
    reasons with example logs, cost per verified task and corpus diversity metrics.
    """
    from taskloom.outputs.report import write_report

    try:
        path = write_report(run, output)
    except TaskloomError as exc:
        raise fail(exc) from exc
    stdout.print(f"wrote {path} ({path.stat().st_size // 1024} KiB); open it in a browser")
