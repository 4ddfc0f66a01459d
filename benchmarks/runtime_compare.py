"""Docker runtime vs bwrap runtime: the same tasks validated by both, in one run.

    .venv/bin/python benchmarks/runtime_compare.py [--tasks 60] [--workers 2] [--rounds 2]
                                                   [--repeats 2] [--kind shell|procedural]

Both runtimes run the full protocol (structure, emulated build, nop, oracle x R from fresh
state, leakage scan) on the same small tasks, alternating rounds to spread machine noise;
every task must be accepted by both with the same verdicts. Reported: tasks/min of each,
machine CPU per task (all processes, dockerd included, from /proc/stat) and the ratio.

`--kind shell` (default): small tasks made with tests/taskfactory.py (sort, uppercase or
count a data file) whose test.sh checks the output with `cmp`, so the numbers measure the
sandboxes. `--kind procedural`: the single-step procedural tasks of validate_throughput.py,
checked by the hardened test.sh (~0.14 s per phase here), which dominates both runtimes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validate_throughput import TASK_KINDS

from taskloom.config import ValidationConfig
from taskloom.sandbox.runtime import open_runtime
from taskloom.validators.engine import validate_all, validate_folder


def busy_cpu_seconds() -> float:
    """CPU seconds all processes of the machine have used (user+nice+system+irq+softirq)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / 100.0


def run(name: str, folders: list[Path], workers: int, repeats: int) -> tuple[float, float,
                                                                             dict]:
    """Validate every folder on runtime `name`: (tasks/min, CPU ms per task, verdicts)."""
    config = ValidationConfig(repeats=repeats)
    with open_runtime(name) as runtime:
        cpu, started = busy_cpu_seconds(), time.perf_counter()
        jobs = (lambda f=f: validate_folder(f, runtime, config) for f in folders)
        reports = list(validate_all(jobs, runtime, workers=workers))
        elapsed = time.perf_counter() - started
    cpu_ms = (busy_cpu_seconds() - cpu) * 1000 / len(folders)
    rejected = [r for r in reports if not r.accepted]
    if rejected:
        raise SystemExit(f"{name}: {len(rejected)} benchmark tasks were rejected: "
                         f"{rejected[0]}")
    verdicts = {r.task: [(v.check, v.passed, v.reason) for v in r.verdicts] for r in reports}
    return len(folders) / elapsed * 60, cpu_ms, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kind", choices=("shell", "procedural"), default="shell")
    args = parser.parse_args()
    make = TASK_KINDS[args.kind]
    rates: dict[str, list[float]] = {"docker": [], "bwrap": []}
    cpus: dict[str, list[float]] = {"docker": [], "bwrap": []}
    with tempfile.TemporaryDirectory() as tmp:
        folders = make(Path(tmp), args.tasks)
        for name in rates:  # warm caches (page cache, image layers)
            run(name, folders[:4], args.workers, args.repeats)
        for round_index in range(args.rounds):
            seen = {}
            for name in rates:
                rate, cpu_ms, seen[name] = run(name, folders, args.workers, args.repeats)
                rates[name].append(rate)
                cpus[name].append(cpu_ms)
            if seen["docker"] != seen["bwrap"]:
                raise SystemExit("the runtimes gave different verdicts")
            print(f"round {round_index + 1}: docker {rates['docker'][-1]:7.1f} tasks/min   "
                  f"bwrap {rates['bwrap'][-1]:7.1f} tasks/min")
    mean = {name: sum(values) / len(values) for name, values in rates.items()}
    cpu = {name: sum(values) / len(values) for name, values in cpus.items()}
    print(f"\n{args.tasks} tasks ({args.kind}), {args.workers} workers, "
          f"R={args.repeats}, {args.rounds} rounds")
    for name in rates:
        print(f"{name:7s}: {mean[name]:7.1f} tasks/min   {cpu[name]:6.0f} ms CPU per task")
    print(f"ratio  : {mean['bwrap'] / mean['docker']:7.2f}x the Docker runtime's tasks/min")


if __name__ == "__main__":
    main()
