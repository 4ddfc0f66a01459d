"""A request read by a model: the same `Intent` the offline parser gives, or that one, and why.

`parse_with_model` asks any OpenAI-compatible model (or `mock`) for an `IntentAnswer`: the
request's actions in the order they happen, each with the listed skill that does it and
its formats, the constraints, and a refusal. Listed skills are the allowed ones, one line
each (`id [reads -> writes]: description`); the answer schema sent holds them as an enum,
so a grammar-constrained server can write no other id. The answer is still checked
against the request and the graph: each action in the request's own words, every skill
known and allowed, consecutive skills chaining by the offline parser's rule
(`intent.chained`). Each action's score is the embedding match of its words against its
skill's texts, so a model's reading prints like the offline one.

An answer that fails a check never becomes a task. The offline refusal check runs first,
and a refused request never reaches the model (a model cannot un-refuse); a model's own
refusal is kept (it can only refuse more). A transport error, an answer that is not JSON
or off-schema, an action in words the request does not hold, an unknown or not-allowed
skill or a broken chain hands the request to the offline parser, with the reason in
`ModelReading.note` ("llm parser: ...; used the offline parser"). A checked answer can
still choose worse skills than the offline parser would: `benchmarks/make_understanding.py
--parser llm` measures a model.

Exchanges are kept in `cache_folder()/intent-exchanges.jsonl` under the key of every LLM
stage (request, prompt fingerprint, model settings): the same request to the same model
with the same settings is answered from disk, without a request.

Example:
    >>> reading = parse_with_model("sort the CSV by date, then turn it into JSON", graph,
    ...                            embedder, intent_model(LLMConfig(model="mock")))
    ...                                                               # doctest: +SKIP
    >>> reading.intent.path, reading.parser                           # doctest: +SKIP
    (('csv.sort_rows', 'csv.to_json'), 'llm')
"""

from __future__ import annotations

import copy
import itertools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field

from taskloom.config import LLMConfig, llm_from_environment
from taskloom.embedding import Embedder, cache_folder
from taskloom.errors import ConfigError, InvalidAnswer, ModelUnavailable, NoMatch, RequestRejected
from taskloom.generators.intent import (
    REFUSAL_FIX,
    Atom,
    Intent,
    SkillTexts,
    chained,
    parse_intent,
    refusal,
)
from taskloom.generators.llm.answers import IntentAnswer
from taskloom.generators.llm.client import ChatModel, Session, ask, transport_for
from taskloom.generators.llm.exchange import ChatRequest, ExchangeFile
from taskloom.generators.llm.prompts import prompt
from taskloom.models import Frozen
from taskloom.skill_graph.model import SkillGraph

CACHE_FILE = "intent-exchanges.jsonl"
INTENT_MAX_TOKENS = 1024  # an intent answer is a few short lines
INTENT_MAX_ITEMS = 8  # longest list a grammar allows: no request has more actions
NEAREST = 5
_WORD = re.compile(r"[\w'-]+")
MODEL_FIX = ("set TASKLOOM_LLM_MODEL to the model name and OPENAI_BASE_URL to its "
             "OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1), or pass --model NAME "
             "and --base-url URL; --model mock runs offline")


class ModelReading(Frozen):
    """What the LLM parser made of a request."""

    intent: Intent = Field(description="The request's actions, constraints and skill path.")
    parser: Literal["llm", "offline"] = Field(description="Whose reading `intent` is: the "
                                              "model's, or the offline parser's after a "
                                              "model answer that could not be used.")
    note: str = Field(default="", description="Why the offline parser read it (empty when "
                      "the model's reading is used).")
    sent: int = Field(default=0, description="Requests sent to the model (0: the answer "
                      "came from the cache, or none was needed).")


def intent_model(llm: LLMConfig | None = None,
                 environ: Mapping[str, str] | None = None) -> LLMConfig:
    """The model the LLM parser asks: `llm`'s model and server, else the environment's.

    Answers are capped to what an intent needs (INTENT_MAX_TOKENS, INTENT_MAX_ITEMS per
    list) unless `llm` asks for less.

    Raises:
        ConfigError: No model is named (neither `llm.model` nor $TASKLOOM_LLM_MODEL).
    """
    environ = os.environ if environ is None else environ
    llm = llm or LLMConfig()
    if not (llm.model or environ.get("TASKLOOM_LLM_MODEL")):
        raise ConfigError("--parser llm needs a model, and none is named (TASKLOOM_LLM_MODEL "
                          "is not set)", field="--model", fix=MODEL_FIX)
    config = llm_from_environment(llm, environ)
    return config.model_copy(update={
        "max_tokens": min(config.max_tokens, INTENT_MAX_TOKENS),
        "grammar_max_items": min(config.grammar_max_items or INTENT_MAX_ITEMS,
                                 INTENT_MAX_ITEMS)})


def parse_with_model(text: str, graph: SkillGraph, embedder: Embedder, llm: LLMConfig, *,
                     allowed: set[str] | None = None, tools: tuple[str, ...] = (),
                     chat: ChatModel | None = None, cache: Path | None = None) -> ModelReading:
    """The model's reading of a request, checked against the graph; else the offline one.

    Args:
        text: The request in words.
        graph: The skill graph the answer is checked against.
        embedder: Sentence embedder (scores, nearest skills, and the offline fallback).
        llm: The model (see `intent_model`).
        allowed: Skills that can be generated (default: all of the graph); the model is
            offered only these.
        tools: Tools the user named (used by the offline parser).
        chat: The transport (default: `transport_for(llm)`).
        cache: The exchange file (default: `cache_folder()/intent-exchanges.jsonl`).

    Raises:
        NoMatch: The request is empty or refused, by the offline check or by the model.
        MissingExtra: The `openai` package is not installed (for a model other than mock).
    """
    if not text.strip() or refusal(text):
        # parse_intent raises NoMatch with the offline reason; the model is never asked.
        return ModelReading(intent=parse_intent(text, graph, embedder, allowed=allowed,
                                                tools=tools), parser="offline")
    skills = sorted(allowed or graph.skills)
    store = ExchangeFile(cache or cache_folder() / CACHE_FILE)
    session = Session(chat or transport_for(llm), llm.output_settings(), store.load())
    try:
        answer = ask(session, intent_request(text, graph, skills), IntentAnswer)
        if answer.refusal and answer.refusal.strip():
            raise NoMatch(f"taskloom will not make {text!r}: the model {llm.model} refuses "
                          f"it: {answer.refusal.strip()}", field="request",
                          fix=f"{REFUSAL_FIX}, or use --parser offline")
        intent = intent_of(answer, text, graph, embedder, skills)
    except InvalidAnswer as exc:
        reason = f"the answer of {llm.model} cannot be used: {exc}"
    except RequestRejected as exc:
        reason = f"the server of {llm.model} refused the request: {exc}"
    except ModelUnavailable as exc:
        reason = f"{llm.model} is unavailable: {exc.reason}"
    else:
        return ModelReading(intent=intent, parser="llm", sent=session.sent)
    finally:
        store.add(session.exchanges)
    offline = parse_intent(text, graph, embedder, allowed=allowed, tools=tools)
    return ModelReading(intent=offline, parser="offline", sent=session.sent,
                        note=f"llm parser: {reason}; used the offline parser")


def intent_request(text: str, graph: SkillGraph, skills: list[str]) -> ChatRequest:
    """The request for an `IntentAnswer` offering `skills`, their ids an enum of the schema."""
    formats = sorted({kind for s in skills for kind in (graph.skills[s].consumes,
                                                        graph.skills[s].produces)})
    lines = "\n".join(f"{s} [{graph.skills[s].consumes} -> {graph.skills[s].produces}]: "
                      f"{graph.skills[s].description}" for s in skills)
    request = prompt("intent").request(IntentAnswer, seed=0, request=text.strip(),
                                       formats=", ".join(formats), skills=lines)
    schema = copy.deepcopy(request.answer_schema)
    action = schema["$defs"]["ActionAnswer"]["properties"]
    for name, choices in (("skill", skills), ("source", formats), ("target", formats)):
        action[name]["anyOf"] = [{"type": "string", "enum": list(choices)}, {"type": "null"}]
    return request.model_copy(update={"answer_schema": schema})


def intent_of(answer: IntentAnswer, text: str, graph: SkillGraph, embedder: Embedder,
              skills: list[str]) -> Intent:
    """The `Intent` a model's answer stands for.

    Constraints in words the request does not hold are left out (a model's filler).

    Raises:
        InvalidAnswer: It names no action, an action in words the request does not hold,
            a skill that is unknown or not offered, or consecutive skills that do not chain.
    """
    if not answer.actions:
        raise InvalidAnswer("it names no action")
    said = set(_WORD.findall(text.lower()))
    offered = set(skills)
    for action in answer.actions:
        invented = [w for w in _WORD.findall(action.words.lower()) if w not in said]
        if invented or not _WORD.search(action.words):
            raise InvalidAnswer(f"the action {action.words!r} is not in the request's words"
                                + (f" ({invented[0]!r} is not)" if invented else ""))
        if action.skill is None or action.skill in offered:
            continue
        if action.skill in graph.skills:
            raise InvalidAnswer(f"skill {action.skill!r} (for {action.words!r}) cannot be "
                                "generated: it is not one of the skills offered")
        raise InvalidAnswer(f"unknown skill id {action.skill!r} (for {action.words!r})")
    path = [skill for skill, _ in itertools.groupby(a.skill for a in answer.actions
                                                    if a.skill)]
    if not chained(graph, path):
        first, second = next((a, b) for a, b in itertools.pairwise(path)
                             if not chained(graph, [a, b]))
        raise InvalidAnswer(f"the skills do not chain: {first} writes "
                            f"{graph.skills[first].produces}, and {second} reads "
                            f"{graph.skills[second].consumes}")
    table = SkillTexts.of(graph, skills, embedder)
    vectors = embedder.embed([text, *(a.words for a in answer.actions)])
    whole = table.scores(vectors[0], text)
    nearest = tuple((skills[i], round(float(whole[i]), 3))
                    for i in (-whole).argsort(kind="stable")[:NEAREST])
    atoms, scores = [], []
    chosen: list[str] = []
    for action, vector in zip(answer.actions, vectors[1:], strict=True):
        score = None
        if action.skill:
            score = round(float(table.scores(vector, action.words)[skills.index(action.skill)]), 3)
            if not chosen or chosen[-1] != action.skill:
                chosen.append(action.skill)
                scores.append(score)
        atoms.append(Atom(kind="action", text=action.words, source=_format(graph, action.source),
                          target=_format(graph, action.target), covered_by=action.skill,
                          score=score, why="" if action.skill else
                          "the model found no offered skill that does it"))
    atoms += [Atom(kind="constraint", text=c.strip()) for c in dict.fromkeys(answer.constraints)
              if _WORD.search(c) and set(_WORD.findall(c.lower())) <= said]
    return Intent(text=text, atoms=tuple(atoms), path=tuple(chosen), scores=tuple(scores),
                  nearest=nearest)


def _format(graph: SkillGraph, kind: str | None) -> str | None:
    """An artifact type the graph knows, else None (formats only inform; skills decide)."""
    return kind if kind in graph.types else None
