"""Batch-run throughput: verified tasks/min of `taskloom generate` beside the sandbox floor.

    .venv/bin/python benchmarks/pipeline_throughput.py [--count 500] [--workers 2]
                                                       [--runtimes docker,bwrap] [--seed 0]

Runs the whole pipeline (plan, generate, validate with every default check, refine, filter,
export) for `count` verified procedural tasks on each runtime, then the sandbox floor
(benchmarks/floor.py: the same container checks in one Docker container per task, no
taskloom logic) over the exported tasks, all in the same process. Prints each rate, the
machine's CPU per verified task (every process, dockerd and the sandboxes included, from
/proc/stat), and where it goes: the CPU of planning and generating (the run's items
planned and generated again, alone, in this process), the rest being validation's sandbox
work and the run's bookkeeping; then the seconds each stage and each check (the phase
kinds: nop, oracle, alternatives, mutations, tamper probes) spent, summed over the items
and shown per verified task (wall seconds of work running side by side, waits included,
so they add up to more than the run's length).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import floor_rate
from runtime_compare import busy_cpu_seconds

from taskloom.config import load_run_config
from taskloom.pipeline import stages
from taskloom.pipeline.runner import Runner
from taskloom.pipeline.store import RunStore
from taskloom.sandbox.docker_runtime import docker_client


def where_time_goes(run: Path) -> tuple[Counter, Counter]:
    """Seconds per stage and per validation check, summed over the run's results."""
    stages, checks = Counter(), Counter()
    with RunStore(run / "run.duckdb", read_only=True) as store:
        for stage, seconds in store.query("SELECT stage, sum(seconds) FROM results "
                                          "GROUP BY stage ORDER BY min(created)"):
            stages[stage] = seconds or 0.0
        for stored in store.verdicts():
            checks[stored.verdict.check] += stored.verdict.seconds
    return stages, checks


def planning_cpu(config, items: int) -> tuple[float, float]:
    """CPU seconds of planning and of generating `items` items again, one at a time."""
    planned, started = [], time.process_time()
    for item in range(items):
        planned.append(stages.plan(config, item).value)
    generating = time.process_time()
    for blueprint in planned:
        if blueprint is not None:
            stages.generate(config, blueprint)
    return generating - started, time.process_time() - generating


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runtimes", default="docker,bwrap")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for runtime in args.runtimes.split(","):
            config = load_run_config(None, [f"count={args.count}", f"seed={args.seed}",
                                            f"workers={args.workers}", f"runtime={runtime}"])
            run = Path(tmp) / runtime
            cpu, started = busy_cpu_seconds(), time.perf_counter()
            summary = Runner(config, run).run()
            elapsed = time.perf_counter() - started
            cpu = busy_cpu_seconds() - cpu
            per_task = max(summary.exported, 1)
            print(f"{runtime:7s} taskloom generate : {summary.exported / elapsed * 60:6.1f} "
                  f"verified tasks/min ({summary.exported} of {summary.items} items in "
                  f"{elapsed:.0f} s), {cpu / per_task:.2f} core-s per verified task")
            plan, generate = planning_cpu(config, summary.items)
            print(f"        core-s per verified task: plan {plan / per_task:.2f}, generate "
                  f"{generate / per_task:.2f}, the rest (validation's sandboxes, filter, "
                  f"export, the store) {(cpu - plan - generate) / per_task:.2f}")
            by_stage, checks = where_time_goes(run)
            print("        seconds per verified task by stage: " + ", ".join(
                f"{name} {seconds / per_task:.2f}" for name, seconds in by_stage.items()))
            print("        seconds per verified task by check: " + ", ".join(
                f"{name} {seconds / per_task:.2f}" for name, seconds in checks.most_common()))
        folders = sorted(p for p in (run / "tasks").iterdir() if p.is_dir())
        floor = floor_rate(docker_client(), folders, workers=args.workers,
                           repeats=config.validation.repeats)
    print(f"sandbox floor (docker)   : {floor:6.1f} tasks/min")


if __name__ == "__main__":
    main()
