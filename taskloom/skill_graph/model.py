"""The skill graph: artifact types, skills, scenarios, loaded from TOML and checked.

```
[[type]]      name, parent (subtype of), source (can be made as input data), description
[[category]]  name, work (the kind of work its skills are), why (the reason for that work)
[[skill]]     id, name, category, consumes, produces, tools, description, work (overrides)
[[scenario]]  id, title, domain, description, skills = [skill ids]
```

In networkx the graph is bipartite: a node per skill and per scenario, an edge when a
scenario uses a skill. A workflow path alternates skill → scenario → skill; consecutive
skills chain when the first produces a type the second consumes (or a subtype of it).
`load_graph` checks the whole file before anything uses it and reports every problem
with the file and the entry that has it.

A skill's **work** is the kind of work a task ending in it is (`work_of`): the skill's own
`work`, else its category's, else the category's name. The planner gives every kind of
work an equal share of a run's tasks; the shipped graph names works as Terminal-Bench 2.0
names its task categories, so a corpus's breadth reads against that benchmark's.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

import networkx as nx
from pydantic import Field, ValidationError

from taskloom.errors import GraphError
from taskloom.models import Frozen

DEFAULT_GRAPH = Path(__file__).with_name("data") / "default.toml"
TABLES = (("type", "name"), ("category", "name"), ("skill", "id"), ("scenario", "id"))


class ArtifactType(Frozen):
    """A kind of thing a skill reads or writes (a log file, a CSV table, a git repo...)."""

    name: str = Field(description="Type name, e.g. csv_table.")
    parent: str | None = Field(default=None, description="Supertype, e.g. log_file for app_log.")
    source: bool = Field(default=False, description="Can be generated as a task's input data.")
    description: str = Field(default="", description="What a value of this type is.")


class Category(Frozen):
    """A category of skills, and the kind of work its skills are."""

    name: str = Field(description="Category name, as skills' `category` spell it.")
    work: str = Field(description="The kind of work, e.g. 'data-processing'.")
    why: str = Field(default="", description="Why the category is that kind of work.")


class Skill(Frozen):
    """One command-line capability."""

    id: str = Field(description="Stable id, `area.verb_object`.")
    name: str = Field(description="Short human name.")
    category: str = Field(description="Area, e.g. 'log analysis'.")
    consumes: str = Field(description="Artifact type it reads.")
    produces: str = Field(description="Artifact type it writes.")
    tools: tuple[str, ...] = Field(description="Commands a reference solution uses.")
    description: str = Field(description="One sentence: what a person does with it.")
    phrases: tuple[str, ...] = Field(default=(), description="Everyday ways people ask for "
                                     "it, in their words (matched against requests).")
    work: str | None = Field(default=None, description="The kind of work, where it is not "
                             "its category's.")


class Scenario(Frozen):
    """A real-world context that connects skills."""

    id: str = Field(description="Stable id.")
    title: str = Field(description="Short human title.")
    domain: str = Field(description="Data domain that themes generated inputs.")
    description: str = Field(description="The situation, in one or two sentences.")
    skills: tuple[str, ...] = Field(description="Skills this scenario uses.")
    premise: tuple[str, ...] = Field(
        default=(), description="Skills of which a task told this story does one: the "
        "description asks for that work (a 'fix it' before steps with nothing to fix "
        "misleads). Empty: any path of the scenario's skills fits it.")


class GraphData(Frozen):
    """The content of one or more graph files, merged."""

    types: tuple[ArtifactType, ...] = Field(description="Artifact types.")
    categories: tuple[Category, ...] = Field(default=(), description="Skill categories.")
    skills: tuple[Skill, ...] = Field(description="Skills.")
    scenarios: tuple[Scenario, ...] = Field(description="Scenarios.")



class SkillGraph:
    """Skills and scenarios as a bipartite networkx graph, with type-aware chaining."""

    def __init__(self, data: GraphData) -> None:
        self.data = data
        self.types = {t.name: t for t in data.types}
        self.categories = {c.name: c for c in data.categories}
        self.skills = {s.id: s for s in data.skills}
        self.scenarios = {s.id: s for s in data.scenarios}
        self.graph = nx.Graph()
        for skill in data.skills:
            self.graph.add_node(skill_node(skill.id), kind="skill", category=skill.category)
        for scenario in data.scenarios:
            self.graph.add_node(scenario_node(scenario.id), kind="scenario",
                                domain=scenario.domain)
            for skill_id in scenario.skills:
                self.graph.add_edge(scenario_node(scenario.id), skill_node(skill_id))

    def is_a(self, child: str, parent: str) -> bool:
        """True when type `child` is `parent` or one of its subtypes."""
        seen = set()
        current: str | None = child
        while current is not None and current not in seen:
            if current == parent:
                return True
            seen.add(current)
            current = self.types[current].parent if current in self.types else None
        return False

    def chains(self, first: str, second: str) -> bool:
        """True when skill `first`'s output can be skill `second`'s input."""
        return self.is_a(self.skills[first].produces, self.skills[second].consumes)

    def frames(self, scenario_id: str, path: tuple[str, ...]) -> bool:
        """True when a task of this path may open with the scenario's story.

        The path does the work the description asks for (`premise`), if it asks for any.
        """
        premise = self.scenarios[scenario_id].premise
        return not premise or not set(premise).isdisjoint(path)

    def framing(self, path: tuple[str, ...], linking: list[str]) -> list[str]:
        """The scenarios that may tell the story of `path`.

        Those of `linking` (scenarios that link its steps, best first) that frame it, else
        those of its first skill that do.
        """
        return ([s for s in linking if self.frames(s, path)] or
                [s for s in self.scenarios_of(path[0]) if self.frames(s, path)] or
                linking or self.scenarios_of(path[0]))

    def scenarios_of(self, skill_id: str) -> list[str]:
        """Scenario ids that use a skill, sorted."""
        return sorted(n.split(":", 1)[1] for n in self.graph.neighbors(skill_node(skill_id)))

    def skills_of(self, scenario_id: str) -> list[str]:
        """Skill ids a scenario uses, sorted."""
        return sorted(n.split(":", 1)[1] for n in self.graph.neighbors(scenario_node(scenario_id)))

    def work_of(self, skill_id: str) -> str:
        """The kind of work a task ending in this skill is (module docstring)."""
        skill = self.skills[skill_id]
        category = self.categories.get(skill.category)
        return skill.work or (category.work if category else skill.category)

    def is_source(self, skill_id: str) -> bool:
        """True when a skill can start a workflow (its input can be generated as data)."""
        consumes = self.skills[skill_id].consumes
        return any(t.source and self.is_a(t.name, consumes) for t in self.types.values())

    def source_type_for(self, skill_id: str) -> list[str]:
        """Generatable types a skill accepts as its first input."""
        consumes = self.skills[skill_id].consumes
        return sorted(t.name for t in self.types.values() if t.source and self.is_a(t.name,
                                                                                    consumes))

    def transitions(self) -> set[tuple[str, str]]:
        """Every (skill, next skill) pair that shares a scenario and chains by type."""
        pairs = set()
        for scenario in self.scenarios.values():
            for first in scenario.skills:
                for second in scenario.skills:
                    if first != second and self.chains(first, second):
                        pairs.add((first, second))
        return pairs

    def stats(self) -> dict[str, object]:
        """Counts a person checks first: sizes, categories, degrees, transitions."""
        degrees = [self.graph.degree(skill_node(s)) for s in self.skills]
        return {
            "skills": len(self.skills),
            "scenarios": len(self.scenarios),
            "types": len(self.types),
            "categories": dict(sorted(Counter(s.category for s in self.skills.values()).items())),
            "works": dict(sorted(Counter(self.work_of(s) for s in self.skills).items())),
            "domains": dict(sorted(Counter(s.domain for s in self.scenarios.values()).items())),
            "transitions": len(self.transitions()),
            "source_skills": sum(self.is_source(s) for s in self.skills),
            "scenarios_per_skill": {"min": min(degrees), "max": max(degrees),
                                    "mean": round(sum(degrees) / len(degrees), 2)},
            "tools": len({tool for s in self.skills.values() for tool in s.tools}),
        }


def skill_node(skill_id: str) -> str:
    """The networkx node name of a skill."""
    return f"skill:{skill_id}"


def scenario_node(scenario_id: str) -> str:
    """The networkx node name of a scenario."""
    return f"scenario:{scenario_id}"


def load_graph(extra: list[Path] | None = None, *, include_default: bool = True) -> SkillGraph:
    """Load the shipped graph plus the user's files (later entries with the same id win).

    Raises:
        GraphError: A file is unreadable or the merged graph is inconsistent; every
            problem is listed with its file and entry.
    """
    files = ([DEFAULT_GRAPH] if include_default else []) + list(extra or [])
    if not files:
        raise GraphError("no skill graph file given", fix="pass --graph FILE")
    merged: dict[str, dict[str, tuple[Path, dict]]] = {kind: {} for kind, _ in TABLES}
    for path in files:
        for kind, key, entry in _entries(path):
            merged[kind][entry[key]] = (path, entry)
    data, problems = _build(merged)
    if data is not None:
        problems += check_graph(data, {k: {i: p for i, (p, _) in v.items()}
                                       for k, v in merged.items()})
    if problems:
        raise GraphError(f"{len(problems)} problem(s) in the skill graph:\n  - " +
                         "\n  - ".join(problems),
                         fix="correct the entries listed above (see docs in "
                             f"{DEFAULT_GRAPH.name} for the fields)")
    return SkillGraph(data)


def _entries(path: Path) -> list[tuple[str, str, dict]]:
    if not path.is_file():
        raise GraphError("skill graph file not found", path=path, fix="check the path")
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise GraphError(f"is not valid TOML: {exc}", path=path,
                         fix="fix the TOML syntax at the position shown") from exc
    unknown = set(document) - {kind for kind, _ in TABLES}
    if unknown:
        raise GraphError(f"unknown table(s) {sorted(unknown)}", path=path,
                         fix="use only " + ", ".join(f"[[{kind}]]" for kind, _ in TABLES) +
                             " entries")
    found = []
    for kind, key in TABLES:
        for position, entry in enumerate(document.get(kind, []), start=1):
            if not isinstance(entry, dict) or not isinstance(entry.get(key), str):
                raise GraphError(f"{kind} entry #{position} has no string `{key}`",
                                 path=path, field=f"{kind}[{position}].{key}",
                                 fix=f"give every [[{kind}]] a {key}")
            found.append((kind, key, entry))
    return found


def _build(merged) -> tuple[GraphData | None, list[str]]:
    problems: list[str] = []
    built: dict[str, list] = {kind: [] for kind, _ in TABLES}
    models = {"type": ArtifactType, "category": Category, "skill": Skill, "scenario": Scenario}
    for kind, entries in merged.items():
        for ident, (path, entry) in sorted(entries.items()):
            try:
                built[kind].append(models[kind].model_validate(entry))
            except ValidationError as exc:
                for error in exc.errors():
                    field = ".".join(str(p) for p in error["loc"])
                    problems.append(f"{path.name}: {kind} '{ident}' field `{field}`: "
                                    f"{error['msg']}")
    if problems:
        return None, problems
    return GraphData(types=tuple(built["type"]), categories=tuple(built["category"]),
                     skills=tuple(built["skill"]), scenarios=tuple(built["scenario"])), problems


def check_graph(data: GraphData, origin: dict[str, dict[str, Path]] | None = None) -> list[str]:
    """Every consistency problem: dangling references, unreachable nodes, type mismatches."""
    origin = origin or {kind: {} for kind, _ in TABLES}

    def where(kind: str, ident: str) -> str:
        path = origin.get(kind, {}).get(ident)
        return f"{path.name}: " if path else ""

    problems = []
    types = {t.name for t in data.types}
    for item in data.types:
        if item.parent is not None and item.parent not in types:
            problems.append(f"{where('type', item.name)}type '{item.name}' has unknown parent "
                            f"'{item.parent}'")
    for skill in data.skills:
        for field in ("consumes", "produces"):
            value = getattr(skill, field)
            if value not in types:
                problems.append(f"{where('skill', skill.id)}skill '{skill.id}' {field} unknown "
                                f"type '{value}' (declare it as a [[type]])")
    skill_ids = {s.id for s in data.skills}
    used: set[str] = set()
    for scenario in data.scenarios:
        for skill_id in scenario.skills:
            if skill_id not in skill_ids:
                problems.append(f"{where('scenario', scenario.id)}scenario '{scenario.id}' "
                                f"lists unknown skill '{skill_id}'")
        for skill_id in set(scenario.premise) - set(scenario.skills):
            problems.append(f"{where('scenario', scenario.id)}scenario '{scenario.id}' has "
                            f"'{skill_id}' in its premise but not in its skills")
        used.update(scenario.skills)
        if len(set(scenario.skills)) < 2:
            problems.append(f"{where('scenario', scenario.id)}scenario '{scenario.id}' links "
                            "fewer than two skills")
    for skill in data.skills:
        if skill.id not in used:
            problems.append(f"{where('skill', skill.id)}skill '{skill.id}' is in no scenario "
                            "(unreachable: add it to a scenario's skills)")
    if problems:
        return problems
    graph = SkillGraph(data)
    for skill in data.skills:
        if graph.is_source(skill.id):
            continue
        feeders = [other for scenario_id in graph.scenarios_of(skill.id)
                   for other in graph.skills_of(scenario_id)
                   if other != skill.id and graph.chains(other, skill.id)]
        if not feeders:
            problems.append(f"{where('skill', skill.id)}skill '{skill.id}' consumes "
                            f"'{skill.consumes}', which is no source type and which no skill "
                            "of its scenarios produces (incompatible input type)")
    return problems
