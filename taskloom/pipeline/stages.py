"""Stage functions and their content fingerprints.

Each stage is a plain, importable function of picklable arguments, so the same code runs
on a local thread or as a Ray task. Each has a version; a result is keyed by
`fingerprint(stage, version, input fingerprint, stage config)`, so bumping a version or
changing a stage's config re-runs that stage and, because its output changes, every stage
after it, while unchanged work is reused from the store.

```
plan(config, item, coverage=) -> Blueprint           (coverage: the steering snapshot)
generate(config, blueprint)   -> Draft               (NoDraft = rejected item)
validate(config, draft)       -> TaskReport
refine(config, draft, report) -> Draft               (then validate again, <= R rounds)
```

A stage that asks a model (`uses_llm`) takes one more argument, the item's cached
exchanges (request hash -> Exchange), and returns a `Recorded`: its value or failure plus
every exchange it made, which the driver writes to the store's `llm_cache` table. The
model settings and prompt fingerprints are part of those stages' keys.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass

from taskloom.config import RunConfig
from taskloom.generators.backends import backend_for, skill_graph
from taskloom.generators.protocols import Blueprint, Draft
from taskloom.models import TaskReport
from taskloom.skill_graph.steering import CoverageSnapshot

PLAN_VERSION = "1"
VALIDATE_VERSION = "1"
REFINE_VERSION = "1"


def fingerprint(*parts: object) -> str:
    """sha256 of the JSON form of the parts."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def graph_fingerprint(config: RunConfig) -> str:
    """Fingerprint of the merged skill graph the run plans on."""
    return fingerprint(skill_graph(config.graph).data.model_dump(mode="json"))


@dataclass(frozen=True)
class StageKeys:
    """How results of one run are keyed."""

    config: RunConfig

    def plan(self, item: int, coverage: CoverageSnapshot | None = None) -> str:
        """Key of item's plan: index, planning settings, graph, steering snapshot (if any)."""
        settings = {"seed": self.config.seed, "difficulty": self.config.difficulty.model_dump(),
                    "scenario": self.config.scenario, "skills": self.config.skills,
                    "backend": self.config.backend}
        if uses_llm(self.config, "plan"):
            settings["llm"] = llm_fingerprint(self.config, "planner")
        steered = () if coverage is None else (
            {"strength": self.config.diversity.steering_strength,
             "candidates": self.config.diversity.steering_candidates,
             "coverage": coverage.model_dump(mode="json")},)
        return fingerprint("plan", PLAN_VERSION, item, settings, graph_fingerprint(self.config),
                           *steered)

    def generate(self, blueprint: Blueprint) -> str:
        """Key of a generation: the blueprint and the generator's version."""
        return fingerprint("generate", generator_version(self.config),
                           blueprint.model_dump(mode="json", exclude={"usage"}))

    def validate(self, draft: Draft) -> str:
        """Key of a validation: the task's fingerprint, validation settings and runtime."""
        judge = llm_fingerprint(self.config, "judge") if self.config.llm.judge else None
        return fingerprint("validate", VALIDATE_VERSION, draft_fingerprint(draft),
                           self.config.validation.model_dump(mode="json"), self.config.runtime,
                           *([judge] if judge else []))

    def refine(self, draft: Draft, report: TaskReport, round_: int) -> str:
        """Key of a repair: the draft, why it failed, and the round."""
        return fingerprint("refine", REFINE_VERSION, generator_version(self.config),
                           draft_fingerprint(draft), [str(r) for r in report.reasons], round_)


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

    if config.backend == "procedural":
        return GENERATOR_VERSION
    if config.backend == "hybrid":
        return f"hybrid/1+{GENERATOR_VERSION}+{llm_fingerprint(config, 'rewriter')[:16]}"
    return f"llm/1+{llm_fingerprint(config, 'generator', 'refiner')[:16]}"


LLM_STAGES = {"llm": ("plan", "generate", "refine"), "hybrid": ("generate", "refine")}


def uses_llm(config: RunConfig, stage: str) -> bool:
    """True when `stage` of this run asks a model (so it records exchanges)."""
    if stage == "validate":
        return config.llm.judge
    return stage in LLM_STAGES.get(config.backend, ())


def llm_fingerprint(config: RunConfig, *prompts: str) -> str:
    """Fingerprint of the model settings and the prompt files a stage uses."""
    from taskloom.generators.llm.prompts import prompts_fingerprint

    return fingerprint(config.llm.output_settings(), prompts_fingerprint(*prompts))


# -- the stage functions (run on workers) -------------------------------------------------

def plan(config: RunConfig, item: int, replay: dict | None = None, *,
         coverage: CoverageSnapshot | None = None):
    """The blueprint of one item (a `Recorded` one when a model plans), steered by coverage."""
    if uses_llm(config, "plan"):
        return _recorded(config, replay,
                         lambda chat: backend_for(config, chat)[0].plan(item, coverage))
    planner, _, _ = backend_for(config)
    return planner.plan(item, coverage)


def generate(config: RunConfig, blueprint: Blueprint, replay: dict | None = None):
    """A draft for a blueprint (raises NoDraft when none can be made)."""
    if uses_llm(config, "generate"):
        return _recorded(config, replay,
                         lambda chat: backend_for(config, chat)[1].generate(blueprint))
    _, generator, _ = backend_for(config)
    return generator.generate(blueprint)


def refine(config: RunConfig, draft: Draft, report: TaskReport, replay: dict | None = None):
    """A repaired draft from the failing verdicts."""
    if uses_llm(config, "refine"):
        return _recorded(config, replay, lambda chat: backend_for(config, chat)[2].refine(
            draft, report.verdicts))
    _, _, refiner = backend_for(config)
    return refiner.refine(draft, report.verdicts)


def _recorded(config: RunConfig, replay: dict | None, work):
    """Run `work(session)` and return its outcome with every exchange it made."""
    from taskloom.errors import InfrastructureError, NoDraft
    from taskloom.generators.llm.client import Session, transport_for
    from taskloom.generators.llm.exchange import Recorded

    session = None
    try:
        session = Session(transport_for(config.llm), config.llm.output_settings(), replay)
        value = work(session)
    except NoDraft as exc:
        failure, reason, fix = "rejected", str(exc), None
    except (InfrastructureError, OSError) as exc:
        failure, reason, fix = "error", str(exc), getattr(exc, "fix", None)
    else:
        return Recorded(value=value.model_copy(update={"usage": session.usage}),
                        exchanges=tuple(session.exchanges), usage=session.usage)
    if session is None:
        return Recorded(failure=failure, reason=reason, fix=fix)
    return Recorded(failure=failure, reason=reason, fix=fix,
                    exchanges=tuple(session.exchanges), usage=session.usage)


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


def validate(config: RunConfig, draft: Draft, replay: dict | None = None):
    """The full validation protocol on a draft, in this process's sandbox runtime."""
    from taskloom.validators.engine import validate_task

    runtime = process_runtime(config.runtime)
    if not uses_llm(config, "validate"):
        return validate_task(draft.task, runtime, config.validation,
                             expected_values=draft.expected_values)
    from taskloom.validators.judge import LLMJudge

    return _recorded(config, replay, lambda chat: validate_task(
        draft.task, runtime, config.validation, expected_values=draft.expected_values,
        judge=LLMJudge(chat)))
