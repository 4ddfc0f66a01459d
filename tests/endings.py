"""Endings: the reward a task's reference solution earns when something is done after it.

What a red team did to earn the reward without the work, replayed as an ending appended to
the reference solution, each in its own phase of one trial.
"""

from __future__ import annotations

import functools

from taskloom.config import ValidationConfig
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.models import Task, TaskFile
from taskloom.sandbox.trial import Phase
from taskloom.skill_graph.model import load_graph
from taskloom.validators.engine import plan_trial
from taskloom.validators.protocol import TrialPart

GRAPH = load_graph()


@functools.cache
def task_for(skills: tuple[str, ...], seed: int, scenario: str | None = None) -> Task:
    """The procedural task of these skills and seed (in this scenario), made once (a Task
    is frozen)."""
    blueprint = blueprint_for(GRAPH, skills, seed=seed, scenario=scenario)
    return ProceduralGenerator(GRAPH).generate(blueprint).task


def rewards(runtime, skills: tuple[str, ...], seed: int, endings: dict[str, str],
            scenario: str | None = None) -> dict[str, float]:
    """The reward of the task's reference solution followed by each ending, in one trial."""
    task = task_for(skills, seed, scenario)
    fix = task.file("solution", "solve.sh").content.decode()
    return solution_rewards(runtime, task, {name: fix + end for name, end in endings.items()})


def solution_rewards(runtime, task: Task, solutions: dict[str, str]) -> dict[str, float]:
    """The reward of each solution script, each in its own phase of one trial."""
    part = TrialPart(phases=tuple(Phase(name=name, solution=name) for name in solutions),
                     solutions={name: (TaskFile(path="solve.sh", content=script.encode(),
                                                mode=0o755),)
                                for name, script in solutions.items()})
    plan, _ = plan_trial(task, ValidationConfig(), [part])
    return {phase.name: phase.reward for phase in runtime.run(plan).phases}
