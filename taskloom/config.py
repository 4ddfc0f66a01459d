"""Configuration models and their defaults.

`ValidationConfig` holds the knobs of the validation protocol; `RunConfig` a whole batch
run (it contains a ValidationConfig). Values come from defaults,
then a TOML file, then `--set key=value` overrides (later wins); every value is checked by
pydantic, and a wrong one is reported with the file and the key.
"""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from taskloom.errors import ConfigError
from taskloom.models import Frozen


class ValidationConfig(Frozen):
    """How tasks are proven solvable."""

    @model_validator(mode="before")
    @classmethod
    def _read_mutations_flag(cls, data: Any) -> Any:
        """Read the older `mutations = false` as the check selection it means."""
        if isinstance(data, dict) and "mutations" in data:
            data = dict(data)
            if not data.pop("mutations"):
                data["checks"] = _without_check(tuple(data.get("checks", ())), "mutations")
        return data

    repeats: int = Field(default=2, ge=1, le=20,
                         description="Oracle runs, each from fresh state; all must give 1.")
    mode: Literal["auto", "strict"] = Field(
        default="auto", description="auto: emulate simple Dockerfiles on the base image and "
        "reset state in place; strict: real docker build, fresh container per phase.")
    checks: tuple[str, ...] = Field(
        default=(), description="Checks to run: empty for the defaults (all but judge); "
        "`+name` / `-name` edit the defaults (`+judge`, `-mutations`); plain names are the "
        "exact set (each brings the checks it needs). `taskloom validate --help` lists them.")
    probes: Literal["combined", "each"] = Field(
        default="combined", description="Tamper probes: one phase trying every tactic at "
        "once (then each alone to name them, only if it forged a reward), or each alone.")
    alternatives: str | None = Field(
        default=None, description="A folder of more correct solutions, each required to "
        "earn reward 1 like solution/alternatives/*.sh: `<folder>/<task id>/*.sh` for one "
        "task, `<folder>/*.sh` for every task.")
    timeout_cap_sec: float = Field(default=300.0, gt=0,
                                   description="Upper bound on a task's own timeouts.")
    nop_budget_sec: float = Field(
        default=60.0, gt=0, description="test.sh limit on the untouched environment: tests "
        "still running then (waiting for a service nothing started) count as not solved, "
        "with a warning, instead of a `timeout` after the verifier's whole limit.")
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


class LLMConfig(Frozen):
    """The OpenAI-compatible model behind the `llm` and `hybrid` backends and the judge.

    `base_url` and `model` left unset are read from OPENAI_BASE_URL and TASKLOOM_LLM_MODEL
    when a run starts (`with_llm_environment`); the key is read from the environment
    variable named by `api_key_env` in each worker and is never stored. The model name
    `mock` (MOCK_MODEL) needs no server, key or `openai` package: a deterministic offline
    model answers (`generators/llm/mock.py`).
    """

    base_url: str | None = Field(default=None, description="Server URL, e.g. "
                                 "http://127.0.0.1:8080/v1 (default: $OPENAI_BASE_URL, "
                                 "else OpenAI).")
    model: str | None = Field(default=None,
                              description="Model name (default: $TASKLOOM_LLM_MODEL).")
    api_key_env: str = Field(default="OPENAI_API_KEY",
                             description="Name of the environment variable holding the key.")
    temperature: float = Field(default=0.2, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(default=4096, ge=16, description="Completion tokens per request.")
    timeout_sec: float = Field(default=180.0, gt=0, description="Limit of one request.")
    max_concurrency: int = Field(default=4, ge=1,
                                 description="Requests in flight per worker process.")
    retries: int = Field(default=3, ge=0, le=10,
                         description="Retries of a request after a transport error.")
    backoff_sec: float = Field(default=1.0, ge=0,
                               description="First retry delay; doubles each retry.")
    price_in_per_mtok: float = Field(default=0.0, ge=0,
                                     description="Dollars per 1M prompt tokens.")
    price_out_per_mtok: float = Field(default=0.0, ge=0,
                                      description="Dollars per 1M completion tokens.")
    structured_output: Literal["auto", "json_schema", "json_object", "tools"] = Field(
        default="auto", description="How answers are constrained to a JSON schema; auto "
        "tries json_schema, then json_object with a schema (llama.cpp), then tool calls.")
    grammar_max_items: int | None = Field(
        default=None, ge=1, description="Longest list a grammar-constrained answer "
        "(json_object, tools) may hold; small models can loop on a list forever.")

    def output_settings(self) -> dict:
        """The settings that change what the model answers (part of every cache key)."""
        return self.model_dump(include={"model", "temperature", "max_tokens",
                                        "structured_output", "grammar_max_items"})


OPENAI_URL = "https://api.openai.com/v1"
MOCK_MODEL = "mock"  # the offline model of generators/llm/mock.py: no server, no key


def embed_extra_installed() -> bool:
    """True when sentence-transformers (the embed extra) can be imported."""
    import importlib.util

    return importlib.util.find_spec("sentence_transformers") is not None


class DiversityConfig(Frozen):
    """The corpus filter (near-duplicates, decontamination) and coverage steering.

    Embeddings (the filter and `reference`) need the `embed` extra; steering needs nothing.
    """

    enabled: bool = Field(default_factory=embed_extra_installed,
                          description="Drop tasks whose embedding is within `threshold` of "
                          "an earlier kept task (default: on where the embed extra is "
                          "installed, so a stored run config says what was decided).")
    model: str = Field(default="sentence-transformers/all-MiniLM-L6-v2",
                       description="sentence-transformers model name or folder path; the "
                       "default ships with the embed extra and works offline.")
    download: bool = Field(default=False, description="Let sentence-transformers download a "
                           "named model from the Hugging Face Hub (default: local only).")
    threshold: float = Field(default=0.97, gt=0, le=1, description="Cosine similarity at or "
                             "above which a task duplicates an earlier kept one.")
    reference: tuple[str, ...] = Field(default=(), description="Folders of Harbor tasks (e.g. "
                                       "a benchmark): generated tasks too similar to any of "
                                       "them are dropped (decontamination).")
    reference_threshold: float | None = Field(default=None, gt=0, le=1, description="Cosine "
                                              "similarity for reference matches (default: "
                                              "`threshold`).")
    steering: bool = Field(default=True, description="Plan toward skills and transitions the "
                           "run's exported tasks cover least (needs nothing extra).")
    steering_lag: int = Field(default=32, ge=1, le=10_000, description="Item i is planned "
                              "from the tasks exported among items < i - lag (fixed, so runs "
                              "stay deterministic; planning waits for that frontier).")
    steering_strength: float = Field(default=1.0, ge=0, le=10, description="Exponent of "
                                     "1 / (1 + uses) in a path's novelty (its skills' and "
                                     "transitions' sum).")
    steering_candidates: int = Field(default=16, ge=1, le=40, description="Equally good "
                                     "sampled paths the planner compares by novelty; it "
                                     "realizes the most novel it can (1 = plain sampling).")

    @property
    def embeds(self) -> bool:
        """True when the filter needs embeddings (near-duplicates or a reference set)."""
        return self.enabled or bool(self.reference)


class AgentLimits(Frozen):
    """How far one attempt of the terminal agent (`taskloom.rollouts.agent`) may go."""

    max_turns: int = Field(default=30, ge=1, description="Model answers per attempt.")
    max_tokens: int = Field(default=200_000, ge=1, description="Prompt plus completion "
                            "tokens per attempt; the attempt stops once past it.")
    wall_sec: float = Field(default=900.0, gt=0, description="Wall-clock seconds per "
                            "attempt; no new turn starts after it.")
    command_timeout_sec: float = Field(default=60.0, gt=0, description="Limit of one "
                                       "script; it is killed with what it started.")
    output_chars: int = Field(default=4000, ge=200, description="Characters of the last "
                              "output's end shown to the model.")


class CalibrationConfig(Frozen):
    """Calibration: a model attempts each accepted task k times; tasks outside a band go.

    Off unless `model` is set. The agent is `taskloom solve`'s (`taskloom.rollouts`): each
    attempt gets a fresh environment in the run's runtime and is scored by the task's own
    verifier. The server's timeout, retries and answer format come from the `llm` table.
    """

    model: str | None = Field(default=None, description="Model that attempts each accepted "
                              "task (`mock`: the offline model, which never solves one); "
                              "unset: no calibration.")
    base_url: str | None = Field(default=None, description="Its OpenAI-compatible server "
                                 "(default: $OPENAI_BASE_URL, else OpenAI).")
    api_key_env: str = Field(default="OPENAI_API_KEY",
                             description="Name of the environment variable holding the key.")
    temperature: float = Field(default=0.7, ge=0, le=2, description="Sampling temperature "
                               "(attempts must differ for a pass rate to mean anything).")
    k: int = Field(default=8, ge=1, le=64, description="Attempts per task.")
    band: tuple[float, float] = Field(default=(0.1, 0.9), description="Pass rates kept, "
                                      "both ends included: [0.1, 0.9] drops tasks the model "
                                      "always or never solves.")
    agent: AgentLimits = Field(default_factory=AgentLimits, description="Limits of each "
                               "attempt: agent.max_turns, agent.max_tokens, agent.wall_sec, "
                               "agent.command_timeout_sec, agent.output_chars.")
    retries: int = Field(default=2, ge=0, le=10, description="Fresh environments for an "
                         "attempt that infrastructure broke (a task with an attempt still "
                         "unscored is an error, calibrated again on resume).")
    price_in_per_mtok: float = Field(default=0.0, ge=0,
                                     description="Dollars per 1M prompt tokens.")
    price_out_per_mtok: float = Field(default=0.0, ge=0,
                                      description="Dollars per 1M completion tokens.")

    @field_validator("band")
    @classmethod
    def _band_is_an_interval(cls, band: tuple[float, float]) -> tuple[float, float]:
        low, high = band
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"{list(band)} is not [low, high] with 0 <= low <= high <= 1")
        return band

    @property
    def enabled(self) -> bool:
        """True when accepted tasks are calibrated."""
        return self.model is not None

    def keeps(self, pass_rate: float) -> bool:
        """True when `pass_rate` lies in the band."""
        low, high = self.band
        return low <= pass_rate <= high

    def chat_settings(self, llm: LLMConfig,
                      environ: Mapping[str, str] | None = None) -> LLMConfig:
        """The model settings of the calibration agent (server options from `llm`)."""
        return llm_from_environment(llm.model_copy(update={
            "model": self.model, "base_url": self.base_url, "api_key_env": self.api_key_env,
            "temperature": self.temperature, "price_in_per_mtok": self.price_in_per_mtok,
            "price_out_per_mtok": self.price_out_per_mtok}), environ)


class RunConfig(Frozen):
    """A batch run: what to generate, how, and how it is proven."""

    @model_validator(mode="before")
    @classmethod
    def _read_judge_flag(cls, data: Any) -> Any:
        """Read the older `llm.judge = true` as the check selection it means."""
        llm = data.get("llm") if isinstance(data, dict) else None
        if isinstance(llm, dict) and "judge" in llm:
            data, llm = dict(data), dict(llm)
            if llm.pop("judge"):
                validation = dict(data.get("validation") or {})
                validation["checks"] = _with_check(tuple(validation.get("checks", ())),
                                                   "judge")
                data["validation"] = validation
            data["llm"] = llm
        return data

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
    verifier: Literal["shared", "separate"] = Field(
        default="shared", description="Where the generated tasks' tests run under Harbor: "
        "shared (in the agent's environment, with the hardened test.sh; every runner "
        "accepts it) or separate (a fresh copy of the environment that receives only the "
        "paths the checks read; tasks whose checks need file owners or setuid bits stay "
        "shared). See the README's verifier section.")
    refine_rounds: int = Field(default=2, ge=0, le=10,
                               description="Repairs of a rejected draft before giving up.")
    scenario: str | None = Field(default=None, description="Generate only in this scenario.")
    skills: tuple[str, ...] = Field(default=(), description="Use only these skills.")
    graph: tuple[str, ...] = Field(default=(), description="Extra skill graph files.")
    difficulty: DifficultySetting = Field(default_factory=DifficultySetting,
                                          description="Fixed difficulty levels (else drawn).")
    validation: ValidationConfig = Field(default_factory=ValidationConfig,
                                         description="Validation protocol settings.")
    llm: LLMConfig = Field(default_factory=LLMConfig,
                           description="Model server for the llm/hybrid backends and judge.")
    diversity: DiversityConfig = Field(default_factory=DiversityConfig,
                                       description="Near-duplicate filter, decontamination "
                                       "against reference tasks, coverage steering.")
    calibration: CalibrationConfig = Field(
        default_factory=CalibrationConfig, description="Pass rates of a model on each "
        "accepted task, and the band of pass rates kept (off unless calibration.model).")

    @property
    def item_limit(self) -> int:
        """How many items may be planned at most."""
        return self.max_items or 2 * self.count + 10



def _with_check(checks: tuple[str, ...], name: str) -> tuple[str, ...]:
    """A selection that also runs `name` (an edit of the defaults, or the exact set)."""
    if not checks or any(c.startswith(("+", "-")) for c in checks):
        return (*[c for c in checks if c != f"-{name}"], f"+{name}")
    return checks if name in checks else (*checks, name)


def _without_check(checks: tuple[str, ...], name: str) -> tuple[str, ...]:
    """A selection that leaves `name` out."""
    if not checks or any(c.startswith(("+", "-")) for c in checks):
        return (*[c for c in checks if c != f"+{name}"], f"-{name}")
    return tuple(c for c in checks if c != name)


def with_llm_environment(config: RunConfig,
                         environ: Mapping[str, str] | None = None) -> RunConfig:
    """`config` with `llm.base_url` and `llm.model` filled from the environment.

    Call it for a run that asks a model (`taskloom.pipeline.stages.run_asks_model`).

    Raises:
        ConfigError: No model is named anywhere.
    """
    return config.model_copy(update={"llm": llm_from_environment(config.llm, environ)})


def llm_from_environment(llm: LLMConfig,
                         environ: Mapping[str, str] | None = None) -> LLMConfig:
    """`llm` with the model from $TASKLOOM_LLM_MODEL and the server from $OPENAI_BASE_URL.

    The mock model needs no server, so its `base_url` stays as given (usually unset).

    Raises:
        ConfigError: No model is named anywhere.
    """
    environ = os.environ if environ is None else environ
    model = llm.model or environ.get("TASKLOOM_LLM_MODEL")
    if not model:
        raise ConfigError("the llm and hybrid backends and the judge check need a model name",
                          field="llm.model", fix="pass --model NAME (--model mock runs "
                                                 "offline), --set llm.model=NAME or set "
                                                 "TASKLOOM_LLM_MODEL")
    base_url = llm.base_url if model == MOCK_MODEL else \
        llm.base_url or environ.get("OPENAI_BASE_URL") or OPENAI_URL
    return llm.model_copy(update={"base_url": base_url, "model": model})


def load_run_config(path: Path | None = None, overrides: list[str] | None = None, *,
                    stored: dict | None = None, **options: object) -> RunConfig:
    """Defaults (or a resumed run's `stored` config), the TOML file, options, `--set` pairs.

    Later wins: the file's tables replace the stored ones, keyword options (CLI flags)
    replace single keys, and `--set key=value` pairs come last.

    Raises:
        ConfigError: The file is unreadable, a key is unknown or a value has the wrong type;
            the message names the file (or `--set`) and the key.
    """
    data: dict = copy.deepcopy(stored) if stored else {}
    if path is not None:
        try:
            data.update(tomllib.loads(Path(path).read_text(encoding="utf-8")))
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
