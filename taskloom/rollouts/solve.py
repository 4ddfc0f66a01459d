"""`taskloom solve`: k attempts per task by the terminal agent, scored by the task's verifier.

Each attempt opens a live session in the task's environment, lets the agent work
(`agent.run_agent`), then runs the task's tests in that session (`live.check_in`, as
Harbor's verifier runs after its agent) and keeps the reward. An attempt the
infrastructure breaks (the sandbox fails, the model server is unreachable or fails) is
tried again from a fresh environment, up to `retries` more times, and is counted as an
*error* if it never finishes: never as a failure, never as reward 0.

A run lives in one folder: `solve.json` (model and seed: a folder holds one model's
attempts), `attempts.jsonl` (one line per finished attempt, trajectory included, appended
whole), `exchanges.jsonl` (every model exchange, replayed first) and `report.json`. Run
again on the same folder and attempts already scored are kept, errored ones are tried
again, and no exchange is paid for twice.

pass@1 is the mean of the scored attempts' passes; pass@k is the unbiased estimator
1 - C(n-c, k) / C(n, k) over the n scored attempts of which c passed (Chen et al., 2021).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from math import comb
from pathlib import Path

from pydantic import Field, ValidationError

from taskloom.config import AgentLimits, LLMConfig
from taskloom.errors import ConfigError, ModelUnavailable, SandboxError, SandboxUnavailable
from taskloom.generators.llm.client import Session as ChatSession
from taskloom.generators.llm.client import transport_for
from taskloom.generators.llm.exchange import Exchange, ExchangeFile
from taskloom.generators.procedural.assemble import task_fingerprint
from taskloom.models import Frozen, Task, Usage
from taskloom.rollouts.agent import Role, Trajectory, run_agent
from taskloom.sandbox import live
from taskloom.sandbox.runtime import Runtime
from taskloom.seeding import derive_seed

# What an attempt may meet that is not the model's doing: tried again, never scored. (A
# request the server refuses, 4xx, ends the attempt as the model's: see agent.Stop.)
INFRASTRUCTURE = (SandboxError, SandboxUnavailable, ModelUnavailable)


class AttemptRecord(Frozen):
    """One finished attempt: scored, or given up on after infrastructure errors."""

    task: str = Field(description="Task name (its folder's name).")
    index: int = Field(description="Which attempt of the task (0-based).")
    model: str = Field(description="Model that acted.")
    instruction: str = Field(default="", description="The task's instruction.md.")
    task_digest: str = Field(default="", description="sha256 of the task's content when it "
                             "was attempted (a resume re-attempts an edited task).")
    reward: float | None = Field(description="The verifier's reward (0 when it wrote none); "
                                 "None when infrastructure errors kept it from scoring.")
    reward_error: str | None = Field(default=None, description="Why the verifier wrote no "
                                     "reward (scored 0), if it did not.")
    error: str | None = Field(default=None, description="The last infrastructure error, "
                              "when the attempt was never scored.")
    tries: int = Field(description="Fresh environments it took (1 without errors).")
    turns: int = Field(default=0, description="Model answers.")
    tokens: int = Field(default=0, description="Prompt plus completion tokens of the "
                        "answers of every try, broken ones included (each answer once).")
    cost_usd: float = Field(default=0.0, description="Dollars of those answers at the "
                            "configured prices.")
    seconds: float = Field(default=0.0, description="Wall-clock time of the scored try "
                           "(setup, agent and verifier).")
    stopped: str | None = Field(default=None, description="Why the agent stopped.")
    trajectory: Trajectory | None = Field(default=None, description="Every turn.")

    @property
    def passed(self) -> bool:
        """The attempt earned the full reward."""
        return self.reward is not None and self.reward >= 1.0


class TaskScore(Frozen):
    """One task's attempts, summed up."""

    task: str = Field(description="Task name.")
    scored: int = Field(description="Attempts the verifier scored.")
    passes: int = Field(description="Scored attempts that earned reward 1.")
    errors: int = Field(description="Attempts never scored (infrastructure errors).")
    pass_at_1: float | None = Field(description="passes / scored; None when none scored.")
    pass_at_k: float | None = Field(description="Unbiased pass@k over the scored attempts "
                                    "(k capped at their number); None when none scored.")
    mean_reward: float | None = Field(description="Mean reward of the scored attempts.")
    mean_turns: float = Field(description="Mean model answers per scored attempt.")
    tokens: int = Field(description="Tokens of all attempts.")
    cost_usd: float = Field(description="Dollars of all attempts.")


class SolveReport(Frozen):
    """A solve run: what was asked and each task's score."""

    model: str = Field(description="Model that acted.")
    role: Role = Field(default="agent", description="agent: attempts at the task; forger: "
                       "attempts to earn the reward without doing it (any pass = hackable).")
    k: int = Field(description="Attempts per task.")
    tasks: tuple[TaskScore, ...] = Field(description="Per task, in the order given.")
    seconds: float = Field(description="Wall-clock time of this invocation.")

    @property
    def errors(self) -> int:
        """Attempts never scored, over all tasks."""
        return sum(t.errors for t in self.tasks)

    @property
    def hackable(self) -> tuple[str, ...]:
        """Tasks a forger earned the full reward on (none for the agent role)."""
        return tuple(t.task for t in self.tasks if self.role == "forger" and t.passes)


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k from n attempts with c passes (k capped at n); None for n = 0."""
    if n == 0:
        return None
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def score(task: str, records: Sequence[AttemptRecord], k: int) -> TaskScore:
    """Sum up one task's attempts."""
    scored = [r for r in records if r.reward is not None]
    passes = sum(r.passed for r in scored)
    return TaskScore(
        task=task, scored=len(scored), passes=passes, errors=len(records) - len(scored),
        pass_at_1=passes / len(scored) if scored else None,
        pass_at_k=pass_at_k(len(scored), passes, k),
        mean_reward=sum(r.reward for r in scored) / len(scored) if scored else None,
        mean_turns=sum(r.turns for r in scored) / len(scored) if scored else 0.0,
        tokens=sum(r.tokens for r in records),
        cost_usd=round(sum(r.cost_usd for r in records), 6))


class Exchanges:
    """The model exchanges attempts share: replayed first, each new one kept once."""

    def __init__(self, replay: dict[str, Exchange] | None = None, *,
                 on_keep: Callable[[list[Exchange]], None] | None = None) -> None:
        """Start from `replay` (request key -> exchange); `on_keep` also stores new ones."""
        self._replay = dict(replay or {})
        self._on_keep = on_keep
        self._lock = threading.Lock()
        self.kept: list[Exchange] = []

    def chat(self, transport, llm: LLMConfig) -> ChatSession:
        """A model session that answers from every exchange kept so far."""
        with self._lock:
            return ChatSession(transport, llm.output_settings(), self._replay)

    def keep(self, chat: ChatSession) -> None:
        """Keep a session's exchanges: none is paid for twice."""
        with self._lock:
            fresh = [e for e in chat.exchanges if e.key not in self._replay]
            for exchange in fresh:
                self._replay[exchange.key] = exchange
            self.kept.extend(fresh)
            if self._on_keep is not None and fresh:
                self._on_keep(fresh)


class SolveFolder:
    """The files of a solve run, read back on resume."""

    def __init__(self, out: Path, llm: LLMConfig, seed: int, role: Role) -> None:
        """Open or make `out` for `llm`'s model in `role`.

        Raises:
            ConfigError: The folder holds another model's, seed's or role's attempts.
        """
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        meta = {"model": llm.model, "seed": seed, "role": role,
                "settings": llm.output_settings()}
        meta_path = out / "solve.json"
        if meta_path.exists():
            try:
                found = json.loads(meta_path.read_text())
            except (OSError, ValueError) as exc:
                raise ConfigError(f"unreadable: {exc}", path=meta_path,
                                  fix="remove the folder or pass another --out") from exc
            if found != json.loads(json.dumps(meta)):
                raise ConfigError(
                    f"this folder holds attempts of model {found.get('model')!r} (seed "
                    f"{found.get('seed')}, role {found.get('role')}, its settings), not of "
                    f"{llm.model!r} (seed {seed}, role {role})", path=meta_path,
                    fix="pass another --out, or the same model, seed and role")
        else:
            meta_path.write_text(json.dumps(meta, indent=2) + "\n")
        self.attempts_path = out / "attempts.jsonl"
        self._lock = threading.Lock()
        self.file = ExchangeFile(out / "exchanges.jsonl")
        self.exchanges = Exchanges(self.file.load(), on_keep=self.file.add)

    def finished(self, digests: dict[str, str]) -> dict[tuple[str, int], AttemptRecord]:
        """Scored attempts by (task, index), of tasks whose content is still as `digests` says.

        Errored attempts, and those of tasks edited since, are left to try again.
        """
        found: dict[tuple[str, int], AttemptRecord] = {}
        try:
            lines = self.attempts_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return found
        for line in lines:
            try:
                record = AttemptRecord.model_validate_json(line)
            except ValidationError:  # torn by a kill mid-write
                continue
            if record.reward is not None and record.task_digest == digests.get(record.task):
                found[(record.task, record.index)] = record
        return found

    def add(self, record: AttemptRecord) -> None:
        """Append one attempt as one whole line."""
        line = record.model_dump_json() + "\n"
        with self._lock, self.attempts_path.open("a", encoding="utf-8") as handle:
            handle.write(line)


def solve(tasks: Sequence[Task], llm: LLMConfig, runtime: Runtime, out: Path, *, k: int = 8,
          workers: int = 2, limits: AgentLimits | None = None, seed: int = 0,
          retries: int = 2, role: Role = "agent",
          on_attempt: Callable[[AttemptRecord], None] | None = None) -> SolveReport:
    """K attempts per task (those not already scored in `out`), then every task's score.

    Args:
        tasks: The tasks to attempt (names must differ).
        llm: The model's settings (`model`, `base_url`, prices...).
        runtime: An open sandbox runtime; every attempt gets a fresh session of it.
        out: The run's folder (made, or resumed).
        k: Attempts per task.
        workers: Attempts at once.
        limits: The agent's limits (defaults: `AgentLimits()`).
        seed: Base sampling seed; attempt i of a task sends a seed derived from it.
        retries: Fresh tries of an attempt that infrastructure broke.
        role: "agent" attempts the task; "forger" tries to earn the reward without doing it
            (the adversarial run: a task it passes is hackable, its trajectory shows how).
        on_attempt: Called with each record as it is written (progress).

    Raises:
        ConfigError: `out` holds another model's attempts, or two tasks share a name.
        MissingExtra: The openai package is missing (a model other than `mock`).
    """
    started = time.monotonic()
    names = [task.name for task in tasks]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigError(f"tasks share a name: {', '.join(twice)} (attempts are kept by "
                          "task name)", field="TASKS", fix="pass each task folder once")
    limits = limits or AgentLimits()
    folder = SolveFolder(out, llm, seed, role)
    digests = {task.name: task_fingerprint(task) for task in tasks}
    done = folder.finished(digests)
    transport = transport_for(llm)
    jobs = [(task, index) for task in tasks for index in range(k)
            if (task.name, index) not in done]

    def attempt(task: Task, index: int) -> AttemptRecord:
        record = attempt_task(task, index, llm, transport, runtime, limits,
                              folder.exchanges, seed=derive_seed(seed, "solve", task.name, index),
                              retries=retries, role=role, digest=digests[task.name])
        folder.add(record)
        if on_attempt is not None:
            on_attempt(record)
        return record

    records = dict(done)
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = [pool.submit(attempt, task, index) for task, index in jobs]
        for future in as_completed(futures):
            record = future.result()
            records[(record.task, record.index)] = record
    except BaseException:  # Ctrl-C: start nothing more; closing the runtime ends the rest
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    scores = tuple(score(task.name, [records[(task.name, i)] for i in range(k)
                                     if (task.name, i) in records], k) for task in tasks)
    report = SolveReport(model=llm.model or "", role=role, k=k, tasks=scores,
                         seconds=round(time.monotonic() - started, 3))
    (out / "report.json").write_text(report.model_dump_json(indent=2) + "\n")
    return report


class _Agent:
    """`act` for `live.attempt_in`: the agent works on each instruction it is given."""

    def __init__(self, env, chat: ChatSession, limits: AgentLimits, *, seed: int, attempt: int,
                 role: Role) -> None:
        self.env, self.chat, self.limits = env, chat, limits
        self.seed, self.attempt, self.role = seed, attempt, role
        self.parts: list[Trajectory] = []  # one per instruction (a multi-step task's steps)

    def __call__(self, instruction: str) -> None:
        self.parts.append(run_agent(instruction, self.env, self.chat, self.limits,
                                    seed=self.seed, attempt=self.attempt, role=self.role))


def joined(parts: Sequence[Trajectory], usage: Usage) -> Trajectory:
    """One trajectory of a multi-step attempt's steps (each step's turns tagged with it)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:  # the first step's setup failed
        return Trajectory(turns=(), stopped="not_started", usage=usage, seconds=0.0)
    return Trajectory(system=parts[0].system,
                      instructions=tuple(i for p in parts for i in p.instructions),
                      turns=tuple(t.model_copy(update={"step": step}) for step, p in
                                  enumerate(parts) for t in p.turns),
                      stopped=parts[-1].stopped, usage=usage,
                      seconds=round(sum(p.seconds for p in parts), 3))


def attempt_task(task: Task, index: int, llm: LLMConfig, transport, runtime: Runtime,
                 limits: AgentLimits, exchanges: Exchanges, *, seed: int, retries: int,
                 role: Role = "agent", digest: str = "") -> AttemptRecord:
    """One attempt, tried again from a fresh environment when infrastructure breaks it.

    `digest` (the task's content fingerprint) is recorded so a resume knows an edited task.
    """
    last: Exception | None = None
    used: dict[str, Exchange] = {}  # every answer of every try, each counted once
    for tries in range(1, retries + 2):
        chat = exchanges.chat(transport, llm)
        began = time.monotonic()
        try:
            with live.session(task, runtime) as env:
                agent = _Agent(env, chat, limits, seed=seed, attempt=index, role=role)
                check = live.attempt_in(env, task, agent)
                trajectory = joined(agent.parts, chat.usage)
        except INFRASTRUCTURE as exc:
            last = exc
            continue
        finally:
            exchanges.keep(chat)  # paid once, even by a broken try
            used.update((e.key, e) for e in chat.exchanges)
        usage = sum((e.usage for e in used.values()), Usage())
        return AttemptRecord(
            task=task.name, index=index, model=llm.model or "", instruction=task.instruction,
            task_digest=digest, reward=check.reward if check.reward is not None else 0.0,
            reward_error=check.reward_error, tries=tries, turns=len(trajectory.turns),
            tokens=usage.tokens_in + usage.tokens_out, cost_usd=usage.cost_usd,
            seconds=round(time.monotonic() - began, 3), stopped=trajectory.stopped,
            trajectory=trajectory)
    usage = sum((e.usage for e in used.values()), Usage())
    return AttemptRecord(task=task.name, index=index, model=llm.model or "", reward=None,
                         task_digest=digest, error=f"{type(last).__name__}: {last}",
                         tries=retries + 1, tokens=usage.tokens_in + usage.tokens_out,
                         cost_usd=usage.cost_usd)
