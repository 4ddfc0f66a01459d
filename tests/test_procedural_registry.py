"""The registry-wide test: every primitive, several seeds and difficulties, validated in the
real sandbox; the same seed gives the same bytes, different seeds different tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskloom.config import ValidationConfig
from taskloom.errors import NoDraft
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.procedural.primitives import PRIMITIVES
from taskloom.generators.protocols import DIMENSIONS, Difficulty
from taskloom.harbor import write_task_folder
from taskloom.skill_graph.model import load_graph
from taskloom.validators.engine import validate_all, validate_task

GRAPH = load_graph()
SEEDS = (0, 1, 2)


def difficulty_for(seed: int) -> Difficulty:
    """Seed 0 easy, 1 mixed, 2 hard on every dimension (steps stay as the path says)."""
    levels = {0: 1, 1: 2, 2: 3}[seed]
    values = {name: levels for name in DIMENSIONS}
    values["steps"] = 1
    if seed == 1:
        values.update(noise=3, edge_cases=1, strictness=3)
    return Difficulty(**values)


def drafts_for(skill: str):
    generator = ProceduralGenerator(GRAPH)
    return [generator.generate(blueprint_for(GRAPH, (skill,), seed=seed,
                                             difficulty=difficulty_for(seed)))
            for seed in SEEDS]


def test_every_primitive_is_a_graph_skill_with_the_graph_types():
    assert set(PRIMITIVES) <= set(GRAPH.skills)


@pytest.mark.docker
@pytest.mark.timeout(3600)
def test_every_primitive_validates_in_the_sandbox(docker_runtime):
    config = ValidationConfig()
    jobs = []
    for skill in sorted(PRIMITIVES):
        for draft in drafts_for(skill):
            jobs.append(lambda d=draft: validate_task(d.task, docker_runtime, config,
                                                      expected_values=d.expected_values))
    rejected = [r for r in validate_all(jobs, docker_runtime, workers=2) if not r.accepted]
    assert not rejected, "\n".join(describe(r) for r in rejected)


def describe(report) -> str:
    return f"{report.task}: {[(v.check, v.details) for v in report.verdicts if not v.passed]}"


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("skill", sorted(PRIMITIVES))
def test_same_seed_same_bytes_other_seed_other_task(tmp_path, skill):
    generator = ProceduralGenerator(GRAPH)
    blueprint = blueprint_for(GRAPH, (skill,), seed=7, difficulty=difficulty_for(1))
    first = write_task_folder(generator.generate(blueprint).task, tmp_path / "a" / "t")
    second = write_task_folder(generator.generate(blueprint).task, tmp_path / "b" / "t")
    assert folder_bytes(first) == folder_bytes(second)
    other = blueprint_for(GRAPH, (skill,), seed=8, difficulty=difficulty_for(1))
    third = write_task_folder(generator.generate(other).task, tmp_path / "c" / "t")
    assert folder_bytes(third) != folder_bytes(first)


@pytest.mark.docker
@pytest.mark.timeout(3600)
def test_chained_paths_validate(docker_runtime):
    """A two-step chain from every primitive that has a realizable successor."""
    generator = ProceduralGenerator(GRAPH)
    config = ValidationConfig()
    successors: dict[str, list[str]] = {}
    for first, second in sorted(GRAPH.transitions()):
        if first in PRIMITIVES and second in PRIMITIVES:
            successors.setdefault(first, []).append(second)
    jobs = []
    for index, (first, options) in enumerate(sorted(successors.items())):
        difficulty = difficulty_for(index % 3).model_copy(update={"steps": 1})
        for second in options:
            try:
                draft = generator.generate(blueprint_for(GRAPH, (first, second), seed=index,
                                                         difficulty=difficulty))
            except NoDraft:
                continue
            jobs.append(lambda d=draft: validate_task(d.task, docker_runtime, config,
                                                      expected_values=d.expected_values))
            break
    assert len(jobs) >= 0.6 * len(successors), "too few primitives chain into a successor"
    rejected = [r for r in validate_all(jobs, docker_runtime, workers=2) if not r.accepted]
    assert not rejected, "\n".join(describe(r) for r in rejected)
