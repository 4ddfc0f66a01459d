"""The procedural backend: planner, generator and refiner that need no model and no network.

- `ProceduralPlanner.plan(i, coverage)`: difficulty, length and a sampled path for item i,
  from `derive_seed(run_seed, "plan", i)` and, when steering, the run's coverage snapshot
  (skills and transitions the corpus lacks weigh more).
- `ProceduralGenerator.generate(bp)`: assembles the task; when a step does not apply to its
  input or the instruction would state an answer, it retries with the next sub-seed.
- `ProceduralRefiner.refine(draft, verdicts)`: a procedural draft that failed is not edited
  but regenerated from a new sub-seed of the same blueprint (new data, same skills).
"""

from __future__ import annotations

import itertools
import random

from pydantic import Field

from taskloom.errors import NoDraft
from taskloom.generators.procedural.assemble import StepRefused, assemble, build_task
from taskloom.generators.procedural.primitives import PRIMITIVES
from taskloom.generators.protocols import (
    DIMENSIONS,
    STEP_RANGES,
    Blueprint,
    Difficulty,
    Draft,
)
from taskloom.models import Frozen, Verdict
from taskloom.seeding import derive_seed, rng_for
from taskloom.skill_graph.model import SkillGraph
from taskloom.skill_graph.sampling import PathSampler
from taskloom.skill_graph.steering import CoverageSnapshot, Steering

GENERATION_ATTEMPTS = 12
PLAN_ATTEMPTS = 25


class PlanSettings(Frozen):
    """What the planner may choose from."""

    seed: int = Field(default=0, description="Run seed.")
    difficulty: dict[str, int] = Field(
        default_factory=dict, description="Fixed levels by dimension; others drawn per item.")
    scenario: str | None = Field(default=None, description="Only plan in this scenario.")
    skills: tuple[str, ...] = Field(default=(), description="Only use these skills (if set).")
    steering_strength: float = Field(default=1.0, ge=0, description="Exponent in a path's "
                                     "novelty when a coverage snapshot is given.")
    steering_candidates: int = Field(default=16, ge=1, description="Equally good paths "
                                     "compared by novelty when a coverage snapshot is given.")


class ProceduralPlanner:
    """Plans item i from (settings, graph, i) and the coverage snapshot it is given."""

    def __init__(self, graph: SkillGraph, settings: PlanSettings) -> None:
        self.graph = graph
        self.settings = settings
        allowed = set(PRIMITIVES) & set(graph.skills)
        if settings.skills:
            allowed &= set(settings.skills)
        self.sampler = PathSampler(graph, allowed)
        # Every kind of work gets an equal share of the run, and every skill an equal share
        # of its work's: item i draws a work, then an order of its skills, and its path ends
        # in the first of them that can end a path of its length (`realize`).
        ends = allowed & set(graph.skills_of(settings.scenario)) if settings.scenario else allowed
        works: dict[str, list[str]] = {}
        for skill in sorted(ends):
            works.setdefault(graph.work_of(skill), []).append(skill)
        self.works = dict(sorted(works.items()))
        # (skill, step number, specification level) that `errors.Misplaced` refused: every
        # path with that skill there is unrealizable, whatever the seed
        self.misplaced: set[tuple[str, int, int]] = set()

    def plan(self, index: int, coverage: CoverageSnapshot | None = None) -> Blueprint:
        """The blueprint of item `index`: the first sampled path the generator can realize.

        Sampling is type-aware but cannot know whether, say, a one-line report leaves
        anything for a text filter; a dry run of the assembler (milliseconds) settles it.
        With `coverage`, skills and transitions the run's tasks use least are favoured.
        """
        steering = None if coverage is None else Steering(
            coverage, self.settings.steering_strength, self.settings.steering_candidates)
        rng = rng_for(self.settings.seed, "plan", index)
        drawn = {name: rng.choice((1, 2, 3)) for name in DIMENSIONS}
        difficulty = Difficulty(**{**drawn, **self.settings.difficulty})
        work = rng.choice(list(self.works.values()))
        goal = tuple(rng.sample(work, len(work)))
        return self.realize(rng, difficulty, index=index,
                            seed=derive_seed(self.settings.seed, "generate", index),
                            scenario=self.settings.scenario, steering=steering, goal=goal)

    def realize(self, rng: random.Random, difficulty: Difficulty, *, index: int, seed: int,
                scenario: str | None = None, start: str | None = None,
                numbers: tuple[int, ...] = (), steering: Steering | None = None,
                goal: tuple[str, ...] = ()) -> Blueprint:
        """The first sampled blueprint the generator can assemble.

        Tries the length the difficulty asks for, then shorter ones: a slightly shorter task
        beats an unrealizable one (the stored difficulty says what was achieved). With a
        `goal` (skills in order of preference) the path ends in the first goal skill that
        can end a path of the length tried, and the length is at most the longest such.
        """
        low, high = STEP_RANGES[difficulty.steps]
        length = rng.randint(low, high)
        if goal:
            length = max((n for n in range(1, length + 1) if self._ending(goal, n)),
                         default=length)
        fallback = None
        tried: dict[Blueprint, bool] = {}  # the walks repeat paths; a dry run settles each once
        refused: set[tuple] = set()  # what `realizable` learnt of this item's paths
        for wanted in [length] * PLAN_ATTEMPTS + list(range(length - 1, 0, -1)) * 5:
            # Steered: the most novel realizable one of several equally good paths (the
            # rarest transitions are often rare because they cannot be realized).
            end = self._ending(goal, wanted)
            for path in self.sampler.sample_ranked(
                    rng, wanted, tool_breadth=difficulty.tool_breadth, scenario=scenario,
                    start=start, steering=steering, goal=frozenset({end}) if end else None):
                achieved = next(level for level, (lo, hi) in STEP_RANGES.items()
                                if lo <= len(path.skills) <= hi)
                blueprint = Blueprint(index=index, seed=seed, scenario=path.scenario,
                                      path=path.skills, via=path.via, numbers=numbers,
                                      difficulty=difficulty.model_copy(
                                          update={"steps": achieved}))
                fallback = fallback or blueprint
                if blueprint not in tried:
                    tried[blueprint] = self.realizable(blueprint, refused)
                if tried[blueprint]:
                    return blueprint
        return fallback

    def _ending(self, goal: tuple[str, ...], length: int) -> str | None:
        """The first goal skill that some path of `length` skills ends in, if any."""
        starts = set(self.sampler.starts)
        return next((skill for skill in goal
                     if starts & self.sampler.reaching(frozenset({skill}), length - 1)), None)

    def realizable(self, blueprint: Blueprint, refused: set[tuple]) -> bool:
        """True when the generator can assemble the blueprint within its first attempts.

        Three, not one: a single attempt halves planning time but rejects many of the
        novel paths steering ranks first (rare because they are hard to realize), and
        steering then moved plans off covered skills by 8% instead of 30% (seed 4).

        Settled without assembling: a path with a skill where it never works (`misplaced`),
        and an attempt on a path whose prefix that attempt already refused. A step's outcome
        depends only on the steps before it, given the seed, the attempt, the scenario, the
        difficulty and the length: `refused` holds (scenario, difficulty, length, attempt,
        the path up to the refusing step) for one item, whose seed is fixed.
        """
        path, level = blueprint.path, blueprint.difficulty.specification
        if any((skill, number, level) in self.misplaced
               for number, skill in enumerate(path[1:], start=2)):
            return False
        shape = (blueprint.scenario, blueprint.difficulty, len(path))
        for attempt in range(3):
            if any((shape, attempt, path[:end]) in refused for end in range(1, len(path) + 1)):
                continue
            try:
                assemble(blueprint, self.graph, attempt)
            except StepRefused as exc:
                if exc.misplaced:
                    self.misplaced.add((path[exc.number - 1], exc.number, level))
                    return False
                refused.add((shape, attempt, path[:exc.number]))
                continue
            except NoDraft:
                continue
            return True
        return False


class ProceduralGenerator:
    """Assembles tasks from blueprints, retrying sub-seeds when a step does not apply."""

    name = "procedural"

    def __init__(self, graph: SkillGraph, *, verifier: str = "shared") -> None:
        self.graph = graph
        self.verifier = verifier

    def generate(self, blueprint: Blueprint, *, first_attempt: int = 0) -> Draft:
        """A draft for `blueprint`.

        Raises:
            NoDraft: No sub-seed produced a usable task; the message says why.
        """
        reasons = []
        for attempt in range(first_attempt, first_attempt + GENERATION_ATTEMPTS):
            try:
                task, parts = build_task(blueprint, self.graph, attempt,
                                         verifier=self.verifier)
            except NoDraft as exc:
                reasons.append(str(exc))
                continue
            return Draft(blueprint=blueprint, task=task, expected_values=parts.answers,
                         generator=task.config.metadata["generator"], attempt=attempt)
        raise NoDraft(f"no usable task in {GENERATION_ATTEMPTS} attempts; last: "
                               f"{reasons[-1]}")


class ProceduralRefiner:
    """Regenerates a failed procedural draft from the next block of sub-seeds."""

    def __init__(self, generator: ProceduralGenerator) -> None:
        self.generator = generator

    def refine(self, draft: Draft, verdicts: tuple[Verdict, ...]) -> Draft:
        """A fresh draft of the same blueprint (verdicts inform nothing procedural)."""
        return self.generator.generate(draft.blueprint,
                                       first_attempt=draft.attempt + GENERATION_ATTEMPTS)


def blueprint_for(graph: SkillGraph, skills: tuple[str, ...], *, seed: int, index: int = 0,
                  difficulty: Difficulty | None = None, scenario: str | None = None,
                  numbers: tuple[int, ...] = ()) -> Blueprint:
    """A blueprint for an explicit skill path (tests, on-demand requests).

    Raises:
        ValueError: A skill is unknown or consecutive skills do not chain by type.
    """
    for skill in skills:
        if skill not in graph.skills:
            raise ValueError(f"unknown skill {skill!r}")
    for first, second in itertools.pairwise(skills):
        if not graph.chains(first, second):
            raise ValueError(f"{first} produces {graph.skills[first].produces}, which "
                             f"{second} cannot consume")
    difficulty = difficulty or Difficulty()
    shared = [next((s for s in graph.scenarios_of(b) if s in graph.scenarios_of(a)), None)
              for a, b in itertools.pairwise(skills)]
    framing = scenario or graph.framing(skills, [s for s in shared if s])[0]
    via = tuple(s or framing for s in shared)
    return Blueprint(index=index, seed=derive_seed(seed, "generate", index, *skills),
                     scenario=framing, path=skills, via=via, difficulty=difficulty,
                     numbers=numbers)
