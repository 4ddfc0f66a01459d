"""The stage functions (what workers run) and their content keys.

Each stage is a plain, importable function of picklable arguments, so the same code runs
on a local thread or as a Ray task, and every one returns a `StageOutcome`: ok with a
value, rejected (no usable value: the item ends there), or error (the infrastructure
failed: the stage reruns on resume), with every model exchange it made and its usage.

```
plan(config, item, replay, coverage=) -> outcome of a Blueprint   (coverage: steering)
generate(config, blueprint, replay)   -> outcome of a Draft
validate(config, draft, replay)       -> outcome of a TaskReport
refine(config, draft, report, replay) -> outcome of a Draft        (then validate again)
calibrate(config, draft, replay)      -> outcome of a Calibration  (when calibration is on)
```

A stage that asks a model (`asks_model`) gets the item's cached exchanges (request hash ->
Exchange) as `replay` and answers from them first, so a resumed run never pays twice. Each
stage has a version; a result is keyed by `fingerprint(stage, version, input fingerprint,
stage config)`, so bumping a version or changing a stage's config re-runs that stage and,
because its output changes, every stage after it, while unchanged work is reused.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from pydantic import Field

from taskloom.config import RunConfig
from taskloom.errors import InfrastructureError, NoDraft
from taskloom.generators.backends import backend_for, skill_graph
from taskloom.generators.llm.exchange import Exchange
from taskloom.generators.protocols import Blueprint, Draft
from taskloom.models import Calibration, Frozen, TaskReport, Usage
from taskloom.pipeline.records import Stage
from taskloom.skill_graph.steering import CoverageSnapshot

PLAN_VERSION = "1"
VALIDATE_VERSION = "1"
REFINE_VERSION = "1"
CALIBRATE_VERSION = "1"
LLM_STAGES = {"llm": (Stage.PLAN, Stage.GENERATE, Stage.REFINE),
              "hybrid": (Stage.GENERATE, Stage.REFINE)}


class Outcome(StrEnum):
    """How a stage ended for an item."""

    OK = "ok"
    REJECTED = "rejected"  # no usable value: the item ends at this stage
    ERROR = "error"        # the infrastructure failed: retried on resume


class StageOutcome(Frozen):
    """What one stage function returns, procedural and LLM alike."""

    stage: Stage = Field(description="Which stage ran.")
    status: Outcome = Field(description="ok, rejected or error.")
    value: Blueprint | Draft | TaskReport | Calibration | None = Field(
        default=None, description="The stage's result when ok.")
    reason: str = Field(default="", description="Why it was rejected or failed (the stage's "
                                                "own message, without the stage's name).")
    fix: str | None = Field(default=None, description="How to fix an infrastructure error.")
    exchanges: tuple[Exchange, ...] = Field(default=(),
                                            description="Every model exchange it made.")
    usage: Usage = Field(default_factory=Usage, description="Model usage behind it.")


# -- keys ------------------------------------------------------------------------------------

def fingerprint(*parts: object) -> str:
    """sha256 of the JSON form of the parts."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@lru_cache(maxsize=8)
def graph_fingerprint(files: tuple[str, ...]) -> str:
    """Fingerprint of the merged skill graph a run plans on (computed once per process)."""
    return fingerprint(skill_graph(files).data.model_dump(mode="json"))


@dataclass(frozen=True)
class StageKeys:
    """How results of one run are keyed."""

    config: RunConfig

    def plan(self, item: int, coverage: CoverageSnapshot | None = None) -> str:
        """Key of item's plan: index, planning settings, graph, steering snapshot (if any)."""
        settings = {"seed": self.config.seed, "difficulty": self.config.difficulty.model_dump(),
                    "scenario": self.config.scenario, "skills": self.config.skills,
                    "backend": self.config.backend}
        if asks_model(self.config, Stage.PLAN):
            settings["llm"] = llm_fingerprint(self.config, "planner")
        steered = () if coverage is None else (
            {"strength": self.config.diversity.steering_strength,
             "candidates": self.config.diversity.steering_candidates,
             "coverage": coverage.model_dump(mode="json")},)
        return fingerprint("plan", PLAN_VERSION, item, settings,
                           graph_fingerprint(self.config.graph), *steered)

    def generate(self, blueprint: Blueprint) -> str:
        """Key of a generation: the blueprint and the generator's version."""
        return fingerprint("generate", generator_version(self.config),
                           blueprint.model_dump(mode="json", exclude={"usage"}))

    def validate(self, draft: Draft) -> str:
        """Key of a validation: the task's fingerprint, validation settings and runtime."""
        judge = llm_fingerprint(self.config, "judge") \
            if asks_model(self.config, Stage.VALIDATE) else None
        return fingerprint("validate", VALIDATE_VERSION, draft_fingerprint(draft),
                           self.config.validation.model_dump(mode="json"), self.config.runtime,
                           *([judge] if judge else []))

    def refine(self, draft: Draft, report: TaskReport, round_: int) -> str:
        """Key of a repair: the draft, why it failed, and the round."""
        return fingerprint("refine", REFINE_VERSION, generator_version(self.config),
                           draft_fingerprint(draft), [str(r) for r in report.reasons], round_)

    def calibrate(self, draft: Draft) -> str:
        """Key of a calibration: the task, the model's settings, k, the agent and runtime.

        The band is not part of it: it decides on the stored pass rate.
        """
        from taskloom.generators.llm.prompts import prompts_fingerprint

        calibration = self.config.calibration
        settings = calibration.model_dump(mode="json", exclude={"band", "base_url",
                                                                "api_key_env"})
        return fingerprint("calibrate", CALIBRATE_VERSION, draft_fingerprint(draft),
                           settings, self.config.seed, self.config.runtime,
                           calibration.chat_settings(self.config.llm).output_settings(),
                           prompts_fingerprint("agent"))


def draft_fingerprint(draft: Draft) -> str:
    """The task fingerprint stored in its metadata, or one computed from its content."""
    stored = draft.task.config.metadata.get("fingerprint")
    if stored:
        return str(stored)
    from taskloom.generators.procedural.assemble import task_fingerprint

    return task_fingerprint(draft.task)


def generator_version(config: RunConfig) -> str:
    """Version string of the configured backend (LLM ones: with prompts and model)."""
    from taskloom.generators.procedural.assemble import GENERATOR_VERSION

    base = GENERATOR_VERSION + ("+separate" if config.verifier == "separate" else "")
    if config.backend == "procedural":
        return base
    if config.backend == "hybrid":
        return f"hybrid/1+{base}+{llm_fingerprint(config, 'rewriter')[:16]}"
    return f"llm/1+{llm_fingerprint(config, 'generator', 'refiner')[:16]}"


def asks_model(config: RunConfig, stage: Stage) -> bool:
    """True when `stage` of this run asks a model (so it records exchanges)."""
    if stage is Stage.VALIDATE:
        from taskloom.validators.registry import select

        return any(v.needs_model for v in select(config.validation.checks))
    if stage is Stage.CALIBRATE:
        return config.calibration.enabled
    return stage in LLM_STAGES.get(config.backend, ())


def run_asks_model(config: RunConfig) -> bool:
    """True when some stage of this run asks a model."""
    return any(asks_model(config, stage) for stage in
               (Stage.PLAN, Stage.GENERATE, Stage.VALIDATE, Stage.REFINE))  # not the
    # calibration stage: its model is named in its own table (`calibration.model`)


def llm_fingerprint(config: RunConfig, *prompts: str) -> str:
    """Fingerprint of the model settings and the prompt files a stage uses."""
    from taskloom.generators.llm.prompts import prompts_fingerprint

    return fingerprint(config.llm.output_settings(), prompts_fingerprint(*prompts))


# -- the stage functions (run on workers) -----------------------------------------------------

def plan(config: RunConfig, item: int, replay: dict | None = None, *,
         coverage: CoverageSnapshot | None = None) -> StageOutcome:
    """The blueprint of one item, steered by coverage."""
    return _outcome(Stage.PLAN, config, replay,
                    lambda chat: backend_for(config, chat).planner.plan(item, coverage))


def generate(config: RunConfig, blueprint: Blueprint,
             replay: dict | None = None) -> StageOutcome:
    """A draft for a blueprint (rejected when none can be made)."""
    return _outcome(Stage.GENERATE, config, replay,
                    lambda chat: backend_for(config, chat).generator.generate(blueprint))


def validate(config: RunConfig, draft: Draft, replay: dict | None = None) -> StageOutcome:
    """The full validation protocol on a draft, in this process's sandbox runtime."""
    from taskloom.validators.engine import validate_task

    # The runtime is opened inside: an engine that is down is this stage's error outcome.
    return _outcome(Stage.VALIDATE, config, replay, lambda chat: validate_task(
        draft.task, process_runtime(config.runtime), config.validation,
        expected_values=draft.expected_values, chat=chat))


def refine(config: RunConfig, draft: Draft, report: TaskReport,
           replay: dict | None = None) -> StageOutcome:
    """A repaired draft from the failing verdicts."""
    return _outcome(Stage.REFINE, config, replay, lambda chat: backend_for(
        config, chat).refiner.refine(draft, report.verdicts))


def calibrate(config: RunConfig, draft: Draft, replay: dict | None = None) -> StageOutcome:
    """The calibration model's pass rate on an accepted draft (k attempts, one by one)."""
    from taskloom.rollouts.calibration import calibrate as attempt_k
    from taskloom.rollouts.solve import Exchanges

    exchanges = Exchanges(replay)
    llm = config.calibration.chat_settings(config.llm)
    status, value, reason, fix = _ended(lambda: attempt_k(
        draft.task, llm, process_runtime(config.runtime), config.calibration, exchanges,
        seed=config.seed))
    return StageOutcome(stage=Stage.CALIBRATE, status=status, value=value, reason=reason,
                        fix=fix, exchanges=tuple(exchanges.kept),  # paid now, even if failed
                        usage=sum((e.usage for e in exchanges.kept), Usage()))


def _ended(work: Callable[[], Blueprint | Draft | TaskReport | Calibration]
           ) -> tuple[Outcome, object, str, str | None]:
    """Run `work()`: (status, value, reason, fix), a stage's own failures caught."""
    try:
        value = work()
    except NoDraft as exc:
        return Outcome.REJECTED, None, str(exc), None
    except (InfrastructureError, OSError) as exc:  # OSError: a disk or pipe of the host
        return (Outcome.ERROR, None, getattr(exc, "reason", str(exc)),
                getattr(exc, "fix", None))
    return Outcome.OK, value, "", None


def _outcome(stage: Stage, config: RunConfig, replay: dict | None,
             work: Callable[[object], Blueprint | Draft | TaskReport]) -> StageOutcome:
    """Run `work(chat)` (chat: the stage's recording session, or None) as an outcome."""
    session = None

    def chat_and_work() -> Blueprint | Draft | TaskReport:
        nonlocal session
        if asks_model(config, stage):
            from taskloom.generators.llm.client import Session, transport_for

            session = Session(transport_for(config.llm), config.llm.output_settings(), replay)
        return work(session)

    status, value, reason, fix = _ended(chat_and_work)
    exchanges = tuple(session.exchanges) if session is not None else ()
    if session is not None:
        usage = session.usage
        if value is not None:
            value = value.model_copy(update={"usage": usage})
    else:
        usage = value.usage if value is not None else Usage()
    return StageOutcome(stage=stage, status=status, value=value, reason=reason, fix=fix,
                        exchanges=exchanges, usage=usage)


_RUNTIMES: dict[str, object] = {}
_RUNTIME_LOCK = threading.Lock()


def process_runtime(name: str):
    """One sandbox runtime per worker process (threads share it)."""
    from taskloom.sandbox.runtime import open_runtime

    with _RUNTIME_LOCK:
        if name not in _RUNTIMES:
            _RUNTIMES[name] = open_runtime(name)
        return _RUNTIMES[name]


def close_runtimes() -> None:
    """Close every runtime this process opened (removes their sandboxes)."""
    with _RUNTIME_LOCK:
        runtimes = list(_RUNTIMES.values())
        _RUNTIMES.clear()
    for runtime in runtimes:
        runtime.close()
