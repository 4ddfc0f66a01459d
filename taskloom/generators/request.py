"""Natural-language request → structured parameters (skills, scenario, difficulty, constraints).

The request's actions become a skill path, read offline (`taskloom.generators.intent`) or,
when a model is given, by the model (`taskloom.generators.llm.intent`, which falls back to
the offline parser with a note when the model's answer cannot be used). Its best scenario
is matched by embedding similarity (title, description, domain) among those that hold the
path, and rules read words that set difficulty ("messy", "hard", "step by step"...), tools
and paths the user named, and numbers ("keep 5"). `understand` returns the parse with its
scores; when no action matches it raises `NoMatch` with the nearest skills, never a random
guess.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from taskloom.embedding import Embedder

if TYPE_CHECKING:
    import numpy as np

    from taskloom.config import LLMConfig
from taskloom.errors import InputError, NoMatch
from taskloom.generators.intent import NO_MATCH_FIX, Atom, parse_intent, uncovered
from taskloom.generators.protocols import DIMENSIONS
from taskloom.models import Frozen
from taskloom.skill_graph.model import SkillGraph

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
    skills: tuple[GraphMatch, ...] = Field(description="The skill path, in workflow order.")
    scenario: GraphMatch = Field(description="Closest scenario holding the path's first skill "
                                 "(and as much of the rest as any does).")
    nearest: tuple[GraphMatch, ...] = Field(description="Top skills by score, matched or not.")
    atoms: tuple[Atom, ...] = Field(default=(), description="Actions in order, constraints "
                                    "and named values, each with what covers it.")
    difficulty: dict[str, int] = Field(default_factory=dict,
                                       description="Levels set by words in the request.")
    paths: tuple[str, ...] = Field(default=(), description="Paths the user named.")
    file_names: tuple[str, ...] = Field(default=(), description="File names the user named.")
    numbers: tuple[int, ...] = Field(default=(), description="Numbers the user named.")
    tools: tuple[str, ...] = Field(default=(), description="Tools the user named.")
    parser: Literal["offline", "llm"] = Field(default="offline", description="Whose reading "
                                              "the atoms are: the offline parser's or the "
                                              "model's.")
    note: str = Field(default="", description="Why the offline parser read a request given "
                      "to the llm parser (its answer could not be used); else empty.")

    @property
    def uncovered(self) -> tuple[Atom, ...]:
        """Actions no skill of the path covers (`make` writes nothing unless best effort)."""
        return uncovered(self.atoms)



def understand(text: str, graph: SkillGraph, embedder: Embedder,
               allowed: set[str] | None = None, *, llm: LLMConfig | None = None) -> Request:
    """Parse a request: its intent atoms and skill path, scenario, difficulty, values.

    Args:
        text: The request ("a task where the agent must rotate nginx logs and keep 5").
        graph: The skill graph to match against.
        embedder: Sentence embedder (normalized vectors).
        allowed: Skills that can be generated (default: all of the graph).
        llm: The model that reads the actions (`llm.intent.intent_model`); None: the
            offline parser. The rest (scenario, difficulty, values) is read offline.

    Raises:
        NoMatch: The request is refused, or no action of it matches a skill; the message
            gives the reason or the nearest skills.
    """
    lowered = text.lower()
    all_tools = sorted({tool for s in graph.skills.values() for tool in s.tools})
    named_tools = tuple(t for t in all_tools if re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])",
                                                         lowered))
    parser, note = "offline", ""
    if llm is None:
        intent = parse_intent(text, graph, embedder, allowed=allowed, tools=named_tools)
    else:
        from taskloom.generators.llm.intent import parse_with_model

        reading = parse_with_model(text, graph, embedder, llm, allowed=allowed,
                                   tools=named_tools)
        intent, parser, note = reading.intent, reading.parser, reading.note
    nearest = tuple(GraphMatch(id=s, score=v) for s, v in intent.nearest)
    if not intent.path:
        missed = "; ".join(f"{a.text!r}: {a.why}" for a in uncovered(intent.atoms))
        close = ", ".join(f"{m.id} ({m.score:.2f})" for m in nearest)
        raise NoMatch(f"taskloom cannot make {text!r}: {missed}; nearest skills: {close}"
                      + (f" ({note})" if note else ""), field="request", fix=NO_MATCH_FIX)
    paths = tuple(dict.fromkeys(PATH.findall(text)))
    file_names = tuple(dict.fromkeys(FILE_NAME.findall(text)))
    numbers = _numbers(lowered)
    values = [*paths, *file_names, *map(str, numbers)]
    return Request(text=text, skills=tuple(GraphMatch(id=s, score=v) for s, v in
                                           zip(intent.path, intent.scores, strict=True)),
                   scenario=_scenario(text, graph, embedder, intent.path), nearest=nearest,
                   atoms=intent.atoms + tuple(Atom(kind="value", text=v) for v in values),
                   difficulty=_difficulty(lowered), paths=paths, file_names=file_names,
                   numbers=numbers, tools=named_tools, parser=parser, note=note)


_CACHE: dict[tuple, np.ndarray] = {}


def _scenario(text: str, graph: SkillGraph, embedder: Embedder,
              path: tuple[str, ...]) -> GraphMatch:
    """The scenario closest to the request among those holding the most of the path."""
    held = {s: sum(s in graph.scenarios_of(k) for k in path) for s in graph.scenarios_of(path[0])}
    candidates = sorted(s for s, n in held.items() if n == max(held.values()))
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

