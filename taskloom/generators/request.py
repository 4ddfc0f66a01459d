"""Natural-language request → structured parameters (skills, scenario, difficulty, constraints).

Offline, a request is matched by embedding similarity against every skill ("name:
description", its tools and category) and scenario (title, description, domain), plus rules:
words that set difficulty ("messy", "hard", "step by step"...), tools and paths the user
named, and numbers ("keep 5"). `understand` returns the parse with its scores; when nothing
matches well it raises `NoMatch` with the nearest skills, never a random guess.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import Field

from taskloom.embedding import Embedder

if TYPE_CHECKING:
    import numpy as np
from taskloom.errors import InputError, NoMatch
from taskloom.generators.protocols import DIMENSIONS
from taskloom.models import Frozen
from taskloom.skill_graph.model import SkillGraph

MIN_SKILL_SCORE = 0.30  # cosine similarity below which a request matches no skill
SKILL_MARGIN = 0.06  # skills within this of the best count as matched too
MAX_SKILLS = 3
TOOL_BONUS = 0.08  # a tool the user named (awk, jq, git...) nudges the skills that use it

# (pattern, dimension, level): words people use for difficulty.
DIFFICULTY_WORDS: tuple[tuple[str, str | None, int], ...] = (
    (r"\b(easy|simple|basic|beginner|trivial)\b", None, 1),
    (r"\b(hard|difficult|complex|tricky|advanced|challenging|expert)\b", None, 3),
    (r"\b(medium|moderate|intermediate)\b", None, 2),
    (r"\b(messy|noisy|malformed|corrupt\w*|dirty|garbage|distractors?)\b", "noise", 3),
    (r"\b(clean|tidy|well-formed)\b", "noise", 1),
    (r"\b(large|huge|big|many|thousands|lots)\b", "data_volume", 3),
    (r"\b(small|tiny|few|handful)\b", "data_volume", 1),
    (r"\b(vague|goal only|underspecified|open-ended|without hints)\b", "specification", 3),
    (r"\b(step by step|step-by-step|explicit|detailed|guided|with hints)\b", "specification", 1),
    (r"\b(spaces?|unicode|non-ascii|weird names|odd names|special characters)\b",
     "edge_cases", 3),
    (r"\b(exact|byte for byte|strict|precise)\b", "strictness", 3),
    (r"\b(multi-step|pipeline|several steps|workflow|chain)\b", "steps", 2),
    (r"\b(single step|one step|one-liner)\b", "steps", 1),
)
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "twenty": 20}
PATH = re.compile(r"(?<![\w.])(/(?:[\w.@+-]+/?)+)")
FILE_NAME = re.compile(r"\b([\w-]+\.(?:log|csv|json|db|sqlite|txt|conf|ini|tar\.gz|tgz|zip|"
                       r"gz|sh|py|md|toml|yaml|yml))\b")
NUMBER = re.compile(r"\b(\d{1,4}|" + "|".join(NUMBER_WORDS) + r")\b")


class GraphMatch(Frozen):
    """A skill or scenario the request matched, with its score."""

    id: str = Field(description="Skill or scenario id.")
    score: float = Field(description="Cosine similarity (with rule bonuses).")


class Request(Frozen):
    """What a request was understood to ask for."""

    text: str = Field(description="The request as given.")
    skills: tuple[GraphMatch, ...] = Field(description="Matched skills, best first.")
    scenario: GraphMatch = Field(description="Best scenario containing the top skill.")
    nearest: tuple[GraphMatch, ...] = Field(description="Top skills by score, matched or not.")
    difficulty: dict[str, int] = Field(default_factory=dict,
                                       description="Levels set by words in the request.")
    paths: tuple[str, ...] = Field(default=(), description="Paths the user named.")
    file_names: tuple[str, ...] = Field(default=(), description="File names the user named.")
    numbers: tuple[int, ...] = Field(default=(), description="Numbers the user named.")
    tools: tuple[str, ...] = Field(default=(), description="Tools the user named.")



def understand(text: str, graph: SkillGraph, embedder: Embedder,
               allowed: set[str] | None = None) -> Request:
    """Parse a request offline.

    Args:
        text: The request ("a task where the agent must rotate nginx logs and keep 5").
        graph: The skill graph to match against.
        embedder: Sentence embedder (normalized vectors).
        allowed: Skills that can be generated (default: all of the graph).

    Raises:
        NoMatch: No skill scores above the threshold; the message lists the nearest ones.
    """
    if not text.strip():
        raise NoMatch("the request is empty", field="request",
                      fix='describe the task, e.g. "rotate nginx logs and keep 5"')
    lowered = text.lower()
    skills = sorted(allowed or graph.skills)
    all_tools = sorted({tool for s in graph.skills.values() for tool in s.tools})
    named_tools = tuple(t for t in all_tools if re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])",
                                                         lowered))
    vectors = _skill_vectors(graph, skills, embedder)
    query = embedder.embed([text])[0]
    scores = vectors @ query
    for index, skill in enumerate(skills):
        overlap = len(set(graph.skills[skill].tools) & set(named_tools))
        scores[index] += TOOL_BONUS * overlap
    order = (-scores).argsort(kind="stable")
    nearest = tuple(GraphMatch(id=skills[i], score=round(float(scores[i]), 3)) for i in order[:5])
    best = float(scores[order[0]])
    if best < MIN_SKILL_SCORE:
        close = ", ".join(f"{m.id} ({m.score:.2f})" for m in nearest)
        raise NoMatch(f"no skill matches {text!r} well enough (best score {best:.2f} < "
                      f"{MIN_SKILL_SCORE}); nearest skills: {close}", field="request",
                      fix="name what the agent must do with files, logs, CSV/JSON, archives, "
                          "checksums, SQLite, git, permissions, cron or config files "
                          "(`taskloom graph list skills` lists them)")
    matched = tuple(GraphMatch(id=skills[i], score=round(float(scores[i]), 3))
                    for i in order[:MAX_SKILLS] if scores[i] >= best - SKILL_MARGIN)
    scenario = _scenario(text, graph, embedder, matched[0].id)
    return Request(text=text, skills=matched, scenario=scenario, nearest=nearest,
                   difficulty=_difficulty(lowered), paths=tuple(dict.fromkeys(PATH.findall(text))),
                   file_names=tuple(dict.fromkeys(FILE_NAME.findall(text))),
                   numbers=_numbers(lowered), tools=named_tools)


def _skill_text(graph: SkillGraph, skill_id: str) -> str:
    skill = graph.skills[skill_id]
    return (f"{skill.name}: {skill.description} ({skill.category}; "
            f"{', '.join(skill.tools)})")


_CACHE: dict[tuple, np.ndarray] = {}


def _skill_vectors(graph: SkillGraph, skills: list[str], embedder: Embedder) -> np.ndarray:
    key = (id(embedder), tuple(_skill_text(graph, s) for s in skills))
    if key not in _CACHE:
        _CACHE[key] = embedder.embed(list(key[1]))
    return _CACHE[key]


def _scenario(text: str, graph: SkillGraph, embedder: Embedder, skill: str) -> GraphMatch:
    candidates = graph.scenarios_of(skill)
    texts = tuple(f"{graph.scenarios[s].title}: {graph.scenarios[s].description} "
                  f"({graph.scenarios[s].domain})" for s in candidates)
    key = (id(embedder), texts)
    if key not in _CACHE:
        _CACHE[key] = embedder.embed(list(texts))
    scores = _CACHE[key] @ embedder.embed([text])[0]
    best = int(scores.argmax())
    return GraphMatch(id=candidates[best], score=round(float(scores[best]), 3))


def _difficulty(lowered: str) -> dict[str, int]:
    levels: dict[str, int] = {}
    for pattern, dimension, level in DIFFICULTY_WORDS:
        if re.search(pattern, lowered):
            targets = [dimension] if dimension else [d for d in DIMENSIONS if d != "steps"]
            for name in targets:
                levels.setdefault(name, level)
    return levels


def _numbers(lowered: str) -> tuple[int, ...]:
    found = []
    for token in NUMBER.findall(lowered):
        found.append(NUMBER_WORDS.get(token) or int(token))
    return tuple(found)


def difficulty_from_option(value: str | None) -> dict[str, int]:
    """`--difficulty easy|medium|hard` or `noise=3,steps=2` as levels by dimension."""
    if not value:
        return {}
    named = {"easy": 1, "medium": 2, "hard": 3}
    if value in named:
        return {d: named[value] for d in DIMENSIONS}
    levels = {}
    for part in value.split(","):
        key, _, level = part.partition("=")
        key = key.strip()
        if key not in DIMENSIONS or level.strip() not in ("1", "2", "3"):
            raise InputError(f"cannot read {part!r}", field="--difficulty",
                             fix=f"use easy, medium, hard or DIM=1..3 with DIM in "
                                 f"{', '.join(DIMENSIONS)}")
        levels[key] = int(level)
    return levels

