"""Procedural drafts for an explicit skill path, at a difficulty the seed picks.

The seed sets every dimension to one level (1-3); every fourth seed adds the noisiest,
strictest setting with few edge cases, so a family's tests see both kinds of data.
"""

from __future__ import annotations

from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.protocols import DIMENSIONS, Difficulty
from taskloom.skill_graph.model import load_graph

GRAPH = load_graph()


def difficulty(seed: int, steps: int = 1) -> Difficulty:
    level = seed % 3 + 1
    values = {name: level for name in DIMENSIONS}
    values["steps"] = steps
    if seed % 4 == 1:
        values.update(noise=3, edge_cases=1, strictness=3)
    return Difficulty(**values)


def draft(path: tuple[str, ...], seed: int):
    return ProceduralGenerator(GRAPH).generate(
        blueprint_for(GRAPH, path, seed=seed, difficulty=difficulty(seed, len(path))))
