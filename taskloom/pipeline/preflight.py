"""A run config checked against what it names, before anything runs.

`load_run_config` checks types and ranges; this checks names: the scenario and skills
against the skill graph the run plans on, the validation checks against the table of
checks, and that a calibration model other than the mock has its client installed. A typo
ends in one line naming the key and the fix, not in a traceback mid-run.
"""

from __future__ import annotations

import difflib

from taskloom.config import MOCK_MODEL, RunConfig
from taskloom.errors import ConfigError, MissingExtra
from taskloom.generators.backends import skill_graph
from taskloom.validators.registry import select


def check_run_config(config: RunConfig) -> None:
    """Raise on anything the config names that does not exist.

    Raises:
        ConfigError: An unknown scenario, skill or check, or skills no path can start
            from; the message names the key and what is known.
        MissingExtra: Calibration asks a served model and the openai package is missing.
    """
    graph = skill_graph(config.graph)
    if config.scenario is not None and config.scenario not in graph.scenarios:
        raise ConfigError(f"unknown scenario {config.scenario!r}", field="scenario",
                          fix=_known(config.scenario, graph.scenarios, "scenarios"))
    for skill in config.skills:
        if skill not in graph.skills:
            raise ConfigError(f"unknown skill {skill!r}", field="skills",
                              fix=_known(skill, graph.skills, "skills"))
    if config.skills:
        if not any(graph.is_source(skill) for skill in config.skills):
            raise ConfigError("none of these skills can start a task (each needs the output "
                              "of another skill)", field="skills",
                              fix="add a skill that reads generated data (`taskloom graph list "
                                  "sources` lists them)")
        if config.scenario is not None and not set(config.skills) & set(
                graph.skills_of(config.scenario)):
            raise ConfigError(f"scenario {config.scenario!r} uses none of the skills",
                              field="skills", fix="choose skills of the scenario, or drop "
                                                  "--scenario")
    select(config.validation.checks)
    if config.calibration.enabled and config.calibration.model != MOCK_MODEL:
        import importlib.util

        if importlib.util.find_spec("openai") is None:
            raise MissingExtra("calibration.model needs the openai package",
                               fix="pip install 'taskloom[llm]', or drop calibration.model")


def _known(name: str, known, what: str) -> str:
    close = difflib.get_close_matches(name, list(known), n=3)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return f"{hint}`taskloom graph list {what}` lists all {len(known)}"
