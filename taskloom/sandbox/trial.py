"""What a runtime is asked to do (a `TrialPlan`) and what it reports (a `TrialResult`).

A trial is one environment and a list of phases. Every phase starts from the freshly set-up
environment, optionally runs a solution (`solution/solve.sh`), then runs the tests and
reads the reward Harbor-style from /logs/verifier. The validation protocol is a trial:
`nop` (no solution), `oracle-1..R` (the reference solution), `alternative-<name>` (another
correct solution), `mutant-k` (the solution with step k removed), `mutant-<name>` (a shipped
solution ignoring one stated rule).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from taskloom.models import Frozen, TaskFile


class CopySource(Frozen):
    """One source of a COPY instruction, resolved against the build context."""

    name: str = Field(description="Base name of the source path.")
    is_dir: bool = Field(description="True when the source is a directory (contents copied).")
    files: tuple[TaskFile, ...] = Field(description="Files below the source (a file: one).")


class SetupStep(Frozen):
    """One filesystem-changing Dockerfile instruction, emulated inside the sandbox."""

    op: Literal["copy", "run", "workdir"] = Field(description="Which instruction.")
    sources: tuple[CopySource, ...] = Field(default=(), description="COPY sources.")
    dest: str = Field(default="", description="COPY destination (absolute).")
    chown: str | None = Field(default=None, description="COPY --chown value.")
    argv: tuple[str, ...] = Field(default=(), description="RUN command.")
    path: str = Field(default="", description="WORKDIR path to create.")
    workdir: str = Field(default="/", description="Working directory the step runs in.")
    user: str | None = Field(default=None, description="USER in effect for RUN.")
    env: dict[str, str] = Field(default_factory=dict, description="ENV in effect for RUN.")


class EnvironmentSpec(Frozen):
    """How to obtain the task's environment."""

    image: str = Field(description="Image the sandbox starts from (FROM or docker_image).")
    steps: tuple[SetupStep, ...] = Field(default=(), description="Emulated build steps.")
    build: bool = Field(default=False,
                        description="Strict mode: run a real `docker build` of `context`.")
    context: tuple[TaskFile, ...] = Field(
        default=(), description="Build context (environment/); built for real in strict mode.")
    workdir: str | None = Field(default=None, description="Working directory of solution and "
                                "tests; None keeps the image's own WORKDIR.")
    env: dict[str, str] = Field(default_factory=dict, description="ENV set by the Dockerfile.")
    user: str | None = Field(default=None, description="USER set by the Dockerfile.")
    build_timeout_sec: float = Field(default=600.0, description="Limit for build or setup.")
    cpus: float = Field(default=1.0, description="CPU limit.")
    memory_mb: int = Field(default=2048, description="Memory limit (no swap).")


class ArtifactEntry(Frozen):
    """One file, directory or link an agent phase left at an artifact path."""

    path: str = Field(description="Absolute path.")
    kind: Literal["file", "dir", "link"] = Field(description="What it is.")
    content: bytes = Field(default=b"", description="File bytes, or a link's target.")
    mode: int = Field(default=0o644, description="Permission bits (setuid/setgid cleared, "
                      "as Harbor's transfer clears them).")
    mtime: float = Field(default=0.0, description="Modification time (kept, as tar keeps it).")
    artifact: str = Field(description="The artifact path it was collected under.")


class Phase(Frozen):
    """One attempt from fresh state: an optional solution, then the tests."""

    name: str = Field(description="Phase name: nop, oracle-1, mutant-2...")
    solution: str | None = Field(default=None, description="Key into TrialPlan.solutions.")
    tests_timeout: float | None = Field(default=None, description="A shorter limit of its "
                                        "own for test.sh (the nop's budget), seconds.")
    first_failure: bool = Field(default=False, description="A phase meant to earn 0 (nop, "
                                "mutants, probes): its verifier gets FIRST_FAILURE_ENV, so a "
                                "taskloom check runner stops at the first failing check; "
                                "the reward is the same, only its log names fewer failures.")
    carried: tuple[ArtifactEntry, ...] | None = Field(
        default=None, description="Separate verifier only: the artifacts an agent phase "
        "that ran in another sandbox left; this phase restores them and runs the tests.")


class StepPlan(Frozen):
    """One step of a multi-step trial: what Harbor does before and after the agent's turn."""

    name: str = Field(description="Step name.")
    tests: tuple[TaskFile, ...] = Field(description="The task's tests/ with the step's own "
                                        "over them, copied to /tests.")
    workdir: tuple[TaskFile, ...] = Field(default=(), description="Copied into the working "
                                          "directory before the step; setup.sh there runs.")
    thresholds: dict[str, float] = Field(default_factory=dict, description="min_reward: the "
                                         "steps after this one run only if its rewards reach "
                                         "these.")
    solution_timeout: float = Field(description="Wall-clock limit of the step's solve.sh.")
    tests_timeout: float = Field(description="Wall-clock limit of the step's test.sh.")
    verifier_env: dict[str, str] = Field(default_factory=dict, description="[verifier].env "
                                         "with the step's over it.")
    agent_user: str | None = Field(default=None, description="User of setup.sh and solve.sh.")
    verifier_user: str | None = Field(default=None, description="User that runs test.sh.")


class Fingerprint(Frozen):
    """A test or solution file that must not appear inside the environment."""

    origin: str = Field(description="Where the file comes from, e.g. tests/test_outputs.py.")
    size: int = Field(description="Size in bytes.")
    sha256: str = Field(description="Hex digest of the bytes.")


class TrialPlan(Frozen):
    """Everything a runtime needs to run one trial."""

    environment: EnvironmentSpec = Field(description="The environment to set up.")
    tests: tuple[TaskFile, ...] = Field(description="tests/ files, copied to /tests.")
    solutions: dict[str, tuple[TaskFile, ...]] = Field(
        default_factory=dict, description="Named solution/ folders, copied to /solution.")
    phases: tuple[Phase, ...] = Field(description="Phases, run in order.")
    solution_timeout: float = Field(description="Wall-clock limit of solve.sh, seconds.")
    tests_timeout: float = Field(description="Wall-clock limit of test.sh, seconds.")
    solution_env: dict[str, str] = Field(default_factory=dict, description="[solution].env.")
    verifier_env: dict[str, str] = Field(default_factory=dict, description="[verifier].env.")
    agent_user: str | None = Field(default=None, description="User that runs solve.sh.")
    verifier_user: str | None = Field(default=None, description="User that runs test.sh.")
    leak_fingerprints: tuple[Fingerprint, ...] = Field(
        default=(), description="Files to look for inside the environment.")
    log_limit: int = Field(default=16384, description="Bytes of output kept per command.")
    network: bool = Field(default=False, description="Give the sandbox a network (never default).")
    separate_verifier: bool = Field(
        default=False, description="Run each phase's tests in a fresh copy of the environment "
        "that receives only `artifacts`, as Harbor's separate verifier mode does.")
    artifacts: tuple[str, ...] = Field(
        default=(), description="Absolute paths a separate verifier receives (and "
        "/logs/artifacts, Harbor's convention directory).")
    steps: tuple[StepPlan, ...] = Field(
        default=(), description="A multi-step task's steps: every phase runs them in order "
        "in its one environment, a solution `KEY` as `KEY@<step>` when `solutions` has "
        "that (the oracle's per-step solve.sh), else as `KEY`.")
    reward_strategy: Literal["mean", "final"] = Field(
        default="mean", description="How a multi-step phase's rewards come from its steps'.")


class CommandResult(Frozen):
    """Outcome of one command inside the sandbox."""

    exit_code: int = Field(description="Exit status (-9 when killed).")
    timed_out: bool = Field(description="True when the wall-clock limit killed it.")
    seconds: float = Field(description="Wall-clock seconds.")
    cpu_seconds: float = Field(default=0.0, description="CPU seconds (user and system) of "
                               "the command and the processes it started that ended with it.")
    log: str = Field(description="Head and tail of stdout+stderr.")


class SetupResult(Frozen):
    """Outcome of building or setting up the environment."""

    ok: bool = Field(description="True when the environment is ready.")
    step: int | None = Field(default=None, description="Index of the failed setup step.")
    command: CommandResult | None = Field(default=None, description="Failed step's outcome.")
    seconds: float = Field(default=0.0, description="Wall-clock seconds of build/setup.")
    log: str = Field(default="", description="Build or setup log excerpt.")


class StepResult(Frozen):
    """Outcome of one step of a multi-step phase."""

    name: str = Field(description="Step name.")
    setup: CommandResult | None = Field(default=None, description="workdir/setup.sh outcome.")
    solution: CommandResult | None = Field(default=None, description="solve.sh outcome.")
    tests: CommandResult | None = Field(default=None, description="test.sh outcome.")
    rewards: dict[str, float] | None = Field(default=None, description="Its named rewards.")
    reward_error: str | None = Field(default=None, description="Why it left no reward.")


class PhaseResult(Frozen):
    """Outcome of one phase."""

    name: str = Field(description="Phase name.")
    solution: CommandResult | None = Field(default=None, description="solve.sh outcome.")
    tests: CommandResult | None = Field(default=None, description="test.sh outcome.")
    reward: float | None = Field(default=None, description="Reward read from /logs/verifier "
                                 "(the lowest named one, when reward.json names several).")
    rewards: dict[str, float] | None = Field(default=None, description="Every named reward, "
                                             "as Harbor reads them (reward.txt: `reward`).")
    reward_error: str | None = Field(default=None, description="Why no reward could be read.")
    carried: tuple[ArtifactEntry, ...] | None = Field(
        default=None, description="Separate verifier only, when the tests are still to run "
        "in a new sandbox: the artifacts the solution left.")
    steps: tuple[StepResult, ...] | None = Field(
        default=None, description="A multi-step phase's steps, as far as they ran; its "
        "rewards are theirs combined by the plan's strategy.")


class Leak(Frozen):
    """A test or solution file found inside the environment."""

    path: str = Field(description="Path inside the environment.")
    origin: str = Field(description="Which test or solution file it copies.")


class TrialResult(Frozen):
    """What a runtime reports for a trial."""

    setup: SetupResult = Field(description="Build/setup outcome.")
    phases: tuple[PhaseResult, ...] = Field(default=(), description="One per phase run.")
    leaks: tuple[Leak, ...] = Field(default=(), description="Leaked files inside the image.")
    sandboxes: int = Field(default=0, description="How many sandboxes the trial took.")
    notes: tuple[str, ...] = Field(default=(), description="Why extra sandboxes were needed.")
