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

console = Console(stderr=True)
out = Console()


def _fail(error: TaskloomError) -> typer.Exit:
    console.print(f"[bold red]error:[/] {error}", highlight=False)
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
) -> None:
    """Prove Harbor tasks work: build → nop (reward 0) → oracle ×R (reward 1) → leakage.

    Exits 0 only when every task is accepted. Each rejection has a reason code:
    structure, build, trivial, oracle-fails, flaky, timeout, weak-tests, leak, verifier.
    """
    from taskloom.config import ValidationConfig
    from taskloom.outputs.harbor import find_task_folders
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
        runtime = open_runtime("docker", keep_images=keep_images)
    except TaskloomError as exc:
        raise _fail(exc) from exc
    started = time.monotonic()
    reports = []
    try:
        with _progress() as progress:
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
    out.print(f"{accepted} accepted, {len(reports) - accepted} rejected of {len(reports)} "
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
    out.print(table)
    if show_logs:
        for item in reports:
            for verdict in item.verdicts:
                if not verdict.passed and verdict.log:
                    out.rule(f"{item.task}: {verdict.check} ({verdict.reason})")
                    out.print(verdict.log, markup=False, highlight=False)


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
            out.print(f"{status} already built (use --force to rebuild)")
            return
        log = lambda line: console.print(f"  {line}", highlight=False, markup=False)  # noqa: E731
        with console.status(f"building {base_image.BASE_IMAGE} (about a minute)"):
            if from_registry:
                base_image.build_from_registry(client, from_registry, log=log)
            else:
                base_image.build_offline(client, log=log)
        out.print(base_image.base_image_status(client)[1])
    except TaskloomError as exc:
        raise _fail(exc) from exc


@base_image_app.command("show")
def base_image_show() -> None:
    """Print the base image name, version and toolbox packages."""
    from taskloom.sandbox import base_image

    out.print(f"{base_image.BASE_IMAGE} (toolbox {base_image.TOOLBOX_DIGEST})")
    out.print(" ".join(base_image.TOOLBOX_PACKAGES))


@app.command()
def doctor() -> None:
    """Check the sandbox engine, the base image and the optional Python extras."""
    from taskloom.doctor import run_checks

    table = Table()
    for column in ("component", "status", "detail", "fix"):
        table.add_column(column, overflow="fold")
    checks = run_checks()
    for check in checks:
        status = {"ok": "[green]ok[/]", "missing": "[red]missing[/]",
                  "optional": "[yellow]not installed[/]"}[check.status]
        table.add_row(check.component, status, check.detail, check.fix)
    out.print(table)
    if any(check.status == "missing" for check in checks):
        raise typer.Exit(1)


def main() -> None:  # pragma: no cover - console entry point
    """Entry point used by `python -m taskloom`."""
    app(prog_name="taskloom")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
