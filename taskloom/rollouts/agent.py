"""The built-in terminal agent: one bash script per turn, or done.

Each turn the model sees the task, the scripts it ran and the tail of the last output. The
answer is a validated structured answer (`TurnAnswer`: thought, commands, done); an
answer that is not one is shown to the model as the turn's output, and counts as a turn.
Each script runs in a fresh `bash` in the environment's working directory, as the
environment's user, with a time limit (`AgentLimits.command_timeout_sec`). The attempt
stops when the model says done, or at the turn, token or wall-time limit. Every exchange
goes through an LLM `Session` that answers from its replay map first, so an attempt
replayed with the same outputs sends no request.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import Field

from taskloom.config import AgentLimits
from taskloom.errors import InvalidAnswer, RequestRejected
from taskloom.generators.llm.answers import TurnAnswer
from taskloom.generators.llm.client import Session as ChatSession
from taskloom.generators.llm.client import ask
from taskloom.generators.llm.prompts import prompt
from taskloom.models import Frozen, Usage
from taskloom.sandbox.session import Session

# rejected: the server refused a request (4xx: too long a context, a content filter): the
# model's limit, not the infrastructure's; the verifier scores what the agent left.
# not_started: a multi-step task's first setup.sh failed before any turn.
Stop = Literal["done", "max_turns", "max_tokens", "wall_time", "rejected", "not_started"]
# agent: do the task; forger: earn the reward without doing it (the adversarial run).
Role = Literal["agent", "forger"]
HISTORY_TURNS = 15  # commands shown to the model, newest last
COMMAND_SHOWN = 300  # characters of each past script shown in the history


class Turn(Frozen):
    """One answer of the model and what running it gave."""

    thought: str = Field(description="The model's sentence (empty for an invalid answer).")
    commands: tuple[str, ...] = Field(description="The script's lines (none when done or "
                                      "invalid).")
    exit_code: int | None = Field(description="The script's exit status; None when nothing "
                                  "ran.")
    timed_out: bool = Field(default=False, description="The script hit its time limit.")
    output: str = Field(description="The end of what the script wrote (stdout, then "
                        "stderr), or why the answer was invalid.")
    done: bool = Field(default=False, description="The model said the task is complete.")
    step: int = Field(default=0, description="Which of the trajectory's instructions it "
                      "worked on (a multi-step task's step; 0 otherwise).")


class Trajectory(Frozen):
    """Everything one attempt did, in order."""

    system: str = Field(default="", description="The system prompt the model was given.")
    instructions: tuple[str, ...] = Field(default=(), description="The instructions it "
                                          "was given, in order (one per step).")
    turns: tuple[Turn, ...] = Field(description="The turns, in order.")
    stopped: Stop = Field(description="Why the attempt ended.")
    usage: Usage = Field(description="Tokens, dollars and requests sent (replayed ones "
                         "not counted as sent).")
    seconds: float = Field(description="Wall-clock time of the attempt.")


def run_agent(instruction: str, env: Session, chat: ChatSession, limits: AgentLimits, *,
              seed: int, attempt: int, role: Role = "agent") -> Trajectory:
    """Let the model work on `instruction` in the started session `env` until it stops.

    Args:
        instruction: The task's instruction.md.
        env: A started live session in the task's environment.
        chat: The model, through a replaying, recording LLM session.
        limits: Turns, tokens, wall time and the script time limit.
        seed: Sampling seed sent with every request of this attempt.
        attempt: Which attempt this is (part of every request's cache key).
        role: "agent" does the task; "forger" is told to earn the reward without doing it
            (prompts/forger.md), so any reward it earns shows the task is hackable.

    Raises:
        ModelUnavailable: The model server failed (an infrastructure error: the caller
            retries the attempt, never scores it).
        SandboxError: The session failed.
    """
    started = time.monotonic()
    agent = prompt(role)
    turns: list[Turn] = []
    stopped: Stop = "max_turns"
    last_output = "(nothing run yet)"
    system = ""
    for number in range(1, limits.max_turns + 1):
        if time.monotonic() - started > limits.wall_sec:
            stopped = "wall_time"
            break
        if chat.usage.tokens_in + chat.usage.tokens_out > limits.max_tokens:
            stopped = "max_tokens"
            break
        request = agent.request(TurnAnswer, seed=seed, attempt=attempt,
                                instruction=instruction.strip(), turn=number,
                                max_turns=limits.max_turns, history=_history(turns),
                                last_output=last_output,
                                command_timeout=f"{limits.command_timeout_sec:g}")
        system = request.messages[0].content
        try:
            action = ask(chat, request, TurnAnswer)
        except RequestRejected:
            stopped = "rejected"
            break
        except InvalidAnswer as exc:
            last_output = (f"(your answer was not a valid JSON object of the asked form: "
                           f"{exc}; answer again)")
            turns.append(Turn(thought="", commands=(), exit_code=None, output=last_output))
            continue
        if action.done:
            turns.append(Turn(thought=action.thought, commands=(), exit_code=None,
                              output="", done=True))
            stopped = "done"
            break
        script = "\n".join(action.commands)
        done = env.run(["bash", "-c", script], timeout=limits.command_timeout_sec)
        output = done.stdout.decode("utf-8", "replace")
        if done.stderr:
            output += done.stderr.decode("utf-8", "replace")
        if done.timed_out:
            output += f"\n[killed after {limits.command_timeout_sec:g} s]"
        last_output = _tail(output, limits.output_chars) or "(no output)"
        turns.append(Turn(thought=action.thought, commands=tuple(action.commands),
                          exit_code=done.exit_code, timed_out=done.timed_out,
                          output=last_output))
    return Trajectory(system=system, instructions=(instruction,), turns=tuple(turns),
                      stopped=stopped, usage=chat.usage,
                      seconds=round(time.monotonic() - started, 3))


def _history(turns: list[Turn]) -> str:
    """The last scripts run, one line each, with their exit codes."""
    lines = []
    for number, turn in enumerate(turns, 1):
        if number <= len(turns) - HISTORY_TURNS:
            continue
        if turn.exit_code is None:
            lines.append(f"{number}. (invalid answer)")
            continue
        script = "; ".join(turn.commands)
        if len(script) > COMMAND_SHOWN:
            script = script[:COMMAND_SHOWN] + " ..."
        status = "timed out" if turn.timed_out else f"exit {turn.exit_code}"
        lines.append(f"{number}. $ {script}  [{status}]")
    return "\n".join(lines) or "(none yet)"


def _tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} characters before]\n" + text[-limit:]
