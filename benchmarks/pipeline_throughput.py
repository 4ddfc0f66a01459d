"""Batch-run throughput: verified tasks/min of `taskloom generate` beside the sandbox floor.

    .venv/bin/python benchmarks/pipeline_throughput.py [--count 500] [--workers 2]

Runs the whole pipeline (plan, generate, validate with mutations, refine, filter, export)
for `count` verified procedural tasks, then runs the sandbox floor (benchmarks/floor.py:
the same container checks, no taskloom logic) over the exported tasks, in the same
process. Prints both rates and their ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from floor import floor_rate

from taskloom.config import load_run_config
from taskloom.pipeline.runner import Runner
from taskloom.sandbox.docker_runtime import docker_client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = load_run_config(None, [f"count={args.count}", f"seed={args.seed}",
                                        f"workers={args.workers}"])
        started = time.perf_counter()
        summary = Runner(config, Path(tmp) / "run").run()
        elapsed = time.perf_counter() - started
        ours = summary.exported / elapsed * 60
        folders = sorted(p for p in (Path(tmp) / "run" / "tasks").iterdir() if p.is_dir())
        floor = floor_rate(docker_client(), folders, workers=args.workers,
                           repeats=config.validation.repeats)
    print(f"{summary.exported} verified tasks ({summary.items} items), {args.workers} workers")
    print(f"sandbox floor        : {floor:6.1f} tasks/min")
    print(f"taskloom generate    : {ours:6.1f} verified tasks/min ({elapsed:.0f} s)")
    print(f"ratio                : {ours / floor:6.2f} of the floor")


if __name__ == "__main__":
    main()
