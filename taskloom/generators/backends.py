"""Pick the planner, generator and refiner of a run's backend.

`procedural` (the offline default) needs nothing; `llm` and `hybrid` need the `llm` extra
and a configured OpenAI-compatible server, or the model name `mock`, which needs neither.
The procedural objects (graph, path sampler) are cached per process and config, so stage
functions on a worker build them once; the LLM agents are light and made per stage call
around that call's session.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from taskloom.config import RunConfig
from taskloom.errors import ConfigError
from taskloom.generators.protocols import Generator, Planner, Refiner


class Backend(NamedTuple):
    """The three agents of a run's backend."""

    planner: Planner
    generator: Generator
    refiner: Refiner


@lru_cache(maxsize=8)
def skill_graph(files: tuple[str, ...]):
    """The merged skill graph of a run (shipped graph + the run's extra files)."""
    from taskloom.skill_graph.model import load_graph

    return load_graph([Path(f) for f in files])


@lru_cache(maxsize=4)
def _procedural(config_json: str):
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
        seed=config.seed, difficulty=fixed, scenario=config.scenario, skills=config.skills,
        steering_strength=config.diversity.steering_strength,
        steering_candidates=config.diversity.steering_candidates))
    generator = ProceduralGenerator(graph, verifier=config.verifier)
    return Backend(planner, generator, ProceduralRefiner(generator))


def backend_for(config: RunConfig, chat=None) -> Backend:
    """The planner, generator and refiner of the run's backend.

    `chat` is the `ChatModel` the LLM agents talk to (in a run: the stage's replaying,
    recording session); by default a plain session on this process's transport.
    """
    procedural = _procedural(config.model_dump_json())
    if config.backend == "procedural":
        return procedural
    if config.backend not in ("llm", "hybrid"):
        raise ConfigError(f"unknown backend {config.backend!r}", field="backend",
                          fix="use --backend procedural, llm or hybrid")
    from taskloom.generators.llm import agents

    if chat is None:
        from taskloom.generators.llm.client import Session, transport_for

        chat = Session(transport_for(config.llm), config.llm.output_settings())
    planner, generator, refiner = procedural
    graph = skill_graph(config.graph)
    model = config.llm.model or ""
    if config.backend == "llm":
        return Backend(agents.LLMPlanner(planner, graph, chat),
                       agents.LLMGenerator(graph, chat, model),
                       agents.LLMRefiner(graph, chat, model))
    hybrid = agents.HybridGenerator(generator, chat, model)
    return Backend(planner, hybrid, agents.HybridRefiner(hybrid, refiner))
