"""Configuration models and their defaults.

`ValidationConfig` holds the knobs of the validation protocol. Values come from defaults,
then a TOML file, then `--set key=value` overrides (later wins); every value is checked by
pydantic, and a wrong one is reported with the file and the key.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from taskloom.models import Frozen


class ValidationConfig(Frozen):
    """How tasks are proven solvable."""

    repeats: int = Field(default=2, ge=1, le=20,
                         description="Oracle runs, each from fresh state; all must give 1.")
    mode: Literal["auto", "strict"] = Field(
        default="auto", description="auto: emulate simple Dockerfiles on the base image and "
        "reset state in place; strict: real docker build, fresh container per phase.")
    mutations: bool = Field(default=True,
                            description="Run the solution with each marked step removed.")
    timeout_cap_sec: float = Field(default=300.0, gt=0,
                                   description="Upper bound on a task's own timeouts.")
    default_solution_timeout_sec: float = Field(
        default=600.0, gt=0, description="solve.sh limit when [agent].timeout_sec is unset.")
    memory_cap_mb: int = Field(default=4096, gt=0,
                               description="Upper bound on a task's memory_mb.")
    default_memory_mb: int = Field(default=2048, gt=0,
                                   description="Memory when [environment].memory_mb is unset.")
    log_limit: int = Field(default=16384, ge=256,
                           description="Bytes of output kept per command (head + tail).")
    keep_images: bool = Field(default=False,
                              description="Keep images built in strict mode (debugging).")
