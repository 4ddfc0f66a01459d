"""Calibration: how often a model solves one task, from k scored attempts.

`generate`'s calibration stage (`taskloom.pipeline.stages.calibrate`) calls `calibrate` on
every task validation accepted; the band of `CalibrationConfig` then decides whether the
task stays. Attempts are `solve`'s: the built-in agent in a fresh environment, scored by
the task's own verifier. An attempt that infrastructure broke is tried again in a fresh
environment; one that never scores makes the whole calibration an infrastructure error
(the stage runs again on resume, replaying every exchange already paid for), so a pass
rate is always over k scored attempts and a broken sandbox never reads as a hard task.
"""

from __future__ import annotations

from datetime import UTC, datetime

from taskloom.config import CalibrationConfig, LLMConfig
from taskloom.errors import InfrastructureError
from taskloom.generators.llm.client import transport_for
from taskloom.models import Calibration, Task, Usage
from taskloom.rollouts.solve import Exchanges, attempt_task
from taskloom.sandbox.runtime import Runtime
from taskloom.seeding import derive_seed


def calibrate(task: Task, llm: LLMConfig, runtime: Runtime, calibration: CalibrationConfig,
              exchanges: Exchanges, *, seed: int) -> Calibration:
    """K attempts of `llm`'s model at `task` in `runtime`, one after another.

    Args:
        task: The task (its verifier scores each attempt).
        llm: The model's settings (`CalibrationConfig.chat_settings`).
        runtime: An open sandbox runtime; each attempt gets a fresh session of it.
        calibration: k, the agent's limits and the retries of a broken attempt.
        exchanges: Replayed first; every new exchange is kept in it, even on failure.
        seed: The run's seed (attempt i sends a seed derived from it, the task and i).

    Raises:
        InfrastructureError: An attempt was still unscored after its retries.
        MissingExtra: The openai package is missing (a model other than `mock`).
    """
    transport = transport_for(llm)
    records = []
    for index in range(calibration.k):
        record = attempt_task(task, index, llm, transport, runtime, calibration.agent,
                              exchanges,
                              seed=derive_seed(seed, "calibrate", task.name, index),
                              retries=calibration.retries)
        if record.reward is None:
            raise InfrastructureError(
                f"calibration attempt {index + 1} of {calibration.k} was not scored after "
                f"{record.tries} tries: {record.error}",
                fix="check the model server and `taskloom doctor`, then resume (attempts "
                    "already answered are replayed, not paid again)")
        records.append(record)
    passes = sum(record.passed for record in records)
    usage = sum((r.trajectory.usage for r in records if r.trajectory), Usage())
    return Calibration(
        model=llm.model or "", k=calibration.k, passes=passes,
        errors=sum(record.tries - 1 for record in records),
        pass_rate=round(passes / calibration.k, 4),
        mean_turns=round(sum(record.turns for record in records) / calibration.k, 2),
        date=datetime.now(UTC).isoformat(timespec="seconds"), usage=usage)
