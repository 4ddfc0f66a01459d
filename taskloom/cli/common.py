"""What every command shares: the typer app, the two consoles, errors and progress bars.

Exit codes: 0 success; 1 the command ran but some task was rejected (or fewer tasks than
asked were verified); 2 bad input or the infrastructure failed (the message says how to fix
it); 130 interrupted.
"""

from __future__ import annotations

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
ModelOption = Annotated[str | None, typer.Option(
    help="Model name for the llm/hybrid backends and the judge check (default "
         "$TASKLOOM_LLM_MODEL); `mock` is an offline, deterministic model that needs no "
         "server (demos, tests).")]
BaseUrlOption = Annotated[str | None, typer.Option(
    help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (default "
         "$OPENAI_BASE_URL, else OpenAI; not used by --model mock).")]

console = Console(stderr=True)
stdout = Console()


def fail(error: TaskloomError) -> typer.Exit:
    """Print an error (with its fix) on one line and give the exit for bad input: 2."""
    console.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def progress_bars() -> Progress:
    """The progress display of long commands (on stderr)."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                    TextColumn("eta"), TimeRemainingColumn(), console=console,
                    transient=False)
