"""Pick the planner, generator and refiner of a run's backend.

`procedural` (the offline default) needs nothing; `llm` and `hybrid` need the `llm` extra
and a configured OpenAI-compatible server. Objects are cached per process and config, so
stage functions on a worker build them once.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from taskloom.config import RunConfig
from taskloom.errors import ConfigError


@lru_cache(maxsize=8)
def skill_graph(files: tuple[str, ...]):
    """The merged skill graph of a run (shipped graph + the run's extra files)."""
    from taskloom.skill_graph.model import load_graph

    return load_graph([Path(f) for f in files])


@lru_cache(maxsize=4)
def _backend(config_json: str):
    config = RunConfig.model_validate_json(config_json)
    graph = skill_graph(config.graph)
    from taskloom.generators.procedural.backend import (
        PlanSettings,
        ProceduralGenerator,
        ProceduralPlanner,
        ProceduralRefiner,
    )

    fixed = {k: v for k, v in config.difficulty.model_dump().items() if v is not None}
    planner = ProceduralPlanner(graph, PlanSettings(
        seed=config.seed, difficulty=fixed, scenario=config.scenario, skills=config.skills))
    generator = ProceduralGenerator(graph)
    if config.backend == "procedural":
        return planner, generator, ProceduralRefiner(generator)
    raise ConfigError(f"backend {config.backend!r} is not available in this version",
                      field="backend", fix="use --backend procedural")


def backend_for(config: RunConfig):
    """(planner, generator, refiner) for the run's backend."""
    return _backend(config.model_dump_json())
