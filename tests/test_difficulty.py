"""Every difficulty dimension changes the generated tasks measurably (level 1 vs level 3,
everything else at level 1, the same items)."""

from __future__ import annotations

import re
import statistics

import pytest

from taskloom.errors import NoDraft
from taskloom.generators.procedural.backend import (
    PlanSettings,
    ProceduralGenerator,
    ProceduralPlanner,
)
from taskloom.generators.protocols import DIMENSIONS
from taskloom.skill_graph.model import load_graph

GRAPH = load_graph()
ITEMS = range(14)


def drafts(dimension: str, level: int):
    fixed = {name: 1 for name in DIMENSIONS}
    fixed[dimension] = level
    if dimension == "specification":
        fixed["steps"] = 2  # explicitness shows on multi-step tasks
    planner = ProceduralPlanner(GRAPH, PlanSettings(seed=99, difficulty=fixed))
    generator = ProceduralGenerator(GRAPH)
    made = []
    for index in ITEMS:
        try:
            made.append(generator.generate(planner.plan(index)))
        except NoDraft:
            continue
    assert len(made) >= len(ITEMS) - 2
    return made


def env_bytes(draft) -> int:
    return sum(len(f.content) for f in draft.task.environment)


def odd_names(draft) -> int:
    names = [f.path for f in draft.task.environment] + re.findall(
        r"/srv/\S+", draft.task.instruction)
    return sum(1 for name in names if " " in name or not name.isascii())


def checks_source(draft) -> str:
    return next(f for f in draft.task.tests if f.path == "test_outputs.py").content.decode()


MEASURES = {
    "steps": lambda d: len(d.blueprint.path),
    "tool_breadth": lambda d: len(d.task.config.metadata["tools"]),
    "data_volume": env_bytes,
    "noise": lambda d: len(d.task.environment) + sum(
        f.content.count(b"\n###") + f.content.count(b"Traceback") + f.content.count(b"\n\n")
        for f in d.task.environment),
    "specification": lambda d: -len(d.task.instruction),  # goal-only is shorter
    "edge_cases": odd_names,
    "strictness": lambda d: checks_source(d).count("'exact')"),
}


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_dimension_changes_tasks(dimension):
    measure = MEASURES[dimension]
    easy = statistics.mean(measure(d) for d in drafts(dimension, 1))
    hard = statistics.mean(measure(d) for d in drafts(dimension, 3))
    assert hard > easy, f"{dimension}: level 3 ({hard:.2f}) is not above level 1 ({easy:.2f})"


def test_difficulty_is_stored_on_every_task():
    for draft in drafts("noise", 2):
        stored = draft.task.config.metadata["difficulty"]
        assert stored == draft.blueprint.difficulty.model_dump()
        assert set(stored) == set(DIMENSIONS)


def test_specification_levels_read_differently():
    explicit = drafts("specification", 1)
    goal = drafts("specification", 3)
    assert all("Do the following, in order" in d.task.instruction for d in explicit
               if len(d.blueprint.path) > 1)
    assert all("Your goal:" in d.task.instruction for d in goal)
    assert any("(" in d.task.instruction and "hint" not in d.task.instruction
               for d in explicit)


def test_large_data_stays_within_a_task_budget():
    """Data volume 3 means more files and records, not tens of megabytes: a file tree holds
    at most TREE_BYTES of large files, so even a task that copies its tree stays a few MB."""
    from taskloom.generators.procedural.sources.trees import TREE_BYTES

    fixed = {name: 1 for name in DIMENSIONS} | {"data_volume": 3, "steps": 2}
    planner = ProceduralPlanner(GRAPH, PlanSettings(seed=5, difficulty=fixed))
    generator = ProceduralGenerator(GRAPH)
    sizes = []
    for index in range(40):
        try:
            sizes.append(env_bytes(generator.generate(planner.plan(index))))
        except NoDraft:
            continue
    assert max(sizes) > TREE_BYTES  # large trees are made (the budget is reached) ...
    assert max(sizes) < 3 * (TREE_BYTES + 200 * 4096)  # ... and a task holds few of them
