"""build: the environment builds (fast mode: is set up) within its limit.

Every check that runs phases needs it; its verdict says how the environment was made
(fast mode emulation on the base image, or a real build) and, on failure, which step
failed and the log that shows it.
"""

from __future__ import annotations

from taskloom.config import ValidationConfig
from taskloom.models import ReasonCode, Task, Verdict
from taskloom.validators.phases import excerpt
from taskloom.validators.protocol import Evidence, TrialPart


class BuildCheck:
    """The environment is ready within `build_timeout_sec`."""

    name = "build"
    reasons = (ReasonCode.BUILD,)
    needs = ("structure",)
    default = True
    needs_model = False

    def trial_part(self, task: Task, config: ValidationConfig) -> TrialPart:
        """Nothing but the environment itself."""
        return TrialPart()

    def check(self, evidence: Evidence) -> Verdict | None:
        """Did the environment build (or set up)?"""
        if evidence.trial is None:
            return None
        setup, how = evidence.trial.setup, evidence.environment
        if setup.ok:
            return Verdict(check=self.name, passed=True, seconds=setup.seconds,
                           details=f"environment ready ({how})")
        command = setup.command
        if command is not None and command.timed_out:
            what = "timed out"
        elif setup.step is not None and command is not None:
            what = f"step {setup.step + 1} failed with exit code {command.exit_code}"
        else:
            what = "failed"
        return Verdict(check=self.name, passed=False, reason=ReasonCode.BUILD,
                       seconds=setup.seconds, details=f"the environment build {what} ({how})",
                       log=excerpt(setup.log or (command.log if command else "")))
