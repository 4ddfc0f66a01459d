"""What a check of the validation protocol is: a `Validator`, and the `Evidence` it reads.

A validator has one verb, `check(evidence) -> Verdict | None`: it reads the task and what
the sandbox observed, and gives its verdict (None when it has nothing to judge, e.g. the
environment did not build so no phase ran). A failed check is a Verdict; an exception
means the infrastructure failed.

Checks that need something run in the sandbox also implement `SandboxCheck.trial_part`:
the phases (and the solutions they run) and the files to look for in the image. The
engine merges the parts of every selected check into one trial, so one sandbox (fast
mode) serves them all, then hands every check the same `TrialResult`. A check that must
see results before it knows what else to run (tamper: which probe forged the reward) also
implements `FollowUp.follow_up`; its phases run in a second trial, added to the first.

Example, a check that needs no sandbox (registered, `--checks +names-workdir` runs it):

```python
class NamesWorkdir:
    name, reasons, needs = "names-workdir", ("underspecified",), ("structure",)
    default = needs_model = False

    def check(self, evidence):
        ok = "/app" in evidence.task.instruction
        return Verdict(check=self.name, passed=ok, reason=None if ok else "underspecified")

taskloom.validators.registry.register(NamesWorkdir())
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import Field

from taskloom.config import ValidationConfig
from taskloom.models import Frozen, Task, TaskFile, Verdict
from taskloom.sandbox.trial import Fingerprint, Phase, TrialPlan, TrialResult

if TYPE_CHECKING:
    from taskloom.generators.llm.client import ChatModel


class TrialPart(Frozen):
    """What one check needs run in the task's sandbox."""

    phases: tuple[Phase, ...] = Field(default=(), description="Phases to run, in order.")
    solutions: dict[str, tuple[TaskFile, ...]] = Field(
        default_factory=dict, description="Solution folders the phases name.")
    leak_fingerprints: tuple[Fingerprint, ...] = Field(
        default=(), description="Files to look for inside the environment.")


@dataclass(frozen=True)
class Evidence:
    """Everything a check may read about one task.

    Attributes:
        task: The task under validation.
        config: The validation settings.
        expected_values: Answers the instruction must not state verbatim (known for
            generated tasks; empty for foreign ones).
        plan: The trial that ran (None when no selected check needs the sandbox, or the
            task's structure failed).
        trial: What the sandbox observed (None when no trial ran).
        environment: How the environment was made ("fast: emulated on ...").
        verdicts: The verdicts of the checks that ran before this one, in order.
        chat: The model, for checks that ask one (`needs_model`).
    """

    task: Task
    config: ValidationConfig
    expected_values: tuple[str, ...] = ()
    plan: TrialPlan | None = None
    trial: TrialResult | None = None
    environment: str = ""
    verdicts: tuple[Verdict, ...] = field(default=())
    chat: ChatModel | None = None

    @property
    def environment_ready(self) -> bool:
        """True when a trial ran and its environment was set up."""
        return self.trial is not None and self.trial.setup.ok


class Validator(Protocol):
    """One check of the validation protocol.

    Attributes:
        name: The check's name in verdicts, reports and `--checks`.
        reasons: Every reason code its failed verdicts may carry.
        needs: Checks that must run before it (added when it is selected).
        default: Part of the default selection.
        needs_model: Asks a model (`Evidence.chat`); selecting it needs one.
    """

    name: str
    reasons: tuple[str, ...]
    needs: tuple[str, ...]
    default: bool
    needs_model: bool

    def check(self, evidence: Evidence) -> Verdict | None:
        """The verdict on `evidence.task`, or None when there is nothing to judge."""
        ...


@runtime_checkable
class SandboxCheck(Protocol):
    """A validator that needs something run in the task's sandbox."""

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """The phases, solutions and image scan this check needs for `task`."""
        ...


@runtime_checkable
class FollowUp(Protocol):
    """A sandbox check that may need more phases once it has seen the trial's results."""

    def follow_up(self, evidence: Evidence) -> TrialPart | None:
        """Phases to run in a second trial before `check` (None: none needed)."""
        ...
