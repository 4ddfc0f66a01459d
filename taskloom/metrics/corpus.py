"""Corpus diversity metrics: pure functions over task records.

Each function takes plain task records (what a task is about and how it is solved) plus
the skill graph the tasks were planned on, and returns a number; `corpus_metrics` gathers
them all. Nothing here reads files or the run store: `taskloom.outputs.run` builds the
records of a run and calls these.

- skill coverage: share of the graph's skills used by at least one task.
- transition coverage: share of the graph's typed transitions (skill -> next skill within
  a scenario) that consecutive skills of some task use.
- scenario entropy: Shannon entropy of the tasks' scenarios, divided by log(number of
  scenarios in the graph).
- category entropy: Shannon entropy of the categories of every skill use, divided by
  log(number of categories in the graph); TDScaling's domain / reasoning-mode entropy.
- action complexity: the commands in each solve.sh and the distinct programs they run,
  summed over the corpus (`taskloom.metrics.shell`).
- near-duplicate rate: share of the items reaching the corpus filter that it dropped as
  duplicates (status 'duplicate' in the run store).

Example:
    >>> normalized_entropy(["a", "b", "a", "b"])
    1.0
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import Field

from taskloom.metrics.shell import action_complexity
from taskloom.models import Frozen
from taskloom.skill_graph.model import SkillGraph


class TaskRecord(Frozen):
    """What the corpus metrics need to know about one task."""

    task_id: str = Field(description="Task id (folder name).")
    scenario: str = Field(description="Scenario id the task is set in.")
    skills: tuple[str, ...] = Field(description="Skill ids in workflow order.")
    solution: str = Field(default="", description="Text of solution/solve.sh.")


class CorpusMetrics(Frozen):
    """Every diversity metric of a corpus of tasks."""

    tasks: int = Field(ge=0, description="Tasks measured.")
    skills_used: int = Field(ge=0, description="Distinct graph skills used by some task.")
    skills_total: int = Field(ge=0, description="Skills in the graph.")
    skill_coverage: float = Field(ge=0, le=1, description="skills_used / skills_total.")
    transitions_used: int = Field(ge=0, description="Distinct graph transitions used.")
    transitions_total: int = Field(ge=0, description="Typed transitions in the graph.")
    transition_coverage: float = Field(ge=0, le=1,
                                       description="transitions_used / transitions_total.")
    scenario_entropy: float = Field(ge=0, le=1, description="Normalized entropy of scenarios.")
    category_entropy: float = Field(ge=0, le=1,
                                    description="Normalized entropy of skill categories.")
    commands_total: int = Field(ge=0, description="Commands in all solutions together.")
    commands_mean: float = Field(ge=0, description="Commands per solution.")
    tools: tuple[str, ...] = Field(description="Distinct programs all solutions run, sorted.")
    near_duplicates: int = Field(ge=0, description="Items the corpus filter dropped.")
    near_duplicate_rate: float = Field(ge=0, le=1,
                                       description="near_duplicates / items filtered.")


def normalized_entropy(labels: Iterable[str], support: int | None = None) -> float:
    """Shannon entropy of `labels`, divided by log(support): 0 = one label, 1 = uniform.

    Args:
        labels: One label per observation.
        support: How many labels were possible (default: how many were observed). With
            the graph's count, 1.0 means "spread evenly over everything the graph offers".
    """
    counts = Counter(labels)
    total = sum(counts.values())
    k = support if support is not None else len(counts)
    if total == 0 or k <= 1:
        return 0.0
    entropy = -sum(n / total * math.log(n / total) for n in counts.values())
    return min(1.0, max(0.0, entropy / math.log(k)))


def skill_coverage(records: Sequence[TaskRecord], graph: SkillGraph) -> float:
    """Share of the graph's skills that at least one task uses."""
    used = {s for record in records for s in record.skills} & set(graph.skills)
    return len(used) / len(graph.skills) if graph.skills else 0.0


def transitions_used(records: Sequence[TaskRecord], graph: SkillGraph) -> set[tuple[str, str]]:
    """Graph transitions that consecutive skills of some task follow."""
    possible = graph.transitions()
    return {pair for record in records for pair in zip(record.skills, record.skills[1:],
                                                      strict=False) if pair in possible}


def transition_coverage(records: Sequence[TaskRecord], graph: SkillGraph) -> float:
    """Share of the graph's typed transitions that consecutive skills of some task use."""
    total = len(graph.transitions())
    return len(transitions_used(records, graph)) / total if total else 0.0


def scenario_entropy(records: Sequence[TaskRecord], graph: SkillGraph) -> float:
    """Normalized entropy of the tasks' scenarios over the graph's scenarios."""
    return normalized_entropy((r.scenario for r in records), support=len(graph.scenarios))


def category_entropy(records: Sequence[TaskRecord], graph: SkillGraph) -> float:
    """Normalized entropy of the categories of every skill use over the graph's categories.

    Skills the graph does not know are left out (they have no category).
    """
    categories = {skill.category for skill in graph.skills.values()}
    uses = (graph.skills[s].category for r in records for s in r.skills if s in graph.skills)
    return normalized_entropy(uses, support=len(categories))


def near_duplicate_rate(outcomes: Iterable[str]) -> float:
    """Share of 'duplicate' among the outcomes of the items that reached the corpus filter.

    Args:
        outcomes: One final item status per item the filter saw ('duplicate' when it
            dropped the item, anything else when it kept it).
    """
    counts = Counter(outcomes)
    total = sum(counts.values())
    return counts["duplicate"] / total if total else 0.0


def corpus_metrics(records: Sequence[TaskRecord], graph: SkillGraph,
                   filter_outcomes: Iterable[str] = ()) -> CorpusMetrics:
    """All metrics of a corpus.

    Args:
        records: The tasks.
        graph: The skill graph they were planned on.
        filter_outcomes: Final statuses of the items the corpus filter saw (see
            `near_duplicate_rate`).
    """
    outcomes = list(filter_outcomes)
    complexity = [action_complexity(r.solution) for r in records]
    used = {s for r in records for s in r.skills} & set(graph.skills)
    pairs = transitions_used(records, graph)
    commands = sum(c.commands for c in complexity)
    return CorpusMetrics(
        tasks=len(records), skills_used=len(used), skills_total=len(graph.skills),
        skill_coverage=skill_coverage(records, graph), transitions_used=len(pairs),
        transitions_total=len(graph.transitions()),
        transition_coverage=transition_coverage(records, graph),
        scenario_entropy=scenario_entropy(records, graph),
        category_entropy=category_entropy(records, graph), commands_total=commands,
        commands_mean=commands / len(records) if records else 0.0,
        tools=tuple(sorted({t for c in complexity for t in c.tools})),
        near_duplicates=sum(1 for o in outcomes if o == "duplicate"),
        near_duplicate_rate=near_duplicate_rate(outcomes))
