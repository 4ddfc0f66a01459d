"""The `taskloom` command: thin typer commands over library functions.

One module per group of commands: `validate` (prove any Harbor task), `runs` (batch runs:
generate, runs, export, import, report), `on_demand` (make, check), `rollouts` (solve)
and `machine` (doctor, base-image, graph). `common` holds the app, the consoles and the exit
codes.
"""

from __future__ import annotations

# Importing a command module registers its commands, in this order in `--help`.
# isort: off
from taskloom.cli import validate, runs, on_demand, rollouts, machine  # noqa: F401
# isort: on
from taskloom.cli.common import app

__all__ = ["app", "main"]


def main() -> None:  # pragma: no cover - console entry point
    """Entry point used by `python -m taskloom.cli`."""
    app(prog_name="taskloom")
