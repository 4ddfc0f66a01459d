"""Coverage steering: what a run has covered so far, as an input of planning.

The runner counts, for the tasks exported among items < i - lag, how often each skill,
transition (consecutive skill pair) and scenario was used, and hands that
`CoverageSnapshot` to the planner of item i, which then prefers paths whose skills and
transitions the corpus lacks (see `Steering`).
The lag is fixed and the runner plans item i only once every item before i - lag is
finalized, so the snapshot, and with it plan i, is the same in every run and on resume.
The snapshot is part of the plan stage's content key.

Example:
    >>> tracker = CoverageTracker()
    >>> tracker.add(("csv.sort_rows", "sqlite.import_csv"), "retail")
    >>> tracker.snapshot(before=5).transition_uses("csv.sort_rows", "sqlite.import_csv")
    1
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable

from pydantic import Field

from taskloom.models import Frozen

ARROW = " -> "


class CoverageSnapshot(Frozen):
    """How often the run's exported tasks (among items < `before`) used each graph element."""

    before: int = Field(ge=0, description="Items with a smaller index were counted.")
    tasks: int = Field(ge=0, description="Exported tasks counted.")
    skills: dict[str, int] = Field(default_factory=dict, description="Skill id -> tasks "
                                   "using it.")
    transitions: dict[str, int] = Field(default_factory=dict, description="'skill -> next "
                                        "skill' -> tasks that chain them.")
    scenarios: dict[str, int] = Field(default_factory=dict, description="Scenario id -> tasks "
                                      "framed in it.")

    def skill_uses(self, skill: str) -> int:
        """Tasks that used `skill`."""
        return self.skills.get(skill, 0)

    def transition_uses(self, first: str, second: str) -> int:
        """Tasks in which `second` directly follows `first`."""
        return self.transitions.get(first + ARROW + second, 0)


class CoverageTracker:
    """Running counts over exported tasks, fed in item order."""

    def __init__(self) -> None:
        self.tasks = 0
        self.skills: Counter[str] = Counter()
        self.transitions: Counter[str] = Counter()
        self.scenarios: Counter[str] = Counter()

    def add(self, skills: Iterable[str], scenario: str) -> None:
        """Count one exported task."""
        path = list(skills)
        self.tasks += 1
        self.skills.update(set(path))
        self.transitions.update({a + ARROW + b for a, b in itertools.pairwise(path)})
        self.scenarios[scenario] += 1

    def snapshot(self, before: int) -> CoverageSnapshot:
        """The counts so far, labelled with the item bound they cover."""
        return CoverageSnapshot(before=before, tasks=self.tasks,
                                skills=dict(sorted(self.skills.items())),
                                transitions=dict(sorted(self.transitions.items())),
                                scenarios=dict(sorted(self.scenarios.items())))


class Steering:
    """How a coverage snapshot picks among equally good paths.

    The sampler keeps drawing walks as it always does (so the length and tool breadth a
    difficulty asks for are untouched) until it has `candidates` of the best score; the
    planner then realizes the most novel one it can: the path whose skills and transitions
    the corpus has used least. Weighting the walk itself toward rare transitions was
    measured and rejected: the rarest ones are mostly those the generator cannot realize,
    and chasing them made plans fall back to much shorter paths (benchmarks/steering.py).

    Args:
        coverage: What the corpus covers so far.
        strength: Exponent of 1 / (1 + uses) in the novelty of a skill or transition.
        candidates: Equally good paths compared (1 = plain sampling).
    """

    def __init__(self, coverage: CoverageSnapshot, strength: float = 1.0,
                 candidates: int = 16) -> None:
        self.coverage = coverage
        self.strength = strength
        self.candidates = candidates

    def novelty(self, skills: tuple[str, ...]) -> float:
        """How much a path adds: sum over its skills and transitions of 1 / (1 + uses)."""
        coverage = self.coverage
        return (sum((1 + coverage.skill_uses(s)) ** -self.strength for s in skills)
                + sum((1 + coverage.transition_uses(a, b)) ** -self.strength
                      for a, b in itertools.pairwise(skills)))
