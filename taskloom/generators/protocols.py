"""What every backend (procedural, LLM, hybrid) exchanges: blueprints and drafts.

`Planner.plan(index)` turns an item index into a `Blueprint` (a sampled skill path, its
scenario, a difficulty vector, a seed); `Generator.generate(blueprint)` writes a `Draft`
(a whole task); `Refiner.refine(draft, verdicts)` repairs a draft that failed validation.
Each is a Protocol with one verb, so backends compose.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import Field

from taskloom.models import Frozen, Task, Usage, Verdict
from taskloom.skill_graph.steering import CoverageSnapshot

Level = Literal[1, 2, 3]
DIMENSIONS = ("steps", "tool_breadth", "data_volume", "noise", "specification",
              "edge_cases", "strictness")


class Difficulty(Frozen):
    """Seven difficulty dimensions, each 1 (easy) to 3 (hard)."""

    steps: Level = Field(default=1, description="Workflow length: 1-2, 3-4 or 5-7 skills.")
    tool_breadth: Level = Field(default=1, description="Distinct tool families required.")
    data_volume: Level = Field(default=1, description="Records and files in the inputs.")
    noise: Level = Field(default=1, description="Distractor files and malformed records.")
    specification: Level = Field(default=1,
                                 description="1 explicit steps, paths and formats; 3 goal only.")
    edge_cases: Level = Field(default=1,
                              description="Spaces/unicode in names, empty inputs.")
    strictness: Level = Field(default=1,
                              description="1 normalized comparisons; 3 exact bytes.")

    def as_vector(self) -> tuple[int, ...]:
        """The levels in DIMENSIONS order."""
        return tuple(getattr(self, name) for name in DIMENSIONS)

    def label(self) -> str:
        """Compact form, e.g. `s2-t1-v3-n1-p2-e1-o3`."""
        keys = "stvnpeo"
        return "-".join(f"{k}{v}" for k, v in zip(keys, self.as_vector(), strict=True))


STEP_RANGES: dict[int, tuple[int, int]] = {1: (1, 2), 2: (3, 4), 3: (5, 7)}


class Blueprint(Frozen):
    """The plan for one task: which skills, in which scenario, how hard, which seed."""

    index: int = Field(description="Item index in the run.")
    seed: int = Field(description="Seed every generation choice derives from.")
    scenario: str = Field(description="Scenario id that frames the task.")
    path: tuple[str, ...] = Field(description="Skill ids, in workflow order.")
    via: tuple[str, ...] = Field(default=(),
                                 description="Scenario linking each consecutive skill pair.")
    difficulty: Difficulty = Field(description="Difficulty vector.")
    details: str = Field(default="", description="Concrete scenario details (LLM planner).")
    numbers: tuple[int, ...] = Field(
        default=(), description="Numbers a request named (keep 5, top 3): a step whose "
                                "parameter range holds one uses it.")
    usage: Usage = Field(default_factory=Usage, description="Model usage of planning.")


class Draft(Frozen):
    """A candidate task and what is needed to judge it."""

    blueprint: Blueprint = Field(description="The plan it was made from.")
    task: Task = Field(description="The task itself.")
    expected_values: tuple[str, ...] = Field(
        default=(), description="Answers the instruction must not state verbatim.")
    generator: str = Field(description="Backend and version that wrote it.")
    attempt: int = Field(default=0, description="0 for the first draft, k after k refines.")
    usage: Usage = Field(default_factory=Usage, description="Model usage of writing it.")


class Planner(Protocol):
    """Turns an item index into a blueprint; a pure function of (config, graph, index).

    With coverage steering on, the run also passes a `CoverageSnapshot` (what the tasks
    exported among items < index - lag cover); a planner may favour what it lacks or ignore it.

    Example:
        >>> backend_for(RunConfig(seed=0)).planner.plan(3).path   # doctest: +SKIP
        ('logs.filter_by_level', 'text.count_frequency')
    """

    def plan(self, index: int, coverage: CoverageSnapshot | None = None) -> Blueprint:
        """The blueprint of item `index`."""
        ...


class Generator(Protocol):
    """Writes a whole task for a blueprint; raises `NoDraft` when it cannot.

    Example:
        >>> draft = generator.generate(blueprint)          # doctest: +SKIP
        >>> draft.task.file("solution", "solve.sh") is not None
        True
    """

    def generate(self, blueprint: Blueprint) -> Draft:
        """A draft for `blueprint`."""
        ...


class Refiner(Protocol):
    """Repairs a draft from its failing verdicts (and their logs); `NoDraft` when it cannot.

    Example:
        >>> refiner.refine(draft, report.verdicts).attempt   # doctest: +SKIP
        1
    """

    def refine(self, draft: Draft, verdicts: tuple[Verdict, ...]) -> Draft:
        """A new draft that should pass the checks `draft` failed."""
        ...
