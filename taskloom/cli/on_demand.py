"""One task on demand, and trying it: `make` and `check`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from taskloom.cli.common import app, console, fail, stdout
from taskloom.cli.validate import RuntimeName
from taskloom.errors import ConfigError, TaskloomError


class Parser(StrEnum):
    """Who reads a request's actions."""

    OFFLINE = "offline"
    LLM = "llm"


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
    best_effort: Annotated[bool, typer.Option(
        "--best-effort", help="Make the actions that can be made even when some cannot "
                              "(they are listed as not covered).")] = False,
    parser: Annotated[Parser, typer.Option(
        help="Who reads the request's actions: offline (rules and embeddings), or llm: an "
             "OpenAI-compatible model, named by --model or $TASKLOOM_LLM_MODEL, on the "
             "server of --base-url or $OPENAI_BASE_URL (`mock` runs offline). Answers are "
             "cached; one that cannot be used falls back to offline, with a note.")]
        = Parser.OFFLINE,
    model: Annotated[str | None, typer.Option(
        help="Model of --parser llm (default $TASKLOOM_LLM_MODEL).")] = None,
    base_url: Annotated[str | None, typer.Option(
        help="OpenAI-compatible server of --parser llm, e.g. http://127.0.0.1:8080/v1 "
             "(default $OPENAI_BASE_URL, else OpenAI).")] = None,
) -> None:
    """Make one verified task from a sentence, offline, in seconds.

    The request is read as actions in the order they must happen ("load the CSV into
    SQLite, then report totals per region"), each with the formats it reads and writes and
    its constraints; each action is covered by one skill, and the task is exactly that
    skill path. Prints every action, constraint and named value with what covers it, the
    scenario and difficulty, and where the task is. Exit 2, writing nothing, when an action
    cannot be made (the nearest skills are named; --best-effort makes the rest) or when
    the request is refused (the network, real hosts, harm); exit 2 too for --parser llm
    with no model named.
    """
    from taskloom.config import LLMConfig
    from taskloom.pipeline.on_demand import make_task

    try:
        with console.status("starting") as spinner:
            result = make_task(request, count=count, difficulty=difficulty, out=out,
                               runtime=runtime, seed=seed, best_effort=best_effort,
                               parser=parser.value,
                               llm=LLMConfig(model=model, base_url=base_url),
                               status=spinner.update)
    except TaskloomError as exc:
        raise fail(exc) from exc
    understood = result.request
    if understood.note:
        stdout.print(f"[yellow]note[/]: {escape(understood.note)}", soft_wrap=True)
    stdout.print(f"[bold]understood[/] (by the {understood.parser} parser)")
    kept = set(result.honored)
    for atom in understood.atoms:
        if atom.kind == "action":
            covered = f"{atom.covered_by} ({atom.score:.2f})" if atom.covered_by else \
                f"[red]not covered[/]: {escape(atom.why)}"
            stdout.print(f"  action:     {escape(atom.text)} -> {covered}", soft_wrap=True)
        else:
            used = "used" if atom.text in kept else "not used"
            stdout.print(f"  {atom.kind + ':':11s} {escape(atom.text)} ({used})",
                         soft_wrap=True)
    stdout.print(f"  scenario:   {understood.scenario.id} ({understood.scenario.score:.2f})")
    if understood.difficulty:
        stdout.print("  difficulty: " + ", ".join(f"{k}={v}" for k, v in
                                                  understood.difficulty.items()))
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

    status = console.status("building the environment")
    status.start()

    def ready(name: str) -> None:
        status.stop()
        console.print(f"container [bold]{name}[/]: work in it, then from another terminal "
                      f"`taskloom check {folder} --container {name}`; exit the shell to "
                      "remove it", soft_wrap=True)

    try:
        live.open_shell(task, ready=ready)
    except TaskloomError as exc:
        raise fail(exc) from exc
    finally:
        status.stop()


@app.command()
def check(
    folder: Annotated[Path, typer.Argument(help="The task folder.")],
    container: Annotated[str | None, typer.Option(
        help="A running Docker container to check (the one `make --shell` prints); "
             "without it a fresh environment is set up, checked and removed.")] = None,
    runtime: Annotated[RuntimeName, typer.Option(
        help="Where a fresh environment runs: docker, or bwrap (no daemon).")] =
        RuntimeName.DOCKER,
) -> None:
    """Run a task's tests against the current state of a live environment.

    Prints the reward and the checks that fail, so a person or an agent can attempt the
    task and see how far they got. Exit 0 when the reward is 1. A fresh environment's
    reward shows what the untouched state earns (0 for a sound task).
    """
    from taskloom.harbor import read_task_folder
    from taskloom.sandbox import live

    try:
        if container and runtime is not RuntimeName.DOCKER:
            raise ConfigError("--container names a Docker container", field="--runtime",
                              fix="drop --runtime, or drop --container to check a fresh "
                                  "bwrap environment")
        task = read_task_folder(folder)
        with console.status("checking" if container else "setting up a fresh environment"):
            result = live.check_task(task, container, runtime=runtime.value)
    except TaskloomError as exc:
        raise fail(exc) from exc
    if result.reward is None:
        stdout.print(f"[red]no reward[/]: {result.reward_error}")
    else:
        color = "green" if result.reward >= 1 else "red"
        stdout.print(f"reward [bold {color}]{result.reward:g}[/]")
    if result.failed:
        stdout.print("failing checks:")
        for name in result.failed:
            stdout.print(f"  - {name}")
    raise typer.Exit(0 if result.reward is not None and result.reward >= 1 else 1)
