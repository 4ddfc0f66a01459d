"""Scenario-mediated path sampling with inverse-frequency weights.

A path starts at a skill whose input can be generated, then repeatedly steps
skill → scenario → skill, where the next skill shares the scenario and consumes what the
previous one produces. Weights favour what a plain random walk would rarely visit: a skill
is weighted by 1 / (number of scenarios it is in), a transition by 1 / (1 + the number of
skills that lead into the next skill). Higher tool breadth prefers steps that add tools.
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

    def skill_weight(self, skill: str) -> float:
        """Inverse of how often a random walk lands on the skill."""
        return 1.0 / max(1, len(self.graph.scenarios_of(skill)))

    def sample(self, rng: random.Random, length: int, *, tool_breadth: int = 1,
               scenario: str | None = None, start: str | None = None,
               steering: Steering | None = None) -> SampledPath:
        """The best path of up to `length` skills found in a bounded number of attempts.

        Args:
            rng: The item's private random generator.
            length: Wanted number of skills (1-7).
            tool_breadth: 1-3; higher prefers paths that need more distinct tools.
            scenario: Restrict the path to this scenario's skills (on-demand requests).
            start: Begin the path with this skill (on-demand requests).
            steering: Coverage so far: of several equally good paths, the one whose skills
                and transitions the corpus has used least is returned.
        """
        return self.sample_ranked(rng, length, tool_breadth=tool_breadth, scenario=scenario,
                                  start=start, steering=steering)[0]

    def sample_ranked(self, rng: random.Random, length: int, *, tool_breadth: int = 1,
                      scenario: str | None = None, start: str | None = None,
                      steering: Steering | None = None) -> list[SampledPath]:
        """Equally good paths (length, tool breadth), the most novel first when steering.

        Without steering this is the one path `sample` returns; with it, up to
        `steering.candidates` paths, so a caller can skip the ones it cannot realize.
        Arguments as for `sample`.
        """
        target_tools = TOOL_TARGETS[tool_breadth]
        best: SampledPath | None = None
        best_score = (-1, -1)
        ties: list[SampledPath] = []  # equally good paths, for steering to choose from
        wanted = 1 if steering is None else steering.candidates
        for _ in range(ATTEMPTS):
            path = self._walk(rng, length, tool_breadth, scenario, start)
            if path is None:
                continue
            score = (min(len(path.skills), length), min(len(path.tools(self.graph)),
                                                        target_tools))
            if score > best_score:
                best, best_score, ties = path, score, [path]
            elif score == best_score:
                ties.append(path)
            if score == (length, target_tools) and len(ties) >= wanted:
                break
        if best is None:
            raise ValueError(f"no path can start in scenario {scenario!r}" if scenario else
                             "no path could be sampled from the graph")
        if steering is None:
            return [best]
        # Most novel first; a stable sort keeps sampling order among equals.
        return sorted(ties, key=lambda path: -steering.novelty(path.skills))

    def _walk(self, rng: random.Random, length: int, tool_breadth: int,
              scenario: str | None, start: str | None = None) -> SampledPath | None:
        graph = self.graph
        starts = [start] if start else [s for s in self.starts
                                        if scenario is None or s in graph.skills_of(scenario)]
        if not starts:
            return None
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
            linking, chosen = _weighted(rng, options, weights)
            skills.append(chosen)
            via.append(linking)
            tools |= set(graph.skills[chosen].tools)
        if scenario is not None:
            framing = scenario
        elif via:
            framing = max(sorted(set(via)), key=via.count)
        else:
            framing = rng.choice(graph.scenarios_of(first))
        return SampledPath(tuple(skills), tuple(via), framing)


def _weighted(rng: random.Random, items: list, weights: list[float]):
    """One item, chosen with probability proportional to its weight."""
    total = sum(weights)
    point = rng.random() * total
    for item, weight in zip(items, weights, strict=True):
        point -= weight
        if point <= 0:
            return item
    return items[-1]
