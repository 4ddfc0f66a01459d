"""Coverage steering: what a run has covered so far, as an input of planning.

The runner counts, for the tasks exported among items < i - lag, how often each skill,
transition (consecutive skill pair) and scenario was used, and hands that
`CoverageSnapshot` to the planner of item i; the path sampler multiplies its weights by
`(1 + uses) ** -strength`, so skills and transitions the corpus lacks are drawn more often.
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
    """Weight factors of a snapshot: under-covered skills and transitions weigh more.

    Args:
        coverage: What the corpus covers so far.
        strength: Exponent; 0 leaves every weight unchanged.
    """

    def __init__(self, coverage: CoverageSnapshot, strength: float = 1.0) -> None:
        self.coverage = coverage
        self.strength = strength

    def skill(self, skill: str) -> float:
        """Factor of a skill: (1 + tasks using it) ** -strength."""
        return (1 + self.coverage.skill_uses(skill)) ** -self.strength

    def transition(self, first: str, second: str) -> float:
        """Factor of a step first -> second (the transition's and the new skill's)."""
        uses = self.coverage.transition_uses(first, second)
        return (1 + uses) ** -self.strength * self.skill(second)
