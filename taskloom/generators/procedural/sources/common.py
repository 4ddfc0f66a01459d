"""What every source uses: time formats, the noise count, data locations, awkward names."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for annotations only: importing primitives loads every family, and the
    # families import this module (cron builds its own source), so a run-time import here
    # would make `import ...sources` fail half-way.
    from taskloom.generators.procedural.primitives.base import StepContext


def iso(epoch: int) -> str:
    """UTC timestamp in the logs' ISO format."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def clf_time(epoch: int) -> str:
    """UTC timestamp in nginx's common log format."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")


def day(epoch: int) -> str:
    """UTC date as YYYY-MM-DD."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


def noisy(ctx: StepContext) -> int:
    """How many malformed records / distractors to add for the noise level."""
    return (0, ctx.rng.randint(2, 4), ctx.rng.randint(5, 9))[ctx.difficulty.noise - 1]


def data_dir(ctx: StepContext, leaf: str) -> str:
    """A directory for input data under the domain's root."""
    return f"{ctx.domain.root}/{leaf}"


def spaced(ctx: StepContext, name: str) -> str:
    """A file name, made awkward at edge-case level 3."""
    if ctx.difficulty.edge_cases < 3:
        return name
    stem, dot, ext = name.partition(".")
    return ctx.rng.choice([f"{stem} 2025.{ext}", f"{stem}-été.{ext}", f"{stem} (old).{ext}"]) \
        if dot else name
