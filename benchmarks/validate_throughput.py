"""Validation throughput against the sandbox floor, and with against without tamper probes,
measured in the same run on the same tasks.

    .venv/bin/python benchmarks/validate_throughput.py [--tasks 60] [--workers 2] [--rounds 2]
                                                       [--kind procedural|shell]

Small tasks. `--kind procedural` (default): single-step procedural tasks at the lowest
difficulty (the kind a batch run makes by the thousand), checked by the hardened test.sh
(its guard and the check runner: ~0.14 s per phase here). `--kind shell`: small tasks made
with tests/taskfactory.py (sort, uppercase or count a data file) whose test.sh checks the
output with `cmp`, so the numbers measure the sandboxes rather than the checks.

The floor (benchmarks/floor.py) runs the same container work with no taskloom logic;
taskloom runs the protocol the floor imitates (structure, emulated build, nop, oracle x R
from fresh state, mutations, leakage scan: `--checks=-tamper`), and then the default
protocol, which adds the combined tamper probe (one more phase in the same container, after
the in-place reset). Rounds alternate the three to spread machine noise. `--kind shell`
tasks check with a naive test.sh that the probes forge (by design: they measure the
sandbox), so for them only the protocol without probes is measured.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from floor import floor_rate
from taskfactory import make_task

from taskloom.config import ValidationConfig
from taskloom.generators.procedural.backend import (
    PlanSettings,
    ProceduralGenerator,
    ProceduralPlanner,
)
from taskloom.harbor import write_task_folder
from taskloom.sandbox.docker_runtime import DockerRuntime, docker_client
from taskloom.skill_graph.model import load_graph
from taskloom.validators.engine import validate_all, validate_folder

EASY = {"steps": 1, "tool_breadth": 1, "data_volume": 1, "noise": 1, "specification": 1,
        "edge_cases": 1, "strictness": 1}


def make_tasks(root: Path, count: int) -> list[Path]:
    """`count` single-step procedural tasks written as Harbor folders."""
    graph = load_graph()
    planner = ProceduralPlanner(graph, PlanSettings(seed=1234, difficulty=EASY))
    generator = ProceduralGenerator(graph)
    folders = []
    index = 0
    while len(folders) < count:
        blueprint = planner.plan(index)
        index += 1
        if len(blueprint.path) != 1:
            continue
        draft = generator.generate(blueprint)
        folders.append(write_task_folder(draft.task, root / draft.task.name))
    return folders


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
SHELL_TEST = """#!/bin/bash
if cmp -s /app/out.txt /tests/expected.txt; then echo 1; else echo 0; fi \\
  > /logs/verifier/reward.txt
"""


def make_shell_tasks(root: Path, count: int) -> list[Path]:
    """Small, varied tasks (sort, uppercase or count a data file), checked by `cmp`."""
    folders = []
    for i in range(count):
        words = [WORDS[(i * 3 + k) % len(WORDS)] + str(k) for k in range(20 + i % 7)]
        data = "\n".join(words) + "\n"
        expected, solve = [
            ("\n".join(sorted(words)) + "\n", "sort /app/data.txt > /app/out.txt"),
            (data.upper(), "tr a-z A-Z < /app/data.txt > /app/out.txt"),
            (f"{len(words)}\n", "wc -l < /app/data.txt > /app/out.txt"),
        ][i % 3]
        folder = make_task(root, f"task-{i:04d}", environment={"data.txt": data},
                           solve=f"#!/bin/bash\n{solve}\n", test_py=None, test_sh=SHELL_TEST)
        (folder / "tests" / "expected.txt").write_text(expected)
        folders.append(folder)
    return folders


TASK_KINDS = {"procedural": make_tasks, "shell": make_shell_tasks}


def run_taskloom(client, folders: list[Path], workers: int, repeats: int,
                 probes: bool) -> float:
    import time

    config = ValidationConfig(repeats=repeats, checks=() if probes else ("-tamper",))
    with DockerRuntime(client) as runtime:
        started = time.perf_counter()
        jobs = (lambda f=f: validate_folder(f, runtime, config) for f in folders)
        reports = list(validate_all(jobs, runtime, workers=workers))
        rate = len(folders) / (time.perf_counter() - started) * 60
    rejected = [r for r in reports if not r.accepted]
    if rejected:
        raise SystemExit(f"{len(rejected)} benchmark tasks were rejected: {rejected[0]}")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kind", choices=tuple(TASK_KINDS), default="procedural")
    args = parser.parse_args()
    client = docker_client()
    with tempfile.TemporaryDirectory() as tmp:
        folders = TASK_KINDS[args.kind](Path(tmp), args.tasks)
        floor_rate(client, folders[:4], workers=args.workers, repeats=args.repeats)  # warm up
        with_probes = args.kind == "procedural"
        floors, ours, probed = [], [], []
        for round_index in range(args.rounds):
            floors.append(floor_rate(client, folders, workers=args.workers,
                                     repeats=args.repeats))
            ours.append(run_taskloom(client, folders, args.workers, args.repeats, False))
            line = (f"round {round_index + 1}: floor {floors[-1]:6.1f} tasks/min   "
                    f"taskloom without probes {ours[-1]:6.1f}")
            if with_probes:
                probed.append(run_taskloom(client, folders, args.workers, args.repeats, True))
                line += f"   with probes {probed[-1]:6.1f}"
            print(line)
    floor, taskloom = sum(floors) / len(floors), sum(ours) / len(ours)
    print(f"\n{args.tasks} small tasks ({args.kind}), {args.workers} workers, "
          f"R={args.repeats}")
    print(f"sandbox floor           : {floor:6.1f} tasks/min")
    print(f"taskloom without probes : {taskloom:6.1f} tasks/min "
          f"({taskloom / floor:4.2f} of the floor)")
    if with_probes:
        rate = sum(probed) / len(probed)
        print(f"taskloom with probes    : {rate:6.1f} tasks/min "
              f"({rate / floor:4.2f} of the floor; probes add {taskloom / rate - 1:4.0%} "
              f"to the time per task)")


if __name__ == "__main__":
    main()
