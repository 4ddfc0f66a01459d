"""Kinds of work in the skill graph, and plans that give each an equal share of a run."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from taskloom.errors import GraphError, NoDraft
from taskloom.generators.procedural import backend
from taskloom.generators.procedural.assemble import StepRefused
from taskloom.generators.procedural.backend import PlanSettings, ProceduralPlanner, blueprint_for
from taskloom.generators.procedural.primitives import PRIMITIVES
from taskloom.skill_graph.model import load_graph
from taskloom.skill_graph.sampling import PathSampler

GRAPH = load_graph()
EXTRA = """
[[category]]
name = "file search"
work = "finding things"

[[category]]
name = "hand work"
work = "crafts"

[[skill]]
id = "hand.fold_paper"
name = "fold paper"
category = "hand work"
consumes = "file_tree"
produces = "text_report"
tools = ["find"]
description = "Fold it."

[[skill]]
id = "hand.cut_paper"
name = "cut paper"
category = "loose ends"
consumes = "text_report"
produces = "text_report"
tools = ["wc"]
description = "Cut it."

[[skill]]
id = "hand.glue_paper"
name = "glue paper"
category = "hand work"
consumes = "text_report"
produces = "text_report"
tools = ["wc"]
description = "Glue it."
work = "art"

[[scenario]]
id = "crafts-afternoon"
title = "Crafts"
domain = "docs"
description = "An afternoon of paper."
skills = ["hand.fold_paper", "hand.cut_paper", "hand.glue_paper"]
"""


def test_a_skills_work_is_its_own_else_its_categorys_else_the_category_name(tmp_path):
    extra = tmp_path / "crafts.toml"
    extra.write_text(EXTRA)
    graph = load_graph([extra])
    assert graph.work_of("hand.glue_paper") == "art"
    assert graph.work_of("hand.fold_paper") == "crafts"
    assert graph.work_of("hand.cut_paper") == "loose ends"
    assert graph.work_of("files.find_large") == "finding things"  # a later entry wins
    assert graph.stats()["works"]["crafts"] == 1


def test_every_category_of_the_shipped_graph_names_its_work_and_why():
    used = {skill.category for skill in GRAPH.skills.values()}
    assert used <= set(GRAPH.categories)
    assert all(category.why for category in GRAPH.categories.values())
    # The world-writable audit is security though its category is administration.
    assert GRAPH.work_of("perms.find_world_writable") == "security"
    assert GRAPH.work_of("perms.chown_tree") == "system-administration"


def test_a_path_ends_in_its_goal_wherever_a_path_of_that_length_can():
    sampler = PathSampler(GRAPH, set(PRIMITIVES) & set(GRAPH.skills))
    ends, misses = 0, []
    for skill in sorted(sampler.allowed):
        goal = frozenset({skill})
        for length in range(1, 5):
            if not set(sampler.starts) & sampler.reaching(goal, length - 1):
                continue
            path = sampler.sample(random.Random(length), length, goal=goal)
            assert len(path.skills) == length
            if path.skills[-1] == skill:
                ends += 1
            else:
                misses.append((skill, path.skills))
    # Only a walk that may not repeat a skill misses, and only on longer paths.
    assert all(len(skills) >= 3 for _, skills in misses), misses
    assert ends >= 0.9 * (ends + len(misses)), misses


def test_reaching_counts_transitions_exactly():
    sampler = PathSampler(GRAPH, set(PRIMITIVES) & set(GRAPH.skills))
    transitions = GRAPH.transitions()
    goal = frozenset({"sqlite.group_by"})
    assert sampler.reaching(goal, 0) == {"sqlite.group_by"}
    layer = {"sqlite.group_by"}
    for steps in (1, 2, 3):
        layer = {s for s in sampler.allowed if any((s, t) in transitions for t in layer)}
        assert layer and sampler.reaching(goal, steps) == layer


@pytest.mark.parametrize("seed", [3])
def test_every_kind_of_work_gets_an_equal_share_of_a_runs_tasks(seed):
    skills = tuple(s for s in GRAPH.skills if s.split(".")[0] in ("csv", "sqlite", "json"))
    planner = ProceduralPlanner(GRAPH, PlanSettings(seed=seed, skills=skills))
    assert set(planner.works) == {"data-processing", "data-querying"}
    ends = Counter(planner.plan(index).path[-1] for index in range(60))
    works = Counter()
    for skill, count in ends.items():
        works[GRAPH.work_of(skill)] += count
    # Unbalanced, the 13 CSV and JSON skills would end nearly three tasks in four.
    assert 0.38 <= works["data-querying"] / 60 <= 0.62, works
    # Within a work every skill has its share too: no skill ends more than a third.
    assert max(ends.values()) <= 20, ends


def test_a_skill_where_it_never_works_is_settled_without_assembling(monkeypatch):
    planner = ProceduralPlanner(GRAPH, PlanSettings(seed=2))
    first = blueprint_for(GRAPH, ("perms.set_modes", "files.delete_old"), seed=11)
    assert planner.realizable(first, set()) is False
    level = first.difficulty.specification
    assert ("files.delete_old", 2, level) in planner.misplaced
    assembled = []
    monkeypatch.setattr(backend, "assemble", lambda *args: assembled.append(args))
    other = blueprint_for(GRAPH, ("files.copy_matching", "files.delete_old"), seed=12,
                          difficulty=first.difficulty)
    assert planner.realizable(other, set()) is False
    assert assembled == []


def test_settling_paths_by_their_refused_prefixes_changes_no_answer(monkeypatch):
    """Each dry run the planner settles from what it learnt gives what assembling says."""
    planner = ProceduralPlanner(GRAPH, PlanSettings(seed=0))
    learnt = planner.realizable
    compared = Counter()

    def both(blueprint, refused):
        answer = learnt(blueprint, refused)
        compared[answer] += 1
        assert answer == any(_assembles(blueprint, attempt) for attempt in range(3)), blueprint
        return answer

    monkeypatch.setattr(planner, "realizable", both)
    for index in range(20):
        planner.plan(index)
    assert planner.misplaced and compared[False] > 20 and compared[True] == 20, compared


def test_a_refused_prefix_settles_exactly_the_paths_that_share_it(monkeypatch):
    """Refused at step 2 on (a, b, c): (a, b, d) is settled, (a, e, c) is assembled."""
    base = blueprint_for(GRAPH, ("perms.set_modes",), seed=3)
    assembled = []

    def refuses_a_then_b(blueprint, graph, attempt):
        assembled.append((blueprint.path, attempt))
        if blueprint.path[:2] == ("a", "b"):
            raise StepRefused("b cannot follow a", 2, misplaced=False)

    monkeypatch.setattr(backend, "assemble", refuses_a_then_b)
    planner = ProceduralPlanner(GRAPH, PlanSettings(seed=0))
    refused = set()
    assert planner.realizable(base.model_copy(update={"path": ("a", "b", "c")}), refused) is False
    assert assembled == [(("a", "b", "c"), attempt) for attempt in range(3)]
    assembled.clear()
    assert planner.realizable(base.model_copy(update={"path": ("a", "b", "d")}), refused) is False
    assert assembled == []
    assert planner.realizable(base.model_copy(update={"path": ("a", "e", "c")}), refused) is True
    assert assembled == [(("a", "e", "c"), 0)]
    assert not planner.misplaced


def _assembles(blueprint, attempt):
    try:
        backend.assemble(blueprint, GRAPH, attempt)
    except NoDraft:
        return False
    return True


def test_a_story_that_asks_for_work_opens_only_a_task_that_does_it(tmp_path):
    """A scenario whose description asks for a fix (`premise`) frames no path without one:
    12 of 2,000 plans of a default run (seed 5) opened with "fix it and put it back in
    service" before steps that only scheduled the tool, or counted lines."""
    sampler = PathSampler(GRAPH, set(PRIMITIVES) & set(GRAPH.skills))
    told = {s for s, scenario in GRAPH.scenarios.items() if scenario.premise}
    assert {"broken-internal-tool", "unfinished-tool", "service-bring-up"} <= told
    skills = sorted({skill for s in told for skill in GRAPH.skills_of(s)} & sampler.allowed)
    framed = Counter()
    for skill in skills:
        for length in (1, 2):
            for seed in range(12):
                path = sampler.sample(random.Random(seed), length, start=skill)
                premise = set(GRAPH.scenarios[path.scenario].premise)
                assert not premise or premise & set(path.skills), (path.scenario, path.skills)
                framed[path.scenario in told] += 1
    assert framed[True] >= 50, framed  # the stories are still told where they fit
    blueprint = blueprint_for(GRAPH, ("cron.schedule_script",), seed=0)
    assert blueprint.scenario not in {"broken-internal-tool", "report-regression",
                                      "unfinished-tool"}, blueprint.scenario
    fixed = blueprint_for(GRAPH, ("code.fix_bug", "cron.schedule_script"), seed=0)
    assert fixed.scenario == "broken-internal-tool"
    mine = tmp_path / "mine.toml"
    mine.write_text(EXTRA.replace('skills = ["hand.fold_paper",',
                                  'premise = ["text.sort_unique"]\nskills = ["hand.fold_paper",'))
    with pytest.raises(GraphError, match=r"'text\.sort_unique' in its premise but not in its"):
        load_graph([mine])
