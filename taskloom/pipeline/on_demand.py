"""On-demand tasks: one request in words → the best verified task, in seconds.

understand the request (its actions in order and the skill path covering them, read
offline or, with `parser="llm"`, by a model; scenario, difficulty, constraints) → plan K
candidate blueprints of exactly that path → generate → validate them in parallel → return
the best accepted one (the most named paths, files and numbers used, then the lowest
candidate number). When none of K passes, K more are tried once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field

from taskloom.config import LLMConfig, ValidationConfig
from taskloom.embedding import Embedder
from taskloom.errors import InputError, NoDraft, NoMatch, NoVerifiedTask
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.protocols import DIMENSIONS, STEP_RANGES, Blueprint, Difficulty, Draft
from taskloom.generators.request import Request, understand
from taskloom.harbor import write_task_folder
from taskloom.models import Frozen, Task, TaskReport
from taskloom.seeding import derive_seed
from taskloom.skill_graph.model import SkillGraph


class MakeResult(Frozen):
    """The outcome of one request."""

    request: Request = Field(description="What the request was understood to ask for.")
    task: Task = Field(description="The chosen verified task.")
    report: TaskReport = Field(description="Its validation report.")
    candidates: int = Field(description="Candidates generated.")
    accepted: int = Field(description="Candidates that passed validation.")
    folder: str | None = Field(default=None, description="Where the task was written.")
    honored: tuple[str, ...] = Field(default=(),
                                     description="Named paths/files/numbers the task uses.")
    seconds: float = Field(description="Wall-clock seconds, request to verified task.")


def make_task(text: str, *, count: int = 3, difficulty: str | dict[str, int] | None = None,
              out: Path | None = None, runtime: str = "docker", seed: int = 0,
              best_effort: bool = False, parser: Literal["offline", "llm"] = "offline",
              llm: LLMConfig | None = None,
              status: Callable[[str], None] = lambda step: None) -> MakeResult:
    """One verified task for a request in words, with everything it needs opened here.

    The shipped skill graph, the default embedding model (run in numpy: ready in under a
    second, where loading torch takes seconds) and a sandbox runtime (closed when done).
    `parser="llm"` has a model read the request's actions: `llm`'s model and server, else
    $TASKLOOM_LLM_MODEL and $OPENAI_BASE_URL. `status` is told each step as it starts (the
    CLI shows a spinner).

    Raises:
        NoMatch: The request is refused, matches no skill (the message names the nearest
            ones), or has an action no skill covers and `best_effort` is off.
        NoVerifiedTask: No candidate passed validation (with the reasons).
        InputError: A difficulty or parser that cannot be read.
        ConfigError: `parser="llm"` and no model is named.
    """
    from taskloom.generators.backends import skill_graph
    from taskloom.generators.request import difficulty_from_option
    from taskloom.minilm import load_fast_embedder
    from taskloom.sandbox.runtime import open_runtime

    levels = difficulty_from_option(difficulty) if isinstance(difficulty, str) or \
        difficulty is None else dict(difficulty)
    if parser == "llm":
        from taskloom.generators.llm.intent import intent_model

        llm = intent_model(llm)  # before anything is opened: no model named fails here
    elif parser == "offline":
        llm = None
    else:
        raise InputError(f"unknown parser {parser!r}", field="--parser",
                         fix="use offline or llm")
    status(f"understanding the request with {llm.model}" if llm else
           "understanding the request")
    embedder = load_fast_embedder()
    with open_runtime(runtime) as sandbox:
        status(f"generating and validating {count} candidates")
        return make(text, graph=skill_graph(()), embedder=embedder, runtime=sandbox,
                    count=count, difficulty=levels, out=out, seed=seed,
                    best_effort=best_effort, llm=llm)


def candidate_blueprints(request: Request, graph: SkillGraph, *, count: int, seed: int,
                         first: int, difficulty: dict[str, int]) -> list[Blueprint]:
    """`count` blueprints of the request's skill path, each with its own data seed.

    Unset difficulty dimensions are level 1: an on-demand task is as simple as the request
    allows; the steps level is the one the path's length gives.
    """
    path = tuple(m.id for m in request.skills)
    steps = next(level for level, (low, high) in STEP_RANGES.items() if low <= len(path) <= high)
    levels = Difficulty(**{**{name: 1 for name in DIMENSIONS}, **difficulty, "steps": steps})
    return [blueprint_for(graph, path, seed=derive_seed(seed, "make", request.text),
                          index=index, difficulty=levels, scenario=request.scenario.id,
                          numbers=request.numbers)
            for index in range(first, first + count)]


def make(text: str, *, graph: SkillGraph, embedder: Embedder, runtime, count: int = 3,
         difficulty: dict[str, int] | None = None, out: Path | None = None, seed: int = 0,
         workers: int = 2, config: ValidationConfig | None = None,
         best_effort: bool = False, llm: LLMConfig | None = None) -> MakeResult:
    """Turn a request into the best verified task of exactly the skills it asks for.

    `llm`: the model that reads the request's actions (None: the offline parser).

    Raises:
        NoMatch: The request is refused, matches no skill (the message names the nearest
            ones), or has an action no skill covers and `best_effort` is off.
        NoVerifiedTask: No candidate passed validation (with the reasons).
    """
    from taskloom.generators.procedural.primitives import PRIMITIVES
    from taskloom.validators.engine import validate_all, validate_task

    started = time.monotonic()
    request = understand(text, graph, embedder, allowed=set(PRIMITIVES) & set(graph.skills),
                         llm=llm)
    missed = request.uncovered
    if missed and not best_effort:
        raise NoMatch(f"not every action of {text!r} can be made: " + "; ".join(
            f"{a.text!r} ({a.why})" for a in missed) + "; the rest maps to "
            + " -> ".join(m.id for m in request.skills), field="request",
            fix="rephrase the uncovered part, or pass --best-effort to make the rest")
    levels = {**request.difficulty, **(difficulty or {})}
    generator = ProceduralGenerator(graph)
    config = config or ValidationConfig()
    accepted: list[tuple[tuple, Draft, TaskReport]] = []
    reasons: list[str] = []
    made = 0
    for round_start in (0, count):
        drafts = []
        for blueprint in candidate_blueprints(request, graph, count=count, seed=seed,
                                              first=round_start, difficulty=levels):
            try:
                drafts.append(generator.generate(blueprint))
            except NoDraft as exc:
                reasons.append(f"candidate {blueprint.index}: {exc}")
        made += len(drafts)
        jobs = [lambda d=d: validate_task(d.task, runtime, config,
                                          expected_values=d.expected_values) for d in drafts]
        by_name = {d.task.name: d for d in drafts}
        for report in validate_all(iter(jobs), runtime, workers=workers):
            draft = by_name[report.task]
            if report.accepted:
                accepted.append((_rank(draft, request), draft, report))
            else:
                reasons.append(f"{report.task}: " + ", ".join(str(r) for r in report.reasons))
        if accepted:
            break
    if not accepted:
        raise NoVerifiedTask(f"none of {made} candidates for {text!r} passed validation:\n  "
                             + "\n  ".join(reasons[-6:]),
                             fix="try again with another --seed, or a simpler request")
    _, draft, report = min(accepted, key=lambda item: item[0])
    folder = str(write_task_folder(draft.task, out / draft.task.name)) if out else None
    return MakeResult(request=request, task=draft.task, report=report, candidates=made,
                      accepted=len(accepted), folder=folder,
                      honored=_honored(request, draft.task),
                      seconds=round(time.monotonic() - started, 2))


def _rank(draft: Draft, request: Request) -> tuple:
    """Most named values used first, then the lowest candidate number."""
    return (-len(_honored(request, draft.task)), draft.blueprint.index)


_FUNCTION_WORDS = frozenset((
    "a", "an", "the", "any", "only", "than", "by", "of", "to", "keep", "keeping", "retain",
    "retaining", "skip", "skipping", "exclude", "excluding", "except", "for", "but", "not",
    "leave", "leaving", "out", "ignore", "ignoring", "without", "top", "last", "newest",
    "first", "best", "biggest", "largest", "latest", "most", "recent", "older", "newer",
    "larger", "bigger", "smaller", "more", "less", "fewer", "greater", "sorted", "ordered",
    "ranked",
))


def _honored(request: Request, task: Task) -> tuple[str, ...]:
    """The named values and constraints of the request that the task's instruction uses."""
    text = task.instruction
    lowered = text.lower()
    named = [*request.paths, *request.file_names]
    found = [item for item in named if item in text]
    found += [str(n) for n in request.numbers
              if re.search(rf"(?<![\w.]){n}(?![\w.])", text)]
    for atom in request.atoms:
        if atom.kind != "constraint":
            continue
        words = [w for w in re.findall(r"[\w*-]+", atom.text.lower()) if w not in _FUNCTION_WORDS]
        # "drafts" is used when the instruction says "draft"; "5" as a number, not in "15".
        if words and all(re.search(rf"(?<![\w.]){re.escape(w.rstrip('s')[:max(4, len(w) - 2)])}",
                                   lowered) for w in words):
            found.append(atom.text)
    return tuple(found)
