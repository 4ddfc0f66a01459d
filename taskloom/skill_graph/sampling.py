"""Scenario-mediated path sampling with inverse-frequency weights.

A path starts at a skill whose input can be generated, then repeatedly steps
skill → scenario → skill, where the next skill shares the scenario and consumes what the
previous one produces. Weights favour what a plain random walk would rarely visit: a skill
is weighted by 1 / (number of scenarios it is in), a transition by 1 / (1 + the number of
skills that lead into the next skill). Higher tool breadth prefers steps that add tools.
A `goal` (a set of skills) makes the walk end in it: each step only goes where a goal skill
is exactly as many transitions away as steps are left (`reaching`), and of equally long
paths one that ends in the goal wins. Where no path of the wanted length ends in the goal,
the walk goes on as if there were none.
Every choice comes from the `random.Random` passed in, seeded per item by the planner.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from taskloom.skill_graph.model import SkillGraph
from taskloom.skill_graph.steering import Steering

# Distinct tools a path should need, per tool-breadth level.
TOOL_TARGETS = {1: 1, 2: 3, 3: 5}
ATTEMPTS = 40
STAY = 3.0


@dataclass(frozen=True)
class SampledPath:
    """A workflow: skills in order, the scenario linking each pair, the framing scenario."""

    skills: tuple[str, ...]
    via: tuple[str, ...]
    scenario: str

    def tools(self, graph: SkillGraph) -> set[str]:
        """Distinct tools the path's skills use."""
        return {tool for skill in self.skills for tool in graph.skills[skill].tools}


class PathSampler:
    """Samples typed, scenario-linked skill paths from a graph."""

    def __init__(self, graph: SkillGraph, allowed: set[str] | None = None) -> None:
        self.graph = graph
        self.allowed = set(graph.skills) if allowed is None else set(allowed) & set(graph.skills)
        into: dict[str, int] = {skill: 0 for skill in graph.skills}
        for _, second in graph.transitions():
            into[second] += 1
        self.inflow = into
        self.starts = sorted(s for s in self.allowed if graph.is_source(s))
        if not self.starts:
            raise ValueError("no allowed skill can start a path (none consumes a source type)")
        self.leads_to: dict[str, list[str]] = {skill: [] for skill in self.allowed}
        for first, second in graph.transitions():
            if first in self.allowed and second in self.allowed:
                self.leads_to[second].append(first)
        self._reaching: dict[frozenset[str], list[set[str]]] = {}

    def reaching(self, goal: frozenset[str], steps: int) -> set[str]:
        """Allowed skills from which a goal skill is exactly `steps` transitions away.

        Counted over every scenario's transitions, as a walk without a scenario moves (a
        walk that may not repeat a skill can still miss); cached per goal.
        """
        layers = self._reaching.setdefault(goal, [set(goal) & self.allowed])
        while len(layers) <= steps:
            layers.append({earlier for skill in layers[-1] for earlier in self.leads_to[skill]})
        return layers[steps]

    def skill_weight(self, skill: str) -> float:
        """Inverse of how often a random walk lands on the skill."""
        return 1.0 / max(1, len(self.graph.scenarios_of(skill)))

    def sample(self, rng: random.Random, length: int, *, tool_breadth: int = 1,
               scenario: str | None = None, start: str | None = None,
               steering: Steering | None = None,
               goal: frozenset[str] | None = None) -> SampledPath:
        """The best path of up to `length` skills found in a bounded number of attempts.

        Args:
            rng: The item's private random generator.
            length: Wanted number of skills (1-7).
            tool_breadth: 1-3; higher prefers paths that need more distinct tools.
            scenario: Restrict the path to this scenario's skills (on-demand requests).
            start: Begin the path with this skill (on-demand requests).
            steering: Coverage so far: of several equally good paths, the one whose skills
                and transitions the corpus has used least is returned.
            goal: End the path in one of these skills where the length allows.
        """
        return self.sample_ranked(rng, length, tool_breadth=tool_breadth, scenario=scenario,
                                  start=start, steering=steering, goal=goal)[0]

    def sample_ranked(self, rng: random.Random, length: int, *, tool_breadth: int = 1,
                      scenario: str | None = None, start: str | None = None,
                      steering: Steering | None = None,
                      goal: frozenset[str] | None = None) -> list[SampledPath]:
        """Equally good paths (length, tool breadth), the most novel first when steering.

        Without steering this is the one path `sample` returns; with it, up to
        `steering.candidates` paths, so a caller can skip the ones it cannot realize.
        Arguments as for `sample`.
        """
        target_tools = TOOL_TARGETS[tool_breadth]
        best: SampledPath | None = None
        best_score = (-1, -1, -1)
        ties: list[SampledPath] = []  # equally good paths, for steering to choose from
        wanted = 1 if steering is None else steering.candidates
        for _ in range(ATTEMPTS):
            path = self._walk(rng, length, tool_breadth, scenario, start, goal)
            if path is None:
                continue
            score = (min(len(path.skills), length), goal is None or path.skills[-1] in goal,
                     min(len(path.tools(self.graph)), target_tools))
            if score > best_score:
                best, best_score, ties = path, score, [path]
            elif score == best_score:
                ties.append(path)
            if score == (length, True, target_tools) and len(ties) >= wanted:
                break
        if best is None:
            raise ValueError(f"no path can start in scenario {scenario!r}" if scenario else
                             "no path could be sampled from the graph")
        if steering is None:
            return [best]
        # Most novel first; a stable sort keeps sampling order among equals.
        return sorted(ties, key=lambda path: -steering.novelty(path.skills))

    def _walk(self, rng: random.Random, length: int, tool_breadth: int,
              scenario: str | None, start: str | None = None,
              goal: frozenset[str] | None = None) -> SampledPath | None:
        graph = self.graph
        starts = [start] if start else [s for s in self.starts
                                        if scenario is None or s in graph.skills_of(scenario)]
        if not starts:
            return None
        starts = self._on_course(starts, goal, length - 1)
        first = _weighted(rng, starts, [self.skill_weight(s) for s in starts])
        skills, via = [first], []
        tools = set(graph.skills[first].tools)
        while len(skills) < length:
            current = skills[-1]
            options: list[tuple[str, str]] = []
            weights: list[float] = []
            scenarios = [scenario] if scenario else graph.scenarios_of(current)
            for linking in scenarios:
                for candidate in graph.skills_of(linking):
                    if (candidate in self.allowed and candidate not in skills
                            and graph.chains(current, candidate)):
                        new_tools = len(set(graph.skills[candidate].tools) - tools)
                        weight = 1.0 / (1 + self.inflow[candidate])
                        if via and linking == via[-1]:
                            weight *= STAY  # a workflow mostly stays in one context
                        if tool_breadth > 1:
                            weight *= 1 + new_tools * (tool_breadth - 1)
                        options.append((linking, candidate))
                        weights.append(weight)
            if not options:
                break
            # Steps after this one: go where the goal is that many steps away.
            on_course = set(self._on_course([c for _, c in options], goal,
                                            length - len(skills) - 1))
            weights = [w for (_, c), w in zip(options, weights, strict=True) if c in on_course]
            options = [option for option in options if option[1] in on_course]
            linking, chosen = _weighted(rng, options, weights)
            skills.append(chosen)
            via.append(linking)
            tools |= set(graph.skills[chosen].tools)
        if scenario is not None:
            framing = scenario
        elif via:  # the scenario linking most steps, of those whose story fits the path
            framing = graph.framing(tuple(skills), sorted(sorted(set(via)), key=via.count,
                                                          reverse=True))[0]
        else:
            framing = rng.choice(graph.framing(tuple(skills), []))
        return SampledPath(tuple(skills), tuple(via), framing)

    def _on_course(self, skills: list[str], goal: frozenset[str] | None,
                   left: int) -> list[str]:
        """The skills `left` steps from the goal (all of them, when none is or no goal)."""
        if goal is None:
            return skills
        course = self.reaching(goal, left)
        return [s for s in skills if s in course] or skills


def _weighted(rng: random.Random, items: list, weights: list[float]):
    """One item, chosen with probability proportional to its weight."""
    total = sum(weights)
    point = rng.random() * total
    for item, weight in zip(items, weights, strict=True):
        point -= weight
        if point <= 0:
            return item
    return items[-1]
