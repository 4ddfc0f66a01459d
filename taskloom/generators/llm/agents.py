"""The LLM agents: planner, generator and refiner of the `llm` and `hybrid` backends.

They implement the same Planner / Generator / Refiner protocols as the procedural
backend and talk to a `ChatModel` (in a run: a `Session` that replays and records).
A bad answer (empty, not JSON, wrong shape, unsafe paths) raises `NoDraft`, which
the runner stores as a rejected item; a server that is down raises `ModelUnavailable`.

- `LLMPlanner`: the procedural planner's path and difficulty, plus concrete scenario
  details written by the model (`Blueprint.details`).
- `LLMGenerator`: the model writes the whole task (see `render` for what it renders).
- `LLMRefiner`: the model repairs a draft from its failing verdicts and their logs.
- `HybridGenerator` / `HybridRefiner`: a procedural task whose instruction the model
  rewrites (voice, persona, vagueness per `difficulty.specification`).
"""

from __future__ import annotations

import json
import re

from taskloom.errors import InvalidAnswer, NoDraft, RequestRejected
from taskloom.generators.llm.answers import (
    DraftAnswer,
    PlanAnswer,
    RefineAnswer,
    RewriteAnswer,
)
from taskloom.generators.llm.client import ChatModel, ask
from taskloom.generators.llm.prompts import prompt
from taskloom.generators.llm.render import (
    answer_of_task,
    apply_repair,
    recite,
    render_task,
    with_fingerprint,
)
from taskloom.generators.procedural.checks import recited
from taskloom.generators.procedural.domains import domain as get_domain
from taskloom.generators.protocols import Blueprint, Draft, Generator, Planner, Refiner
from taskloom.generators.verifier import CHECKS_FILE
from taskloom.leaks import instruction_leaks
from taskloom.models import Verdict
from taskloom.seeding import derive_seed, rng_for
from taskloom.skill_graph.model import SkillGraph
from taskloom.skill_graph.steering import CoverageSnapshot

LLM_GENERATOR = "llm/1"
HYBRID_GENERATOR = "hybrid/1"
REWRITE_ATTEMPTS = 2
SHOWN_FILE_LINES = 30
SHOWN_LOG_CHARS = 1500

STYLES = {
    1: "explicit: numbered steps, every input and output path, exact output formats, "
       "and a hint of the tools to use",
    2: "explicit about paths and output formats, but no steps and no tool hints",
    3: "the goal only: what must be true at the end and where results go; the method is "
       "left to the agent",
}
PERSONAS = (
    "a terse senior engineer typing a chat message",
    "a polite manager writing an e-mail",
    "a ticket in an issue tracker, with a short context paragraph",
    "a hurried on-call colleague handing over work",
    "a new team member asking for help, a little unsure",
    "a runbook entry written for the next shift",
)


def _seed(*keys: object) -> int:
    # Servers take 32-bit seeds; the value only has to be stable per request.
    return derive_seed(0, "llm", *keys) % 2**31


def _failed(where: str, exc: Exception) -> NoDraft:
    return NoDraft(f"{where}: {exc}")


def _context(blueprint: Blueprint, graph: SkillGraph) -> dict[str, object]:
    """What every prompt says about a blueprint."""
    scenario = graph.scenarios[blueprint.scenario]
    domain = get_domain(scenario.domain)
    skills = "\n".join(f"{n}. {graph.skills[s].name}: {graph.skills[s].description} "
                       f"(tools: {', '.join(graph.skills[s].tools)})"
                       for n, s in enumerate(blueprint.path, start=1))
    difficulty = ", ".join(f"{k}={v}" for k, v in blueprint.difficulty.model_dump().items())
    return {"scenario_title": scenario.title, "scenario_description": scenario.description,
            "org": domain.org, "role": domain.role, "root": domain.root, "skills": skills,
            "difficulty": difficulty, "style": STYLES[blueprint.difficulty.specification]}


class LLMPlanner:
    """The procedural planner's blueprint, with scenario details from the model."""

    def __init__(self, base: Planner, graph: SkillGraph, chat: ChatModel) -> None:
        self.base = base
        self.graph = graph
        self.chat = chat

    def plan(self, index: int, coverage: CoverageSnapshot | None = None) -> Blueprint:
        """The blueprint of item `index` (steered by `coverage`), with `details` filled.

        Raises:
            NoDraft: The model's answer is unusable.
        """
        blueprint = self.base.plan(index, coverage)
        request = prompt("planner").request(PlanAnswer, seed=_seed("plan", blueprint.seed),
                                            **_context(blueprint, self.graph))
        try:
            answer = ask(self.chat, request, PlanAnswer)
        except (InvalidAnswer, RequestRejected) as exc:
            raise _failed("planner", exc) from exc
        details = "\n".join([answer.title.strip(), *(f"- {d.strip()}" for d in answer.details)])
        return blueprint.model_copy(update={"details": details})


class LLMGenerator:
    """The model writes the whole task."""

    def __init__(self, graph: SkillGraph, chat: ChatModel, model: str) -> None:
        self.graph = graph
        self.chat = chat
        self.model = model

    def generate(self, blueprint: Blueprint) -> Draft:
        """A draft for `blueprint`.

        Raises:
            NoDraft: The model's answer is unusable (the message says why).
        """
        request = prompt("generator").request(
            DraftAnswer, seed=_seed("generate", blueprint.seed),
            details=blueprint.details or "(none: invent a concrete situation)",
            **_context(blueprint, self.graph))
        try:
            answer = ask(self.chat, request, DraftAnswer)
            task = render_task(answer, blueprint, self.graph, generator=LLM_GENERATOR,
                               model=self.model, attempt=0)
        except (InvalidAnswer, RequestRejected) as exc:
            raise _failed("generator", exc) from exc
        return Draft(blueprint=blueprint, task=task, generator=LLM_GENERATOR, attempt=0,
                     expected_values=_values(answer.expected_values))


class LLMRefiner:
    """The model repairs a draft from its failing verdicts and their logs."""

    def __init__(self, graph: SkillGraph, chat: ChatModel, model: str) -> None:
        self.graph = graph
        self.chat = chat
        self.model = model

    def refine(self, draft: Draft, verdicts: tuple[Verdict, ...]) -> Draft:
        """A repaired draft (attempt + 1).

        Raises:
            NoDraft: The model's answer is unusable.
        """
        current = answer_of_task(draft.task, draft.expected_values)
        request = prompt("refiner").request(
            RefineAnswer, seed=_seed("refine", draft.blueprint.seed, draft.attempt),
            draft=_shown(current), failures=describe_failures(verdicts))
        try:
            repair = ask(self.chat, request, RefineAnswer)
            repaired = apply_repair(current, repair)
            task = render_task(repaired, draft.blueprint, self.graph,
                               generator=LLM_GENERATOR, model=self.model,
                               attempt=draft.attempt + 1)
        except (InvalidAnswer, RequestRejected) as exc:
            raise _failed("refiner", exc) from exc
        return Draft(blueprint=draft.blueprint, task=task, generator=LLM_GENERATOR,
                     attempt=draft.attempt + 1,
                     expected_values=_values(repaired.expected_values))


class HybridGenerator:
    """A procedural task whose instruction the model rewrites."""

    def __init__(self, procedural: Generator, chat: ChatModel, model: str) -> None:
        self.procedural = procedural
        self.chat = chat
        self.model = model

    def generate(self, blueprint: Blueprint) -> Draft:
        """The procedural draft of `blueprint` with a rewritten instruction.

        Raises:
            NoDraft: No procedural task, or no rewrite kept every requirement.
        """
        return self.rewrite(self.procedural.generate(blueprint))

    def rewrite(self, draft: Draft, feedback: str = "") -> Draft:
        """`draft` (procedural) with its instruction rewritten.

        `feedback` says what a previous rewrite or validation found wrong.

        Raises:
            NoDraft: The answers were unusable or dropped a requirement.
        """
        original = draft.task.instruction
        required = list(dict.fromkeys(re.findall(r"`([^`\n]+)`", original)))
        demanded = draft.task.config.metadata["requirements"]
        words = {name: entry["demands"][0] for entry in demanded for name in entry["tests"]}
        blueprint = draft.blueprint
        persona = rng_for(blueprint.seed, "persona", draft.attempt).choice(PERSONAS)
        problem = ""
        for attempt in range(REWRITE_ATTEMPTS):
            request = prompt("rewriter").request(
                RewriteAnswer, seed=_seed("rewrite", blueprint.seed, draft.attempt),
                attempt=attempt, persona=persona,
                style=STYLES[blueprint.difficulty.specification], instruction=original,
                requirements="\n".join(f"- {name}: {json.dumps(quote, ensure_ascii=False)}"
                                       for name, quote in words.items()),
                feedback=f"\nNote: {feedback}\n" if feedback else "")
            try:
                answer = ask(self.chat, request, RewriteAnswer)
            except (InvalidAnswer, RequestRejected) as exc:
                problem = f"rewrite: {exc}"
                feedback = "Your previous answer was unusable; answer with the JSON object."
                continue
            text = "".join(line.rstrip("\n") + "\n" for line in answer.instruction)
            missing = [item for item in required if item not in text]
            cited, uncited = recite(demanded, text, answer.requirements)
            if not missing and not uncited:
                return self._draft(draft, text, persona, cited)
            if missing:
                problem = f"rewrite left out `{missing[0]}` ({len(missing)} requirement(s))"
                feedback = ("Your previous rewrite left out " +
                            ", ".join(f"`{m}`" for m in missing[:5]) + "; keep them verbatim.")
            else:
                problem = (f"rewrite left {uncited[0]} without words that demand it "
                           f"({len(uncited)} test(s))")
                feedback = ("Your previous rewrite neither kept nor quoted the words that "
                            "demand " + ", ".join(uncited[:5]) + "; quote your new words for "
                            "each of them in `requirements`.")
        raise NoDraft(problem)

    def _draft(self, draft: Draft, instruction: str, persona: str,
               requirements: list[dict[str, list[str]]]) -> Draft:
        """`draft` with the new instruction, and its tests citing the new words."""
        metadata = {**draft.task.config.metadata, "generator": HYBRID_GENERATOR,
                    "model": self.model, "persona": persona,
                    "procedural_generator": draft.generator, "requirements": requirements}
        tests = tuple(entry.model_copy(update={"content": recited(
            entry.content.decode(), requirements).encode()}) if entry.path == CHECKS_FILE
            else entry for entry in draft.task.tests)
        task = draft.task.model_copy(update={
            "instruction": instruction, "tests": tests,
            "config": draft.task.config.model_copy(update={"metadata": metadata})})
        return draft.model_copy(update={"task": with_fingerprint(task),
                                        "generator": HYBRID_GENERATOR})


class HybridRefiner:
    """Rewrites the instruction again when only it failed; else regenerates the task."""

    def __init__(self, generator: HybridGenerator, procedural: Refiner) -> None:
        self.generator = generator
        self.procedural = procedural

    def refine(self, draft: Draft, verdicts: tuple[Verdict, ...]) -> Draft:
        """A new hybrid draft.

        Raises:
            NoDraft: No usable procedural task or rewrite.
        """
        failed = [v for v in verdicts if not v.passed]
        original = self.generator.procedural.generate(draft.blueprint,
                                                      first_attempt=draft.attempt)
        instruction_only = bool(failed) and all(
            v.check == "judge" or (v.check == "leakage" and
                                   instruction_leaks(draft.task, draft.expected_values))
            for v in failed)
        if instruction_only:
            return self.generator.rewrite(original, feedback=describe_failures(verdicts))
        return self.generator.rewrite(self.procedural.refine(original, verdicts))


def describe_failures(verdicts: tuple[Verdict, ...]) -> str:
    """The failing verdicts with the tail of their logs, for a prompt.

    Durations and long hex ids are masked: they change from one validation of the same
    draft to the next, and an unchanged prompt is what lets a resumed run replay the
    cached answer instead of paying for it again.
    """
    lines = []
    for verdict in verdicts:
        if verdict.passed:
            continue
        lines.append(f"- {verdict.check} ({verdict.reason}): {_stable(verdict.details)}")
        if verdict.log.strip():
            lines.append("  log (end):\n" + _indent(_stable(verdict.log[-SHOWN_LOG_CHARS:])))
    return "\n".join(lines) or "- (no failing check was reported)"


_VOLATILE = (
    (re.compile(r"\b\d+(?:\.\d+)?(?: ?(?:s|ms|sec|seconds))\b"), "<time>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<id>"),
)


def _stable(text: str) -> str:
    for pattern, mask in _VOLATILE:
        text = pattern.sub(mask, text)
    return text


def _shown(answer: DraftAnswer) -> str:
    """The draft as JSON for a prompt, long files shortened."""
    data = answer.model_dump()
    for entry in data["files"]:
        if len(entry["lines"]) > SHOWN_FILE_LINES:
            hidden = len(entry["lines"]) - SHOWN_FILE_LINES
            entry["lines"] = [*entry["lines"][:SHOWN_FILE_LINES],
                              f"... ({hidden} more lines not shown)"]
    return json.dumps(data, indent=1, ensure_ascii=False)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _values(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v.strip() for v in values if v.strip()))

