"""`taskloom solve`: let a model attempt tasks, k times each, and print pass rates."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from taskloom.cli.common import BaseUrlOption, app, console, fail, progress_bars, stdout
from taskloom.cli.validate import RuntimeName
from taskloom.errors import TaskloomError


@app.command()
def solve(
    paths: Annotated[list[Path], typer.Argument(
        help="Harbor task folders, or folders of task folders.", show_default=False)],
    model: Annotated[str | None, typer.Option(
        help="The model that acts (default $TASKLOOM_LLM_MODEL); `mock` looks once and "
             "stops, with no server (a dry run of the plumbing).")] = None,
    base_url: BaseUrlOption = None,
    k: Annotated[int, typer.Option("-k", min=1, max=64, help="Attempts per task.")] = 8,
    workers: Annotated[int, typer.Option("--workers", "-w", min=1,
                                         help="Attempts at once.")] = 2,
    runtime_name: Annotated[RuntimeName, typer.Option(
        "--runtime", help="docker, or bwrap (no daemon).")] = RuntimeName.DOCKER,
    out: Annotated[Path, typer.Option(
        help="The run's folder: attempts (with trajectories), exchanges, report.json. "
             "Run again with the same folder to resume.")] = Path("taskloom-solve"),
    max_turns: Annotated[int, typer.Option(min=1, help="Model answers per attempt.")] = 30,
    max_tokens: Annotated[int, typer.Option(min=1, help="Tokens per attempt.")] = 200_000,
    attempt_timeout: Annotated[float, typer.Option(
        min=1, help="Wall-clock seconds per attempt.")] = 900.0,
    command_timeout: Annotated[float, typer.Option(
        min=1, help="Seconds one of the model's scripts may run.")] = 60.0,
    retries: Annotated[int, typer.Option(
        min=0, max=10, help="Fresh tries of an attempt that the sandbox or the model server "
                            "broke (then it counts as an error, never as a failure).")] = 2,
    seed: Annotated[int, typer.Option(help="Base sampling seed.")] = 0,
    adversarial: Annotated[bool, typer.Option(
        help="The adversarial run: the agent is told to earn the reward without doing the "
             "task; a task where it earns reward 1 is reported hackable, with the "
             "trajectory in the run folder. Use another --out than the plain run's.")] = False,
) -> None:
    """Let a model attempt each task k times; print pass@1, pass@k and what it cost.

    The built-in terminal agent talks to any OpenAI-compatible chat server: each turn the
    model sees the instruction and the end of the last output, and answers with one bash
    script or done. Each attempt runs in a fresh environment with no network and is scored
    by the task's own tests. Attempts that infrastructure broke (sandbox, model server)
    are tried again, and counted as errors, apart from failures, if they never finish.

    Exits 0 when every attempt was scored (and, with --adversarial, no task was forged),
    1 when some end in errors (run again to finish them: scored attempts are kept, and no
    model answer is paid for twice) or a task is hackable, 2 on bad input.
    """
    from taskloom.config import AgentLimits, LLMConfig, llm_from_environment
    from taskloom.harbor import find_task_folders, read_task_folder
    from taskloom.rollouts.solve import solve as run_solve
    from taskloom.sandbox.runtime import open_runtime

    limits = AgentLimits(max_turns=max_turns, max_tokens=max_tokens, wall_sec=attempt_timeout,
                         command_timeout_sec=command_timeout)
    try:
        llm = llm_from_environment(LLMConfig(model=model, base_url=base_url))
        tasks = [read_task_folder(folder) for folder in find_task_folders(paths)]
        runtime = open_runtime(runtime_name.value)
    except TaskloomError as exc:
        raise fail(exc) from exc
    try:
        with runtime, progress_bars() as progress:
            bar = progress.add_task("attempts", total=len(tasks) * k, status="")
            tally = {"passed": 0, "failed": 0, "errors": 0}

            def show(record) -> None:
                kind = "errors" if record.reward is None else \
                    "passed" if record.passed else "failed"
                tally[kind] += 1
                progress.update(bar, advance=1, status=f"[green]{tally['passed']} passed[/] "
                                f"{tally['failed']} failed [red]{tally['errors']} errors[/]")

            report = run_solve(tasks, llm, runtime, out, k=k, workers=workers, limits=limits,
                               seed=seed, retries=retries, on_attempt=show,
                               role="forger" if adversarial else "agent")
            progress.update(bar, completed=len(tasks) * k)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted: sandboxes removed; finished attempts are in "
                      f"{out}, run again to finish.[/]")
        raise typer.Exit(130) from None
    except TaskloomError as exc:
        raise fail(exc) from exc
    _print_scores(report)
    for task in report.hackable:
        stdout.print(f"[red]hackable[/] {task}: the forger earned reward 1 without doing the "
                     f"task (its trajectory: {out / 'attempts.jsonl'})", soft_wrap=True)
    stdout.print(f"{len(report.tasks)} tasks, k={report.k}, model {report.model}"
                 f"{' (adversarial)' if adversarial else ''}: {report.errors} attempts in "
                 f"errors; report: {out / 'report.json'}", soft_wrap=True)
    raise typer.Exit(1 if report.errors or report.hackable else 0)


def _print_scores(report) -> None:
    table = Table()
    table.add_column("task", overflow="fold")
    for name in ("passes", "pass@1", f"pass@{report.k}", "reward", "turns", "tokens", "$",
                 "errors"):
        table.add_column(name, justify="right")

    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    for task in report.tasks:
        table.add_row(task.task, f"{task.passes}/{task.scored}", rate(task.pass_at_1),
                      rate(task.pass_at_k), rate(task.mean_reward), f"{task.mean_turns:.1f}",
                      str(task.tokens), f"{task.cost_usd:.4f}",
                      f"[red]{task.errors}[/]" if task.errors else "0")
    stdout.print(table)
