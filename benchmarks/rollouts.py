"""Agent rollouts (`taskloom solve`): harness overhead per turn, and attempts per minute.

    .venv/bin/python benchmarks/rollouts.py [--runtime bwrap|docker|both] [--turns 40] [-k 4]

All in one run, per runtime, with a scripted OpenAI-compatible server on loopback (the
tests' `ScriptedServer`, so the model costs nothing and the harness is what is measured):

1. Floor: one live session on the example task runs `:` through `bash -c` `--turns` times;
   the median seconds per command is the bare sandbox exec floor.
2. Turn: the terminal agent, told by the scripted model to run `:` each turn for
   `--turns` turns, in the same kind of session; the median seconds per turn, and the
   harness overhead per turn = turn - floor (prompt, HTTP round trip, answer validation,
   cache bookkeeping), and turn / floor.
3. Attempts: `solve` with the model playing each task's reference solution, one step per
   turn, on the example and two procedural tasks, `-k` attempts each, 2 workers: attempts
   per minute (setup, agent and verifier included) and the pass rate (must be 1.0).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llmservers import Reply, ScriptedServer, solution_replayer  # noqa: E402

from taskloom.config import AgentLimits, LLMConfig, RunConfig  # noqa: E402
from taskloom.generators.backends import backend_for  # noqa: E402
from taskloom.generators.llm.client import Session as ChatSession  # noqa: E402
from taskloom.generators.llm.client import transport_for  # noqa: E402
from taskloom.generators.procedural.backend import blueprint_for  # noqa: E402
from taskloom.harbor import read_task_folder  # noqa: E402
from taskloom.rollouts.agent import run_agent  # noqa: E402
from taskloom.rollouts.solve import solve  # noqa: E402
from taskloom.sandbox import live  # noqa: E402
from taskloom.sandbox.runtime import open_runtime  # noqa: E402

EXAMPLE = ROOT / "examples/tasks/rotate-nginx-logs"


def noop_server(turns: int) -> ScriptedServer:
    """A model that runs `:` for `turns` turns, then says done."""
    def respond(body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        turn = int(user.split("\nTurn ", 1)[1].split(" ", 1)[0])
        done = turn > turns
        return Reply(content=json.dumps({"thought": "noop", "commands": [] if done else [":"],
                                         "done": done}))
    return ScriptedServer([], respond=respond)


def llm_of(server: ScriptedServer) -> LLMConfig:
    return LLMConfig(model="scripted", base_url=server.base_url, retries=0, timeout_sec=30)


def measure(runtime_name: str, turns: int, k: int) -> dict:
    runtime = open_runtime(runtime_name)
    task = read_task_folder(EXAMPLE)
    try:
        with live.session(task, runtime) as env:
            env.run(["true"])
            floor = []
            for _ in range(turns):
                began = time.perf_counter()
                env.run(["bash", "-c", ":"])
                floor.append(time.perf_counter() - began)
        server = noop_server(turns)
        try:
            llm = llm_of(server)
            with live.session(task, runtime) as env:
                chat = ChatSession(transport_for(llm), llm.output_settings())
                trajectory = run_agent(task.instruction, env, chat,
                                       AgentLimits(max_turns=turns + 1), seed=0, attempt=0)
            per_turn = trajectory.seconds / len(trajectory.turns)
        finally:
            server.close()
        generator = backend_for(RunConfig(seed=0)).generator
        tasks = [task] + [generator.generate(blueprint_for(generator.graph, skills, seed=0,
                                                           index=i)).task
                          for i, skills in enumerate([("csv.dedupe_rows",),
                                                      ("csv.dedupe_rows", "csv.to_json")])]
        server = ScriptedServer([], respond=solution_replayer(
            {t.instruction: t.file("solution", "solve.sh").content.decode() for t in tasks}))
        try:
            with tempfile.TemporaryDirectory() as out:
                began = time.perf_counter()
                report = solve(tasks, llm_of(server), runtime, Path(out), k=k, workers=2)
                seconds = time.perf_counter() - began
        finally:
            server.close()
    finally:
        runtime.close()
    attempts = sum(t.scored for t in report.tasks)
    return {"floor": statistics.median(floor), "turn": per_turn,
            "attempts_per_min": attempts / seconds * 60,
            "pass_rate": sum(t.passes for t in report.tasks) / attempts,
            "turns_per_attempt": statistics.mean(t.mean_turns for t in report.tasks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", choices=("bwrap", "docker", "both"), default="both")
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("-k", type=int, default=4)
    args = parser.parse_args()
    names = ("bwrap", "docker") if args.runtime == "both" else (args.runtime,)
    print(f"{'runtime':8} {'exec floor':>11} {'agent turn':>11} {'harness':>9} "
          f"{'turn/floor':>10} {'attempts/min':>13} {'pass rate':>9}")
    for name in names:
        found = measure(name, args.turns, args.k)
        harness = found["turn"] - found["floor"]
        print(f"{name:8} {found['floor'] * 1000:9.1f}ms {found['turn'] * 1000:9.1f}ms "
              f"{harness * 1000:7.1f}ms {found['turn'] / found['floor']:9.2f}x "
              f"{found['attempts_per_min']:13.1f} {found['pass_rate']:9.2f}")


if __name__ == "__main__":
    main()
