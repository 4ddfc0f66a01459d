"""Stage functions and their content fingerprints.

Each stage is a plain, importable function of picklable arguments, so the same code runs
on a local thread or as a Ray task. Each has a version; a result is keyed by
`fingerprint(stage, version, input fingerprint, stage config)`, so bumping a version or
changing a stage's config re-runs that stage and, because its output changes, every stage
after it, while unchanged work is reused from the store.

```
plan(config, item)            -> Blueprint
generate(config, blueprint)   -> Draft               (GenerationFailed = rejected item)
validate(config, draft)       -> TaskReport
refine(config, draft, report) -> Draft               (then validate again, <= R rounds)
```
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

    def plan(self, item: int) -> str:
        """Key of item's plan: its index, the planning settings and the graph."""
        settings = {"seed": self.config.seed, "difficulty": self.config.difficulty.model_dump(),
                    "scenario": self.config.scenario, "skills": self.config.skills,
                    "backend": self.config.backend}
        return fingerprint("plan", PLAN_VERSION, item, settings, graph_fingerprint(self.config))

    def generate(self, blueprint: Blueprint) -> str:
        """Key of a generation: the blueprint and the generator's version."""
        return fingerprint("generate", generator_version(self.config),
                           blueprint.model_dump(mode="json"))

    def validate(self, draft: Draft) -> str:
        """Key of a validation: the task's fingerprint, validation settings and runtime."""
        return fingerprint("validate", VALIDATE_VERSION, draft_fingerprint(draft),
                           self.config.validation.model_dump(mode="json"), self.config.runtime)

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
    """Version string of the configured backend."""
    from taskloom.generators.procedural.assemble import GENERATOR_VERSION

    return GENERATOR_VERSION if config.backend == "procedural" else f"{config.backend}/1"


# -- the stage functions (run on workers) -------------------------------------------------

def plan(config: RunConfig, item: int) -> Blueprint:
    """The blueprint of one item."""
    planner, _, _ = backend_for(config)
    return planner.plan(item)


def generate(config: RunConfig, blueprint: Blueprint) -> Draft:
    """A draft for a blueprint (raises GenerationFailed when none can be made)."""
    _, generator, _ = backend_for(config)
    return generator.generate(blueprint)


def refine(config: RunConfig, draft: Draft, report: TaskReport) -> Draft:
    """A repaired draft from the failing verdicts."""
    _, _, refiner = backend_for(config)
    return refiner.refine(draft, report.verdicts)


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


def validate(config: RunConfig, draft: Draft) -> TaskReport:
    """The full validation protocol on a draft, in this process's sandbox runtime."""
    from taskloom.validators.engine import validate_task

    runtime = process_runtime(config.runtime)
    return validate_task(draft.task, runtime, config.validation,
                         expected_values=draft.expected_values)
