"""The `taskloom` command: thin typer commands over library functions.

Exit codes: 0 success; 1 the command ran but some task was rejected; 2 bad input or the
infrastructure failed (the message says how to fix it); 130 interrupted.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from taskloom.errors import TaskloomError

app = typer.Typer(
    help="Synthesize and verify containerized terminal tasks for AI agents.\n\n"
         "Start with `taskloom doctor`, then `taskloom validate TASK_DIR` on any Harbor task.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
base_image_app = typer.Typer(help="Build or inspect the toolbox image tasks build FROM.",
                             no_args_is_help=True)
app.add_typer(base_image_app, name="base-image")
graph_app = typer.Typer(help="Inspect the skill graph: skills, scenarios and how they link.",
                        no_args_is_help=True)
app.add_typer(graph_app, name="graph")
runs_app = typer.Typer(help="Summarise batch runs (each a folder with its run store).",
                       no_args_is_help=True)
app.add_typer(runs_app, name="runs")

GraphOption = Annotated[list[Path] | None, typer.Option(
    "--graph", help="Extra skill graph TOML file(s), merged over the shipped graph "
                    "(same ids replace ours).")]

console = Console(stderr=True)
stdout = Console()


def _fail(error: TaskloomError) -> typer.Exit:
    console.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def _progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                    TextColumn("eta"), TimeRemainingColumn(), console=console,
                    transient=False)


@app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(
        help="Harbor task folders, or folders of task folders.", show_default=False)],
    workers: Annotated[int, typer.Option("--workers", "-w", min=1,
                                         help="Tasks validated in parallel.")] = os.cpu_count()
    or 2,
    repeats: Annotated[int, typer.Option("--repeats", "-r", min=1, max=20,
                                         help="Oracle runs from fresh state; all must "
                                              "give reward 1.")] = 2,
    mode: Annotated[str, typer.Option(help="auto: emulate simple Dockerfiles FROM the base "
                                           "image (fast); strict: real docker build and a "
                                           "fresh container per phase.")] = "auto",
    mutations: Annotated[bool, typer.Option(help="Also run the solution with each marked "
                                                 "step removed.")] = True,
    report: Annotated[Path, typer.Option(help="Where to write the JSON report.")] = Path(
        "taskloom-validation.json"),
    keep_images: Annotated[bool, typer.Option(help="Keep images built in strict mode.")] = False,
    show_logs: Annotated[bool, typer.Option("--logs", help="Print the log excerpt of every "
                                                         "failed check.")] = False,
    runtime_name: Annotated[str, typer.Option(
        "--runtime", help="docker: containers on the Docker engine; bwrap: bubblewrap "
                          "sandboxes over the base image's exported files (root, no daemon; "
                          "see `taskloom doctor`).")] = "docker",
) -> None:
    """Prove Harbor tasks work: build → nop (reward 0) → oracle ×R (reward 1) → leakage.

    Exits 0 only when every task is accepted. Each rejection has a reason code:
    structure, build, trivial, oracle-fails, flaky, timeout, weak-tests, leak, verifier.
    """
    from taskloom.config import ValidationConfig
    from taskloom.harbor import find_task_folders
    from taskloom.sandbox.runtime import open_runtime
    from taskloom.validators.engine import validate_all, validate_folder

    try:
        config = ValidationConfig(repeats=repeats, mode=mode, mutations=mutations,
                                  keep_images=keep_images)
    except ValueError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    try:
        folders = find_task_folders(paths)
        runtime = open_runtime(runtime_name, keep_images=keep_images)
    except TaskloomError as exc:
        raise _fail(exc) from exc
    started = time.monotonic()
    reports = []
    try:
        with runtime, _progress() as progress:
            bar = progress.add_task("validating", total=len(folders), status="")
            jobs = (lambda f=folder: validate_folder(f, runtime, config) for folder in folders)
            for task_report in validate_all(jobs, runtime, workers=workers):
                reports.append(task_report)
                accepted = sum(r.accepted for r in reports)
                progress.update(bar, advance=1, status=f"[green]{accepted} ok[/] "
                                f"[red]{len(reports) - accepted} rejected[/]")
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: sandboxes removed; nothing was left running.[/]")
        raise typer.Exit(130) from None
    except TaskloomError as exc:
        raise _fail(exc) from exc
    elapsed = time.monotonic() - started
    order = {str(folder): index for index, folder in enumerate(folders)}
    reports.sort(key=lambda r: order.get(r.source, 0))
    _print_reports(reports, show_logs)
    accepted = sum(r.accepted for r in reports)
    rate = len(reports) / elapsed * 60 if elapsed else 0.0
    _write_report(report, reports, config, elapsed)
    stdout.print(f"{accepted} accepted, {len(reports) - accepted} rejected of {len(reports)} "
              f"in {elapsed:.1f} s ({rate:.0f} tasks/min); report: {report}")
    raise typer.Exit(0 if accepted == len(reports) else 1)


def _print_reports(reports, show_logs: bool) -> None:
    table = Table(show_lines=False)
    table.add_column("task", overflow="fold")
    table.add_column("result")
    table.add_column("why", overflow="fold")
    table.add_column("s", justify="right")
    for item in reports:
        failed = [v for v in item.verdicts if not v.passed]
        why = "; ".join(f"[bold]{v.reason}[/]: {v.details}" for v in failed)
        result = "[green]accepted[/]" if item.accepted else "[red]rejected[/]"
        table.add_row(item.task, result, why, f"{item.seconds:.1f}")
    stdout.print(table)
    if show_logs:
        for item in reports:
            for verdict in item.verdicts:
                if not verdict.passed and verdict.log:
                    stdout.rule(f"{item.task}: {verdict.check} ({verdict.reason})")
                    stdout.print(verdict.log, markup=False, highlight=False)


def _write_report(path: Path, reports, config, elapsed: float) -> None:
    accepted = sum(r.accepted for r in reports)
    reasons: dict[str, int] = {}
    for item in reports:
        for reason in item.reasons:
            reasons[reason] = reasons.get(reason, 0) + 1
    document = {
        "summary": {"tasks": len(reports), "accepted": accepted,
                    "rejected": len(reports) - accepted, "reasons": reasons,
                    "seconds": round(elapsed, 2)},
        "config": config.model_dump(mode="json"),
        "tasks": [{**r.model_dump(mode="json"), "accepted": r.accepted} for r in reports],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


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
    out: Annotated[Path | None, typer.Option(help="Run directory: run.duckdb, run.payloads, tasks/ "
                                                  "(default runs/<backend>-seed<S>-n<N>).")
                   ] = None,
    workers: Annotated[int | None, typer.Option("--workers", "-w", min=1,
                                                help="Parallel sandboxes.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in --out: finished work is "
                                              "reused, the rest runs (starts it when "
                                              "there is none yet).")] = False,
    config_file: Annotated[Path | None, typer.Option("--config", help="Run config TOML "
                                                     "(see examples/run.toml).")] = None,
    overrides: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a config key, e.g. --set validation.repeats=3 "
                      "--set difficulty.noise=3 (repeatable).")] = None,
    backend: Annotated[str | None, typer.Option(help="procedural (offline default), llm (a "
                                                     "model writes tasks) or hybrid (a model "
                                                     "rewrites procedural instructions).")
                       ] = None,
    model: Annotated[str | None, typer.Option(help="Model name for llm/hybrid and the judge "
                                                   "(default $TASKLOOM_LLM_MODEL). Other "
                                                   "model settings: --set llm.KEY=VALUE.")
                     ] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible server, e.g. "
                                                      "http://127.0.0.1:8080/v1 (default "
                                                      "$OPENAI_BASE_URL, else OpenAI).")
                        ] = None,
    runtime: Annotated[str | None, typer.Option(help="Sandbox runtime: docker or bwrap.")
                       ] = None,
    executor: Annotated[str | None, typer.Option(help="local (threads) or ray.")] = None,
    scenario: Annotated[str | None, typer.Option(help="Only this scenario (see `taskloom "
                                                      "graph stats`).")] = None,
    reference: Annotated[list[Path] | None, typer.Option(
        "--reference", help="Folder of Harbor tasks (e.g. a benchmark; repeatable): drop "
                            "generated tasks too similar to any of them (needs the embed "
                            "extra; threshold: --set diversity.reference_threshold=0.9).")
                         ] = None,
    dedup: Annotated[bool | None, typer.Option(
        "--dedup/--no-dedup", help="Drop near-duplicates of earlier kept tasks by embedding "
                                   "similarity (needs the embed extra; threshold: --set "
                                   "diversity.threshold=0.97).", show_default=False)
                     ] = None,
) -> None:
    """Generate verified tasks: plan → generate → validate ⇄ refine → filter → export.

    The run lives in one folder: run.duckdb (every stage result, resumable; drafts over
    4 KB in run.payloads beside it) and tasks/ (Harbor task folders). Ctrl-C stops cleanly;
    `--resume --out DIR` continues.
    """
    from taskloom.config import load_run_config
    from taskloom.pipeline.runner import STORE_NAME, Runner, run_dir_for
    from taskloom.pipeline.store import RunStore

    options = {"count": count, "seed": seed, "workers": workers, "backend": backend,
               "runtime": runtime, "executor": executor, "scenario": scenario,
               "llm.model": model, "llm.base_url": base_url, "diversity.enabled": dedup,
               "diversity.reference": [str(p.resolve()) for p in reference] if reference
               else None}
    try:
        base = config_file
        stored: dict | None = None
        if resume:
            if out is None:
                raise typer.BadParameter("--resume needs --out RUN_DIR")
            if (out / STORE_NAME).exists():
                with RunStore(out / STORE_NAME, read_only=True) as store:
                    stored = (store.run_row() or {}).get("config")
            else:  # nothing to resume yet: start it, so the same command can be re-run
                console.print(f"no run in {out} yet: starting one")
        config = load_run_config(base, overrides, **options) if stored is None else \
            _merge_stored(stored, base, overrides, options)
        target = out or run_dir_for(config)
        runner = Runner(config, target, resume=resume)
        with _progress() as progress:
            runner.progress = _Bars(progress)
            summary = runner.run()
    except KeyboardInterrupt:
        where = out or "the run directory"
        console.print(f"[yellow]interrupted: finished work is saved; resume with[/] "
                      f"taskloom generate --resume --out {where}", soft_wrap=True)
        raise typer.Exit(130) from None
    except TaskloomError as exc:
        raise _fail(exc) from exc
    _print_funnel(summary.funnel)
    _print_metrics(summary.out, summary.metrics)
    console.print(f"[bold]{summary.exported}[/] verified tasks of {summary.target} wanted "
                  f"({summary.items} items tried) in {summary.seconds:.1f} s; tasks in "
                  f"{summary.out / 'tasks'}, run store {summary.out / STORE_NAME}")
    if summary.exported < summary.target:
        raise typer.Exit(1)


def _merge_stored(stored: dict, base: Path | None, overrides: list[str] | None,
                  options: dict):
    """A resumed run: its stored config, then the file, flags and --set given now."""
    import tomli_w

    from taskloom.config import load_run_config

    merged = stored
    if base is not None:
        import tomllib

        merged = {**stored, **tomllib.loads(base.read_text(encoding="utf-8"))}
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as handle:
        handle.write(tomli_w.dumps(_without_none(merged)))
    try:
        return load_run_config(Path(handle.name), overrides, **options)
    finally:
        Path(handle.name).unlink()


def _without_none(value):
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


def _print_funnel(rows: list[dict]) -> None:
    table = Table(title="funnel")
    for column in ("stage", "in", "out", "yield", "median s", "tokens", "$"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for row in rows:
        label = "per verified task" if row["stage"] == "verified" else row["stage"]
        table.add_row(label, str(row["in"]), str(row["out"]),
                      "-" if row["yield"] is None else f"{row['yield']:.0%}",
                      "-" if row["median_seconds"] is None else f"{row['median_seconds']:.2f}",
                      str(row["tokens"]), f"{row['cost_usd']:.4f}")
    stdout.print(table)


@runs_app.command("list")
def runs_list(root: Annotated[Path, typer.Option(help="Folder holding run directories.")] = Path(
        "runs")) -> None:
    """One line per run found under --root: status, tasks, seed, backend."""
    from taskloom.pipeline.runner import STORE_NAME
    from taskloom.pipeline.store import RunStore

    table = Table()
    for column in ("run", "status", "verified", "target", "items", "seed", "backend"):
        table.add_column(column, overflow="fold")
    found = sorted(root.glob(f"**/{STORE_NAME}")) if root.is_dir() else []
    for path in found:
        try:
            with RunStore(path, read_only=True) as store:
                row = store.run_row() or {}
                verified = store.query("SELECT count(*) FROM tasks")[0][0]
                items = store.query("SELECT count(*) FROM items")[0][0]
        except TaskloomError as exc:
            table.add_row(str(path.parent.relative_to(root)),
                          f"[red]unreadable: {exc.reason}[/]", "", "", "",
                          "", "")
            continue
        table.add_row(str(path.parent.relative_to(root)), row.get("status", "?"), str(verified),
                      str(row.get("target", "?")), str(items), str(row.get("seed", "?")),
                      str(row.get("backend", "?")))
    stdout.print(table if found else f"no runs under {root}")


@runs_app.command("show")
def runs_show(run: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """The run's config, funnel, rejection reasons and coverage at a glance."""
    from taskloom.pipeline.runner import STORE_NAME
    from taskloom.pipeline.store import RunStore

    try:
        with RunStore(run / STORE_NAME, read_only=True) as store:
            row = store.run_row()
            funnel = store.query("SELECT stage, n_in, n_out, yield, median_seconds, tokens, "
                                 "cost_usd FROM funnel ORDER BY position")
            reasons = store.query("SELECT reason, count(*) FROM verdicts WHERE NOT passed "
                                  "GROUP BY reason ORDER BY 2 DESC")
            statuses = store.query("SELECT status, count(*) FROM items GROUP BY status "
                                   "ORDER BY 2 DESC")
            skills = store.query("SELECT count(DISTINCT s) FROM tasks, "
                                 "unnest(CAST(skills AS VARCHAR[])) AS t(s)")[0][0]
            scenarios = store.query("SELECT count(DISTINCT scenario) FROM tasks")[0][0]
    except TaskloomError as exc:
        raise _fail(exc) from exc
    if row is None:
        stdout.print("empty run store")
        return
    stdout.print(f"[bold]run {row['id']}[/] status {row['status']}, seed {row['seed']}, backend "
              f"{row['backend']}, target {row['target']}")
    stdout.print("items: " + ", ".join(f"{s or 'in progress'} {n}" for s, n in statuses))
    stdout.print(f"coverage: {skills} distinct skills, {scenarios} scenarios in exported tasks")
    _print_metrics(run)
    if funnel:
        _print_funnel([{"stage": f[0], "in": f[1], "out": f[2], "yield": f[3],
                        "median_seconds": f[4], "tokens": f[5], "cost_usd": f[6]}
                       for f in funnel])
    if reasons:
        stdout.print("failed checks: " + ", ".join(f"{r} {n}" for r, n in reasons))


def _print_metrics(run: Path, metrics=None) -> None:
    """The corpus diversity metrics of a run's dataset (taskloom.metrics.corpus)."""
    from taskloom.outputs.run import load_run, run_metrics

    try:
        metrics = metrics or run_metrics(load_run(run))
    except TaskloomError as exc:
        raise _fail(exc) from exc
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


@app.command("export")
def export_command(
    run: Annotated[Path, typer.Argument(help="A run directory (run.duckdb + tasks/).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="harbor: task folders + "
                                     "dataset.toml; jsonl; parquet; hf: a Hugging Face "
                                     "dataset (save_to_disk + Parquet shards).")],
    output: Annotated[Path, typer.Option("--out", help="Export folder to write.")],
    name: Annotated[str | None, typer.Option(help="Dataset name, org/name (default "
                                                  "taskloom/run-<id>).")] = None,
    license_id: Annotated[str, typer.Option("--license", help="License id for the dataset "
                                                             "card.")] = "apache-2.0",
    push: Annotated[str | None, typer.Option(help="With --format hf: also push to this Hub "
                                                  "dataset repo, ORG/NAME (token: HF_TOKEN "
                                                  "or `hf auth login`).")] = None,
    private: Annotated[bool, typer.Option(help="Create the Hub repo as private.")] = False,
    force: Annotated[bool, typer.Option(help="Replace --out if it exists.")] = False,
) -> None:
    """Export a run's accepted tasks as a Harbor dataset, JSONL, Parquet or HF dataset.

    Only tasks that passed validation and the corpus filter are exported; the command
    says how many items were left out and why (and so do the card and the manifest).
    """
    from taskloom.outputs.dataset import check_repo_id, hub_token, hub_upload, push_to_hub
    from taskloom.outputs.export import export_run

    try:
        token = None
        if push:  # fail before the export, not after it
            if fmt != "hf":
                raise typer.BadParameter("--push needs --format hf")
            check_repo_id(push)
            token = hub_token()
        summary = export_run(run, fmt, output, name=name, license_id=license_id, force=force)
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
        raise _fail(exc) from exc


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
        raise _fail(exc) from exc
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
        raise _fail(exc) from exc
    stdout.print(f"wrote {path} ({path.stat().st_size // 1024} KiB); open it in a browser")


@app.command()
def make(
    request: Annotated[str, typer.Argument(help='What the task is about, e.g. "rotate nginx '
                                                'logs and keep 5".', show_default=False)],
    count: Annotated[int, typer.Option("--count", "-k", min=1, max=20,
                                       help="Candidates to generate and validate.")] = 3,
    difficulty: Annotated[str | None, typer.Option(
        help="easy|medium|hard, or levels like noise=3,steps=2 (over words in the "
             "request).")] = None,
    out: Annotated[Path, typer.Option(help="Folder to write the task into.")] = Path("tasks"),
    shell_: Annotated[bool, typer.Option("--shell", help="Then open a shell in the task's "
                                                         "environment.")] = False,
    runtime: Annotated[str, typer.Option(help="Sandbox runtime: docker or bwrap.")] = "docker",
    seed: Annotated[int, typer.Option(help="Seed; another seed gives other candidates.")] = 0,
) -> None:
    """Make one verified task from a sentence, offline, in seconds.

    Prints what it understood (skills and scenario with scores, difficulty, named paths and
    numbers) and where the task is. A request that matches no skill gets the nearest
    skills instead of a random task.
    """
    from taskloom.embedding import load_embedder
    from taskloom.generators.backends import skill_graph
    from taskloom.generators.request import difficulty_from_option
    from taskloom.pipeline.on_demand import make as make_task
    from taskloom.sandbox.runtime import open_runtime

    try:
        levels = difficulty_from_option(difficulty)
        with console.status("understanding the request"):
            embedder = load_embedder()
        with open_runtime(runtime) as sandbox, console.status(
                f"generating and validating {count} candidates"):
            result = make_task(request, graph=skill_graph(()), embedder=embedder,
                               runtime=sandbox, count=count, difficulty=levels, out=out,
                               seed=seed)
    except TaskloomError as exc:
        raise _fail(exc) from exc
    understood = result.request
    stdout.print("[bold]understood[/]")
    stdout.print("  skills:   " + ", ".join(f"{m.id} ({m.score:.2f})" for m in understood.skills))
    stdout.print(f"  scenario: {understood.scenario.id} ({understood.scenario.score:.2f})")
    if understood.difficulty:
        stdout.print("  difficulty: " + ", ".join(f"{k}={v}" for k, v in
                                              understood.difficulty.items()))
    named = [*understood.paths, *understood.file_names, *map(str, understood.numbers)]
    if named:
        kept = set(result.honored)
        stdout.print("  named:    " + ", ".join(f"{n} ({'used' if n in kept else 'not used'})"
                                              for n in named))
    task = result.task
    stdout.print(f"[bold green]verified[/] {task.name}: skills "
                 f"{' -> '.join(task.config.metadata.get('skills', []))} "
                 f"({result.accepted} of {result.candidates} candidates passed, "
                 f"{result.seconds:.1f} s)", soft_wrap=True)
    stdout.print(f"  task folder: {result.folder}", soft_wrap=True)
    stdout.print("  try it: add --shell, or after an attempt in a running environment "
                 f"`taskloom check {result.folder} --container NAME`", soft_wrap=True)
    if shell_:
        _open_shell(task, Path(result.folder))


def _open_shell(task, folder: Path) -> None:
    from taskloom.sandbox import live

    with console.status("building the environment"):
        name = live.start(task)
    console.print(f"container [bold]{name}[/]: work in it, then from another terminal "
                  f"`taskloom check {folder} --container {name}`; exit the shell to remove it",
                  soft_wrap=True)
    try:
        live.shell(name)
    finally:
        live.stop(name)


@app.command()
def check(
    folder: Annotated[Path, typer.Argument(help="The task folder.")],
    container: Annotated[str | None, typer.Option(
        help="A running environment to check (from `make --shell`); without it a fresh "
             "environment is built and checked.")] = None,
) -> None:
    """Run a task's tests against the current state of a live environment.

    Prints the reward and the checks that fail, so a person or an agent can attempt the
    task and see how far they got. Exit 0 when the reward is 1.
    """
    from taskloom.harbor import read_task_folder
    from taskloom.sandbox import live

    try:
        task = read_task_folder(folder)
        name = container
        if name is None:
            with console.status("building a fresh environment"):
                name = live.start(task)
        try:
            result = live.check(task, name)
        finally:
            if container is None:
                live.stop(name)
    except TaskloomError as exc:
        raise _fail(exc) from exc
    if result.reward is None:
        stdout.print(f"[red]no reward[/]: {result.reward_error}")
    else:
        color = "green" if result.reward >= 1 else "red"
        stdout.print(f"reward [bold {color}]{result.reward:g}[/]")
    if result.failed:
        stdout.print("failing checks:")
        for name_ in result.failed:
            stdout.print(f"  - {name_}")
    raise typer.Exit(0 if result.reward is not None and result.reward >= 1 else 1)


@base_image_app.command("build")
def base_image_build(
    from_registry: Annotated[str | None, typer.Option(
        help="Build from this registry image (e.g. debian:bookworm-slim) with apt-get "
             "instead of debootstrap.")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if the image exists.")] = False,
) -> None:
    """Build the toolbox image generated tasks build FROM (offline: debootstrap, as root)."""
    from taskloom.sandbox import base_image
    from taskloom.sandbox.docker_runtime import docker_client

    try:
        client = docker_client(timeout=900)
        usable, status = base_image.base_image_status(client)
        if usable and not force:
            stdout.print(f"{status} already built (use --force to rebuild)")
            return
        log = lambda line: console.print(f"  {line}", highlight=False, markup=False)  # noqa: E731
        with console.status(f"building {base_image.BASE_IMAGE} (about a minute)"):
            if from_registry:
                base_image.build_from_registry(client, from_registry, log=log)
            else:
                base_image.build_offline(client, log=log)
        stdout.print(base_image.base_image_status(client)[1])
    except TaskloomError as exc:
        raise _fail(exc) from exc


@base_image_app.command("export")
def base_image_export(
    source: Annotated[str, typer.Option("--from", help="docker: export the built image "
                                                       "(~3 s); debootstrap: build from Debian "
                                                       "packages, no Docker needed (~1 min).")
                      ] = "docker",
    force: Annotated[bool, typer.Option(help="Redo an existing export.")] = False,
) -> None:
    """Unpack the base image into a folder for the daemonless bwrap runtime (as root)."""
    from taskloom.sandbox import rootfs

    try:
        if source == "docker":
            from taskloom.sandbox.docker_runtime import docker_client

            found = rootfs.export_from_docker(docker_client(), force=force)
        elif source == "debootstrap":
            found = rootfs.build_with_debootstrap(force=force)
        else:
            raise typer.BadParameter("--from is docker or debootstrap")
    except TaskloomError as exc:
        raise _fail(exc) from exc
    stdout.print(f"{found.image}: {found.path} ({found.source}, made {found.created})")


@base_image_app.command("show")
def base_image_show() -> None:
    """Print the base image name, version and toolbox packages."""
    from taskloom.sandbox import base_image

    stdout.print(f"{base_image.BASE_IMAGE} (toolbox {base_image.TOOLBOX_DIGEST})")
    stdout.print(" ".join(base_image.TOOLBOX_PACKAGES))


def _load_graph(extra: list[Path] | None):
    from taskloom.skill_graph.model import load_graph

    try:
        return load_graph(extra)
    except TaskloomError as exc:
        raise _fail(exc) from exc


@graph_app.command("check")
def graph_check(graph: GraphOption = None) -> None:
    """Check the graph: references, reachability and input/output types. Exit 1 on problems."""
    loaded = _load_graph(graph)
    stats = loaded.stats()
    stdout.print(f"[green]ok[/]: {stats['skills']} skills, {stats['scenarios']} scenarios, "
              f"{stats['types']} types, {stats['transitions']} typed transitions")


@graph_app.command("stats")
def graph_stats(graph: GraphOption = None,
                as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
                ) -> None:
    """Sizes, categories, domains, degrees and which skills have procedural primitives."""
    from taskloom.generators.procedural.primitives import PRIMITIVES

    loaded = _load_graph(graph)
    stats = loaded.stats()
    stats["procedural_primitives"] = len(set(PRIMITIVES) & set(loaded.skills))
    stats["skills_without_primitive"] = sorted(set(loaded.skills) - set(PRIMITIVES))
    if as_json:
        stdout.print_json(data=stats)
        return
    table = Table(show_header=False)
    for key, value in stats.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(value) or "-"
        table.add_row(key, str(value))
    stdout.print(table)


@graph_app.command("show")
def graph_show(
    scenario: Annotated[str | None, typer.Option(help="Draw only this scenario's "
                                                      "neighbourhood.")] = None,
    output: Annotated[Path, typer.Option("--out", help="SVG file to write.")] = Path(
        "skill-graph.svg"),
    graph: GraphOption = None,
) -> None:
    """Draw the graph (or a scenario's neighbourhood) as an SVG picture to open in a browser."""
    from taskloom.skill_graph.render import graph_svg, scenario_svg

    loaded = _load_graph(graph)
    try:
        text = scenario_svg(loaded, scenario) if scenario else graph_svg(loaded)
    except KeyError as exc:
        console.print(f"[bold red]error:[/] {exc.args[0]}")
        raise typer.Exit(2) from exc
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    stdout.print(f"wrote {output} ({len(text) // 1024} KiB); open it in a browser")


@app.command()
def doctor() -> None:
    """Check the sandbox engine, the base image and the optional Python extras."""
    from rich.markup import escape

    from taskloom.doctor import run_checks

    table = Table()
    for column in ("component", "status", "detail", "fix"):
        table.add_column(column, overflow="fold")
    checks = run_checks()
    for check in checks:
        status = {"ok": "[green]ok[/]", "missing": "[red]missing[/]",
                  "optional": "[yellow]not installed[/]",
                  "unavailable": "[yellow]unavailable[/]"}[check.status]
        table.add_row(check.component, status, escape(check.detail), escape(check.fix))
    stdout.print(table)
    if any(check.status == "missing" for check in checks):
        raise typer.Exit(1)


def main() -> None:  # pragma: no cover - console entry point
    """Entry point used by `python -m taskloom`."""
    app(prog_name="taskloom")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
