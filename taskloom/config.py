"""Configuration models and their defaults.

`ValidationConfig` holds the knobs of the validation protocol; `RunConfig` a whole batch
run (it contains a ValidationConfig). Values come from defaults,
then a TOML file, then `--set key=value` overrides (later wins); every value is checked by
pydantic, and a wrong one is reported with the file and the key.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from taskloom.errors import ConfigError
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


class DifficultySetting(Frozen):
    """Difficulty levels for a run: a fixed level per dimension, or None to draw it."""

    steps: int | None = Field(default=None, ge=1, le=3, description="Workflow length level.")
    tool_breadth: int | None = Field(default=None, ge=1, le=3, description="Tool breadth.")
    data_volume: int | None = Field(default=None, ge=1, le=3, description="Data volume.")
    noise: int | None = Field(default=None, ge=1, le=3, description="Noise level.")
    specification: int | None = Field(default=None, ge=1, le=3,
                                      description="1 explicit steps ... 3 goal only.")
    edge_cases: int | None = Field(default=None, ge=1, le=3, description="Edge cases.")
    strictness: int | None = Field(default=None, ge=1, le=3, description="Output strictness.")


class RunConfig(Frozen):
    """A batch run: what to generate, how, and how it is proven."""

    count: int = Field(default=20, ge=1, description="Verified tasks wanted.")
    max_items: int | None = Field(default=None, ge=1,
                                  description="Items to try at most (default: 2 x count + 10).")
    seed: int = Field(default=0, ge=0, description="Run seed; same seed, same tasks.")
    backend: Literal["procedural", "llm", "hybrid"] = Field(
        default="procedural", description="Who writes tasks.")
    workers: int = Field(default=2, ge=1, le=256, description="Parallel sandboxes.")
    executor: Literal["local", "ray"] = Field(default="local",
                                              description="local threads, or a Ray cluster.")
    ray_address: str | None = Field(default=None,
                                    description="Ray address ('local' starts one here).")
    runtime: Literal["docker", "bwrap"] = Field(default="docker", description="Sandbox runtime.")
    refine_rounds: int = Field(default=2, ge=0, le=10,
                               description="Repairs of a rejected draft before giving up.")
    scenario: str | None = Field(default=None, description="Generate only in this scenario.")
    skills: tuple[str, ...] = Field(default=(), description="Use only these skills.")
    graph: tuple[str, ...] = Field(default=(), description="Extra skill graph files.")
    difficulty: DifficultySetting = Field(default_factory=DifficultySetting,
                                          description="Fixed difficulty levels (else drawn).")
    validation: ValidationConfig = Field(default_factory=ValidationConfig,
                                         description="Validation protocol settings.")

    @property
    def item_limit(self) -> int:
        """How many items may be planned at most."""
        return self.max_items or 2 * self.count + 10


def load_run_config(path: Path | None = None, overrides: list[str] | None = None,
                    **options: object) -> RunConfig:
    """Defaults, then the TOML file, then keyword options (CLI flags), then `--set` pairs.

    Raises:
        ConfigError: The file is unreadable, a key is unknown or a value has the wrong type;
            the message names the file (or `--set`) and the key.
    """
    data: dict = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError("config file not found", path=path, fix="check the path") \
                from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"is not valid TOML: {exc}", path=path,
                              fix="fix the TOML syntax at the position shown") from exc
    for key, value in options.items():
        if value is not None:
            _assign(data, key, value)
    for pair in overrides or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {pair!r} is not KEY=VALUE", field=pair,
                              fix="write e.g. --set validation.repeats=3")
        _assign(data, key.strip(), _parse_value(raw.strip()))
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        where = path if path is not None else "--set / options"
        raise ConfigError(f"{error['msg']} (got {error.get('input')!r})", path=where,
                          field=field, fix=f"see `taskloom generate --help` for {field}") \
            from exc


def _assign(data: dict, dotted: str, value: object) -> None:
    node = data
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{part} is not a table", field=dotted,
                              fix="use a dotted key that names a setting")
    node[parts[-1]] = value


def _parse_value(raw: str) -> object:
    """A --set value as TOML would read it (numbers, booleans, strings, arrays)."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
