"""`taskloom validate`: prove any Harbor task folder, the way Harbor runs it."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from taskloom.cli.common import (
    BaseUrlOption,
    ModelOption,
    app,
    console,
    fail,
    progress_bars,
    stdout,
)
from taskloom.errors import TaskloomError
from taskloom.validators.probes import PROBE_NAMES


class Mode(StrEnum):
    """How environments are made."""

    AUTO = "auto"
    STRICT = "strict"


class Probes(StrEnum):
    """How the tamper probes run."""

    COMBINED = "combined"
    EACH = "each"


class RuntimeName(StrEnum):
    """Sandbox runtimes."""

    DOCKER = "docker"
    BWRAP = "bwrap"


def _checks_help() -> str:
    from taskloom.validators.registry import default_checks, registered

    names = ", ".join(f"{v.name}{'' if v.default else ' (off by default)'}"
                      for v in registered())
    return (f"Comma-separated checks: {names}. Plain names are the exact set (each brings "
            "the checks it needs); +name / -name edit the defaults, e.g. --checks=-mutations "
            f"or --checks=+judge. Default: {','.join(default_checks())}.")


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
    mode: Annotated[Mode, typer.Option(help="auto: emulate simple Dockerfiles FROM the base "
                                            "image (fast); strict: real docker build and a "
                                            "fresh container per phase.")] = Mode.AUTO,
    checks: Annotated[str | None, typer.Option(help=_checks_help(), show_default=False)
                      ] = None,
    probes: Annotated[Probes, typer.Option(
        help="Tamper probes: combined: one phase tries every tactic at once (then each "
             "alone, only when it earned a reward, to name them); each: every probe alone "
             f"({len(PROBE_NAMES)} phases).")] = Probes.COMBINED,
    report: Annotated[Path, typer.Option(help="Where to write the JSON report.")] = Path(
        "taskloom-validation.json"),
    alternatives: Annotated[Path | None, typer.Option(
        "--alternatives", exists=True, file_okay=False, dir_okay=True,
        help="A folder of more correct solutions, each of which must earn reward 1 (else "
             "over-specified): DIR/<task id>/*.sh for one task, DIR/*.sh for every task. "
             "Tasks may also ship their own as solution/alternatives/*.sh.",
        show_default=False)] = None,
    keep_images: Annotated[bool, typer.Option(help="Keep images built in strict mode.")] = False,
    show_logs: Annotated[bool, typer.Option("--logs", help="Print the log excerpt of every "
                                                         "failed check.")] = False,
    runtime_name: Annotated[RuntimeName, typer.Option(
        "--runtime", help="docker: containers on the Docker engine; bwrap: bubblewrap "
                          "sandboxes over the base image's exported files (root, no daemon; "
                          "see `taskloom doctor`).")] = RuntimeName.DOCKER,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Prove Harbor tasks work: nop 0, oracle ×R 1, alternatives 1, tamper probes 0, no leak.

    Exits 0 only when every task is accepted. Each rejection has a reason code:
    structure, build, trivial, oracle-fails, flaky, timeout, over-specified, weak-tests,
    hackable, leak, verifier (and underspecified from the judge).
    """
    from taskloom.config import ValidationConfig
    from taskloom.harbor import find_task_folders
    from taskloom.sandbox.runtime import open_runtime
    from taskloom.validators.report import validate_folders

    selection = tuple(c.strip() for c in (checks or "").split(",") if c.strip())
    config = ValidationConfig(repeats=repeats, mode=mode.value, checks=selection,
                              probes=probes.value, keep_images=keep_images,
                              alternatives=str(alternatives) if alternatives else None)
    try:
        chat = _chat(model, base_url)
        folders = find_task_folders(paths)
        runtime = open_runtime(runtime_name.value, keep_images=keep_images)
    except TaskloomError as exc:
        raise fail(exc) from exc
    try:
        with runtime, progress_bars() as progress:
            bar = progress.add_task("validating", total=len(folders), status="")
            done = []

            def show(task_report) -> None:
                done.append(task_report.accepted)
                progress.update(bar, advance=1, status=f"[green]{sum(done)} ok[/] "
                                f"[red]{len(done) - sum(done)} rejected[/]")

            run = validate_folders(folders, runtime, config, workers=workers, chat=chat,
                                   on_report=show)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: sandboxes removed; nothing was left running.[/]")
        raise typer.Exit(130) from None
    except TaskloomError as exc:
        raise fail(exc) from exc
    _print_reports(run.reports, show_logs)
    run.write(report)
    rate = len(run.reports) / run.seconds * 60 if run.seconds else 0.0
    stdout.print(f"{run.accepted} accepted, {len(run.reports) - run.accepted} rejected of "
                 f"{len(run.reports)} in {run.seconds:.1f} s ({rate:.0f} tasks/min); report: "
                 f"{report}")
    raise typer.Exit(0 if run.accepted == len(run.reports) else 1)


def _chat(model: str | None, base_url: str | None):
    """The model the judge check asks, when one is named (option or environment)."""
    if model is None and not os.environ.get("TASKLOOM_LLM_MODEL"):
        return None
    from taskloom.config import LLMConfig, llm_from_environment
    from taskloom.generators.llm.client import transport_for

    return transport_for(llm_from_environment(LLMConfig(model=model, base_url=base_url)))


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
