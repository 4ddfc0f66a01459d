"""Stated rules the task's data exercises, so that ignoring one misses the reward.

A task ships a mutant (`mutants/step-N-RULE.sh`) only for a rule of a stated step that its
data exercises; `benchmarks/rule_coverage.py` counts them per skill. These pin what the
benchmark found missing, and that the task says which steps it states.
"""

from __future__ import annotations

import pytest
from endings import solution_rewards, task_for

from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.protocols import Difficulty
from taskloom.skill_graph.model import load_graph

CRON = ("script.write_tool", "cron.schedule_script")


def mutant_steps(task) -> set[int]:
    return {int(f.path.split("-")[1]) for f in task.solution if f.path.startswith("mutants/")}


def test_the_task_lists_the_steps_its_instruction_states():
    """A goal-only instruction states its last step and the steps with a side effect
    (`metadata.stated_steps`), and only those ship mutants: the benchmark left out a stated
    step with a side effect before the last, as a hidden one."""
    graph = load_graph()
    goal = Difficulty(specification=3)
    for path, stated in [(CRON, [1, 2]), (("csv.sort_rows", "csv.to_json"), [2])]:
        task = ProceduralGenerator(graph).generate(
            blueprint_for(graph, path, seed=0, difficulty=goal)).task
        assert task.config.metadata["stated_steps"] == stated, path
        assert mutant_steps(task) == set(stated), path
    spelled = task_for(("csv.sort_rows", "csv.to_json"), 0)
    assert spelled.config.metadata["stated_steps"] == [1, 2]


def test_a_revert_has_a_rule_to_get_wrong_in_most_histories():
    """A revert by issue number states that the number is no start of a longer one; the
    history held such a pair before the revertible commit too rarely (27 of 40 seeds shipped
    a mutant; a longer number may now come first, and a later commit takes its start)."""
    shipped = [seed for seed in range(40)
               if mutant_steps(task_for(("git.revert_commit",), seed))]
    assert len(shipped) >= 31, len(shipped)


def test_a_later_cron_entry_goes_in_a_crontab_with_work_in_it():
    """Only a first step's crontab had entries to keep and a service account to use: after
    a step that writes the script, the keep and user rules shipped no mutant (rule_coverage:
    4 of 5 such steps shipped none)."""
    keep = [s for s in range(10) if any(f.path == "mutants/step-2-keep.sh"
                                        for f in task_for(CRON, s).solution)]
    user = [s for s in range(10) if any(f.path == "mutants/step-2-user.sh"
                                        for f in task_for(CRON, s).solution)]
    assert len(keep) >= 4 and len(user) >= 4, (keep, user)


@pytest.mark.bwrap
def test_a_later_cron_entry_that_drops_the_kept_work_earns_nothing(bwrap_runtime):
    task = task_for(CRON, 0)
    scripts = {f.path: f.content.decode() for f in task.solution
               if f.path.startswith(("mutants/step-2-", "alternatives/"))}
    assert set(scripts) == {"mutants/step-2-keep.sh", "mutants/step-2-user.sh",
                            "alternatives/other-tools.sh"}, sorted(scripts)
    reference = task.file("solution", "solve.sh").content.decode()
    found = solution_rewards(bwrap_runtime, task, {"reference": reference, **scripts})
    assert found == {"reference": 1.0, "alternatives/other-tools.sh": 1.0,
                     "mutants/step-2-keep.sh": 0.0, "mutants/step-2-user.sh": 0.0}, found
