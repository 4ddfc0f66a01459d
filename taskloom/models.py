"""Frozen pydantic models shared by every stage.

`Task` is the in-memory form of a Harbor task folder (schema 1.4); `TaskConfig` mirrors
its `task.toml`. `Verdict` is the outcome of one check; `TaskReport` gathers the verdicts of
one task. Everything here is immutable and compares by value, so read → write → read of a
task folder can be checked with `==`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

HARBOR_SCHEMA_VERSION = "1.4"
CHECK_NAME = r"^[a-z][a-z0-9-]*$"  # check names and reason codes: `oracle`, `weak-tests`


class Frozen(BaseModel):
    """Base of every model that crosses a stage boundary: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="base64",
                              val_json_bytes="base64")


class _HarborSection(BaseModel):
    """A task.toml table: known fields are typed, unknown keys are kept (Harbor ignores them)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    def unknown_keys(self) -> list[str]:
        """Keys of this table that the Harbor schema does not define."""
        return sorted((self.model_extra or {}).keys())


class Author(_HarborSection):
    """One entry of `[task].authors`."""

    name: str = Field(description="Author name.")
    email: str | None = Field(default=None, description="Author e-mail address.")


class TaskInfo(_HarborSection):
    """The `[task]` table: identity of the task in a registry."""

    name: str = Field(description="Package name, `org/name`.")
    description: str = Field(default="", description="One-line human description.")
    authors: tuple[Author, ...] = Field(default=(), description="Who wrote the task.")
    keywords: tuple[str, ...] = Field(default=(), description="Search keywords.")


class AgentSettings(_HarborSection):
    """The `[agent]` table: limits for whoever attempts the task (the oracle included)."""

    timeout_sec: float | None = Field(default=None, gt=0, description="Wall-clock limit.")
    user: str | int | None = Field(default=None, description="User the agent runs as.")


class EnvironmentSettings(_HarborSection):
    """The `[environment]` table: the container the agent works in."""

    build_timeout_sec: float = Field(default=600.0, gt=0, description="Limit for the build.")
    docker_image: str | None = Field(default=None, description="Prebuilt image instead of a build.")
    cpus: int | None = Field(default=None, gt=0, description="CPU cores.")
    memory_mb: int | None = Field(default=None, gt=0, description="Memory limit in MiB.")
    storage_mb: int | None = Field(default=None, gt=0, description="Disk limit in MiB.")
    gpus: int | None = Field(default=None, ge=0, description="GPUs (unsupported by taskloom).")
    network_mode: Literal["public", "no-network", "allowlist"] | None = Field(
        default=None, description="Network policy of the agent's environment.")
    allowed_hosts: tuple[str, ...] = Field(default=(), description="Hosts for `allowlist`.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables.")
    workdir: str | None = Field(default=None, description="Working directory override.")
    os: Literal["linux", "windows"] = Field(default="linux", description="Container OS.")

    @model_validator(mode="before")
    @classmethod
    def _normalize_deprecated(cls, data: Any) -> Any:
        """Read Harbor's deprecated spellings (`memory`, `storage`, `allow_internet`)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if old in data:
                value = data.pop(old)
                data.setdefault(new, _size_to_mb(value, old))
        if "allow_internet" in data:
            allow = data.pop("allow_internet")
            data.setdefault("network_mode", "public" if allow else "no-network")
        return data


class VerifierSettings(_HarborSection):
    """The `[verifier]` table: how `tests/test.sh` runs, and where."""

    timeout_sec: float = Field(default=600.0, gt=0, description="Wall-clock limit of test.sh.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    user: str | int | None = Field(default=None, description="User that runs test.sh.")
    environment_mode: Literal["shared", "separate"] | None = Field(
        default=None, description="shared: in the agent's environment; separate: in a fresh "
        "one that receives only the task's artifacts (default: separate when "
        "[verifier.environment] is set, else shared).")
    environment: EnvironmentSettings | None = Field(
        default=None, description="The separate verifier's own environment (unset: a fresh "
        "copy of [environment]).")

    @property
    def separate(self) -> bool:
        """True when the tests run in an environment of their own, as Harbor resolves it."""
        if self.environment_mode is not None:
            return self.environment_mode == "separate"
        return self.environment is not None


class ArtifactSettings(_HarborSection):
    """One `artifacts` entry: a path collected from the agent's environment after it ends."""

    source: str = Field(description="Absolute path in the agent's environment.")
    destination: str | None = Field(default=None, description="Where it lands among the "
                                    "trial's artifacts on the host (a separate verifier "
                                    "gets it at `source` whatever this says).")
    exclude: tuple[str, ...] = Field(default=(), description="Patterns left out of a "
                                     "directory.")
    service: str | None = Field(default=None, description="Compose service it comes from.")


def _size_to_mb(value: Any, field: str) -> int:
    """Convert '2G' / '512M' / 2048 into MiB."""
    if isinstance(value, int):
        return value
    text = str(value).strip().upper()
    units = {"G": 1024, "M": 1, "K": 1 / 1024}
    if text and text[-1] in units:
        try:
            return int(float(text[:-1]) * units[text[-1]])
        except ValueError:
            pass
    raise ValueError(f"{field}: expected a size like '2G' or '512M', got {value!r}")


class SolutionSettings(_HarborSection):
    """The `[solution]` table: how the reference solution runs."""

    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")


class StepSettings(_HarborSection):
    """One `[[steps]]` entry of a multi-step task: its name and its own limits.

    Its files live in `steps/<name>/` (`TaskStep`); unset limits fall back to the task's.
    """

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                      description="The step's folder name under steps/.")
    agent: AgentSettings = Field(default_factory=AgentSettings,
                                 description="The step's `[steps.agent]` table.")
    verifier: VerifierSettings = Field(default_factory=VerifierSettings,
                                       description="The step's `[steps.verifier]` table.")
    min_reward: float | dict[str, float] | None = Field(
        default=None, description="The remaining steps are skipped unless this step's "
        "rewards reach it: a number gates `reward`, a table each named reward (a missing "
        "one counts as -inf).")

    @property
    def thresholds(self) -> dict[str, float]:
        """`min_reward` as {reward name: threshold} (empty: no gate)."""
        if self.min_reward is None:
            return {}
        if isinstance(self.min_reward, dict):
            return dict(self.min_reward)
        return {"reward": float(self.min_reward)}


class TaskConfig(_HarborSection):
    """A whole `task.toml` (Harbor schema 1.4)."""

    schema_version: str = Field(default=HARBOR_SCHEMA_VERSION, description="Schema version.")
    task: TaskInfo | None = Field(default=None, description="The `[task]` table.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form metadata.")
    verifier: VerifierSettings = Field(default_factory=VerifierSettings,
                                       description="The `[verifier]` table.")
    agent: AgentSettings = Field(default_factory=AgentSettings, description="The `[agent]` table.")
    environment: EnvironmentSettings = Field(default_factory=EnvironmentSettings,
                                             description="The `[environment]` table.")
    solution: SolutionSettings = Field(default_factory=SolutionSettings,
                                       description="The `[solution]` table.")
    artifacts: tuple[str | ArtifactSettings, ...] = Field(
        default=(), description="Paths collected from the agent's environment after it "
                                "ends; a separate verifier gets them at the same paths.")
    steps: tuple[StepSettings, ...] = Field(
        default=(), description="`[[steps]]`: a multi-step task's steps, run in order in one "
                                "environment (empty: a single-step task).")
    multi_step_reward_strategy: Literal["mean", "final"] | None = Field(
        default=None, description="A multi-step task's reward: `mean` of each named reward "
        "over the steps that left one (missing: 0; the default), or the `final` step's.")

    @model_validator(mode="after")
    def _unique_steps(self) -> TaskConfig:
        names = [step.name.casefold() for step in self.steps]
        if len(set(names)) != len(names):
            raise ValueError("step names must be unique (case aside)")
        return self

    @property
    def reward_strategy(self) -> Literal["mean", "final"]:
        """How a multi-step trial's reward comes from its steps' (Harbor's default: mean)."""
        return self.multi_step_reward_strategy or "mean"

    @property
    def artifact_paths(self) -> tuple[str, ...]:
        """The source path of every artifact entry, in order."""
        return tuple(a if isinstance(a, str) else a.source for a in self.artifacts)

    @model_validator(mode="before")
    @classmethod
    def _normalize_version(cls, data: Any) -> Any:
        """Harbor before 1.1 spelled `schema_version` as `version`."""
        if isinstance(data, dict) and "version" in data and "schema_version" not in data:
            data = dict(data)
            data["schema_version"] = str(data.pop("version"))
        return data

    def unknown_keys(self) -> list[str]:
        """Every key in the file that the Harbor schema does not define, dotted."""
        found = list(super().unknown_keys())
        for section in ("task", "verifier", "agent", "environment", "solution"):
            table = getattr(self, section)
            if table is not None:
                found += [f"{section}.{key}" for key in table.unknown_keys()]
        for step in self.steps:
            found += [f"steps.{step.name}.{key}" for key in step.unknown_keys()]
            found += [f"steps.{step.name}.{section}.{key}" for section in ("agent", "verifier")
                      for key in getattr(step, section).unknown_keys()]
        return found


class TaskFile(Frozen):
    """One file of a task folder section (environment/, solution/ or tests/)."""

    path: str = Field(description="POSIX path relative to its section folder.")
    content: bytes = Field(description="Exact file bytes.")
    mode: int = Field(default=0o644, description="Permission bits (0o644, 0o755...).")


# solution/alternatives/*.sh: other correct solutions a task ships beside solve.sh. Harbor
# runs only solve.sh; `taskloom validate` requires each of these to earn reward 1 too.
ALTERNATIVES = "alternatives"
# solution/mutants/*.sh: wrong solutions on purpose, each ignoring one rule the instruction
# states; `taskloom validate` requires each of these to earn reward 0.
MUTANTS = "mutants"


class TaskStep(Frozen):
    """The files of one step of a multi-step task: `steps/<name>/`.

    Harbor runs the steps in order in one environment: for each, it copies `workdir/` into
    the working directory and runs its `setup.sh`, gives the agent `instruction.md`, then
    runs the step's tests (`tests/` over the task's own) and reads its rewards.
    """

    name: str = Field(description="Step name: its folder under steps/.")
    instruction: str = Field(description="steps/<name>/instruction.md.")
    solution: tuple[TaskFile, ...] = Field(default=(), description="Its solution/ (empty: "
                                           "the oracle runs the task's solution/solve.sh).")
    tests: tuple[TaskFile, ...] = Field(default=(), description="Its tests/, uploaded over "
                                        "the task's own tests/.")
    workdir: tuple[TaskFile, ...] = Field(default=(), description="Its workdir/: copied into "
                                          "the working directory before the step; a "
                                          "setup.sh there runs first.")


class Task(Frozen):
    """A Harbor task: instruction, environment, reference solution and tests."""

    name: str = Field(description="Task id: the folder name.")
    config: TaskConfig = Field(description="Parsed task.toml.")
    instruction: str = Field(description="instruction.md: what the agent is told.")
    environment: tuple[TaskFile, ...] = Field(description="environment/ files, sorted by path.")
    solution: tuple[TaskFile, ...] = Field(default=(), description="solution/ files, sorted.")
    tests: tuple[TaskFile, ...] = Field(description="tests/ files, sorted by path.")
    steps: tuple[TaskStep, ...] = Field(default=(), description="A multi-step task's steps, "
                                        "in the order of task.toml's [[steps]].")

    @model_validator(mode="after")
    def _files_sorted(self) -> Task:
        for section in ("environment", "solution", "tests"):
            paths = [f.path for f in getattr(self, section)]
            if paths != sorted(paths) or len(set(paths)) != len(paths):
                raise ValueError(f"{section} files must be unique and sorted by path")
        if [s.name for s in self.steps] != [s.name for s in self.config.steps]:
            raise ValueError("steps must match task.toml's [[steps]], in order")
        return self

    @property
    def instructions(self) -> tuple[str, ...]:
        """Everything the agent is told: instruction.md, or each step's."""
        return tuple(s.instruction for s in self.steps) or (self.instruction,)

    def file(self, section: Literal["environment", "solution", "tests"],
             path: str) -> TaskFile | None:
        """The file at `path` in `section`, or None."""
        return next((f for f in getattr(self, section) if f.path == path), None)

    @property
    def alternatives(self) -> tuple[TaskFile, ...]:
        """The other correct solutions, `solution/alternatives/*.sh`, by path."""
        return self._scripts(ALTERNATIVES)

    @property
    def mutants(self) -> tuple[TaskFile, ...]:
        """The wrong solutions that must earn nothing, `solution/mutants/*.sh`, by path."""
        return self._scripts(MUTANTS)

    def _scripts(self, folder: str) -> tuple[TaskFile, ...]:
        return tuple(f for f in self.solution if f.path.startswith(f"{folder}/")
                     and f.path.endswith(".sh") and f.path.count("/") == 1)

    @property
    def dockerfile(self) -> str | None:
        """Text of environment/Dockerfile, if the task has one."""
        found = self.file("environment", "Dockerfile")
        return found.content.decode("utf-8", errors="replace") if found else None


def sorted_files(files: Any) -> tuple[TaskFile, ...]:
    """Files as the sorted tuple `Task` expects."""
    return tuple(sorted(files, key=lambda f: f.path))


class Usage(Frozen):
    """Model usage behind a result (zero for the procedural backend)."""

    tokens_in: int = Field(default=0, ge=0, description="Prompt tokens.")
    tokens_out: int = Field(default=0, ge=0, description="Completion tokens.")
    cost_usd: float = Field(default=0.0, ge=0, description="Dollars, at configured prices.")
    requests: int = Field(default=0, ge=0, description="Requests sent (cache hits excluded).")

    def __add__(self, other: Usage) -> Usage:
        return Usage(tokens_in=self.tokens_in + other.tokens_in,
                     tokens_out=self.tokens_out + other.tokens_out,
                     cost_usd=self.cost_usd + other.cost_usd,
                     requests=self.requests + other.requests)


class ReasonCode(StrEnum):
    """Why a built-in check rejected a task (a validator may declare codes of its own)."""

    STRUCTURE = "structure"
    BUILD = "build"
    TRIVIAL = "trivial"
    ORACLE_FAILS = "oracle-fails"
    FLAKY = "flaky"
    TIMEOUT = "timeout"
    WEAK_TESTS = "weak-tests"
    OVER_SPECIFIED = "over-specified"
    LEAK = "leak"
    VERIFIER = "verifier"
    UNDERSPECIFIED = "underspecified"
    HACKABLE = "hackable"
    DUPLICATE = "duplicate"


class Verdict(Frozen):
    """The outcome of one check on one task."""

    check: str = Field(pattern=CHECK_NAME, description="Which check this is (a validator's "
                       "name, or `duplicate` for the corpus filter).")
    passed: bool = Field(description="True when the task passed the check.")
    reason: str | None = Field(default=None, pattern=CHECK_NAME,
                               description="Reason code of a failure (see `ReasonCode`); "
                                           "None if passed.")
    details: str = Field(default="", description="One or two sentences a person can act on.")
    log: str = Field(default="", description="Excerpt of the logs that prove the outcome.")
    seconds: float = Field(default=0.0, description="Wall-clock time the check took.")

    @model_validator(mode="after")
    def _reason_matches(self) -> Verdict:
        if self.passed == (self.reason is not None):
            raise ValueError("a failed verdict needs a reason code; a passed one has none")
        return self


class TaskReport(Frozen):
    """Every verdict for one task, and whether the task is accepted."""

    task: str = Field(description="Task id.")
    source: str = Field(default="", description="Where the task came from (folder path).")
    verdicts: tuple[Verdict, ...] = Field(description="One verdict per check that ran.")
    seconds: float = Field(default=0.0, description="Wall-clock time of the whole validation.")
    usage: Usage = Field(default_factory=Usage, description="Model usage (LLM judge).")

    @property
    def accepted(self) -> bool:
        """True when every check passed."""
        return bool(self.verdicts) and all(v.passed for v in self.verdicts)

    @property
    def reasons(self) -> list[str]:
        """Reason codes of the failed checks, in check order."""
        return [v.reason for v in self.verdicts if v.reason is not None]


class Calibration(Frozen):
    """How often a model solved a task in k attempts (the calibration stage's result).

    Written to task.toml as `[metadata.calibration]` and to the export's `calibration`
    column. Every attempt is scored: one that infrastructure broke is tried again in a
    fresh environment (`retried` counts those), never counted as a failure.
    """

    model: str = Field(description="Model that made the attempts.")
    k: int = Field(ge=1, description="Attempts, each scored by the task's verifier.")
    passes: int = Field(ge=0, description="Attempts that earned reward 1.")
    errors: int = Field(default=0, ge=0, description="Infrastructure errors met and retried "
                        "in a fresh environment (none of them scored).")
    pass_rate: float = Field(ge=0, le=1, description="passes / k.")
    mean_turns: float = Field(default=0.0, ge=0, description="Model answers per attempt.")
    date: str = Field(description="When the attempts were made (ISO 8601, UTC).")
    usage: Usage = Field(default_factory=Usage, description="Model usage of the attempts.")

    def metadata(self) -> dict[str, Any]:
        """The `[metadata.calibration]` table of task.toml."""
        return self.model_dump(include={"model", "k", "passes", "errors", "pass_rate",
                                        "date"})
