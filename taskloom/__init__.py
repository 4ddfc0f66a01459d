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
    from taskloom.config import LLMConfig
    from taskloom.models import Task


def make(request: str, *, count: int = 3, difficulty: str | dict[str, int] | None = None,
         out: str | Path | None = None, runtime: str = "docker", seed: int = 0,
         best_effort: bool = False, parser: str = "offline",
         llm: LLMConfig | None = None) -> Task:
    """One verified task for a request in words (offline: procedural generator + sandbox).

    Args:
        request: What the task is about, e.g. "find the 3 busiest IPs in the access log".
        count: Candidates to generate and validate; the best accepted one is returned.
        difficulty: "easy" / "medium" / "hard", or levels such as {"noise": 3}.
        out: Write the task folder under this directory too.
        runtime: Sandbox runtime, "docker" or "bwrap".
        seed: Another seed gives other candidates.
        best_effort: Make the actions that can be made even when some cannot.
        parser: "offline", or "llm": a model reads the request's actions (`llm`, else
            $TASKLOOM_LLM_MODEL and $OPENAI_BASE_URL); an answer that cannot be used falls
            back to the offline parser.
        llm: The model and server of `parser="llm"`.

    Raises:
        taskloom.errors.NoMatch: The request is refused, matches no skill, or has an action
            no skill covers (and `best_effort` is off).
        taskloom.errors.NoVerifiedTask: No candidate passed validation.
        taskloom.errors.ConfigError: `parser="llm"` and no model is named.
    """
    from taskloom.pipeline.on_demand import make_task

    return make_task(request, count=count, difficulty=difficulty,
                     out=Path(out) if out else None, runtime=runtime, seed=seed,
                     best_effort=best_effort, parser=parser, llm=llm).task
