"""taskloom: synthesize verified, containerized terminal tasks for AI agents.

Python API (the CLI wraps the same functions):

    >>> import taskloom
    >>> task = taskloom.make("rotate nginx logs and keep 5")  # doctest: +SKIP
    >>> task.name, task.config.metadata["skills"]               # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskloom.models import Task


def make(request: str, *, count: int = 3, difficulty: str | dict[str, int] | None = None,
         out: str | Path | None = None, runtime: str = "docker", seed: int = 0) -> Task:
    """One verified task for a request in words (offline: procedural generator + sandbox).

    Args:
        request: What the task is about, e.g. "find the 3 busiest IPs in the access log".
        count: Candidates to generate and validate; the best accepted one is returned.
        difficulty: "easy" / "medium" / "hard", or levels such as {"noise": 3}.
        out: Write the task folder under this directory too.
        runtime: Sandbox runtime, "docker" or "bwrap".
        seed: Another seed gives other candidates.

    Raises:
        taskloom.errors.NoMatch: The request matches no skill.
        taskloom.errors.NoVerifiedTask: No candidate passed validation.
    """
    from taskloom.pipeline.on_demand import make_task

    return make_task(request, count=count, difficulty=difficulty,
                     out=Path(out) if out else None, runtime=runtime, seed=seed).task
