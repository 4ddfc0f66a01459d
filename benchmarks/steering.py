"""Coverage steering against plain inverse-frequency sampling, on the same seeds.

    .venv/bin/python benchmarks/steering.py [--tasks 1000] [--seeds 0 1 2] [--lag 32]
                                            [--strength 1.0] [--candidates 16]

Each arm plans and generates `--tasks` items with the procedural backend (no validation:
plan + generate decide which skills, transitions and scenarios a task uses, and validation
keeps almost every procedural task). The steered arm plans item i from the coverage of the
tasks generated among items < i - lag, exactly as `taskloom generate` does from the tasks
it exported; the plain arm uses `diversity.steering=false`. Both arms run at once, one per
core, and are measured with `taskloom.metrics.corpus`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ProcessPoolExecutor

from taskloom.config import load_run_config
from taskloom.errors import NoDraft
from taskloom.generators.backends import backend_for, skill_graph
from taskloom.metrics.corpus import TaskRecord, corpus_metrics
from taskloom.skill_graph.steering import CoverageTracker

METRICS = ("skill_coverage", "transition_coverage", "scenario_entropy", "category_entropy")


def arm(seed: int, tasks: int, steering: bool, lag: int, strength: float,
        candidates: int) -> dict:
    """Plan and generate `tasks` items; return the metrics, counts and seconds."""
    config = load_run_config(None, [f"seed={seed}", f"diversity.steering={str(steering).lower()}",
                                    f"diversity.steering_lag={lag}",
                                    f"diversity.steering_strength={strength}",
                                    f"diversity.steering_candidates={candidates}"])
    tracker = CoverageTracker()
    made: dict[int, TaskRecord] = {}
    failed = 0
    started = time.perf_counter()
    backend = backend_for(config)
    for index in range(tasks):
        coverage = None
        if steering:
            ready = index - lag  # items < ready count, like the runner's frontier
            for counted in range(max(0, ready - 1), ready):
                if counted in made:
                    tracker.add(made[counted].skills, made[counted].scenario)
            coverage = tracker.snapshot(max(0, ready))
        blueprint = backend.planner.plan(index, coverage)
        try:
            draft = backend.generator.generate(blueprint)
        except NoDraft:
            failed += 1
            continue
        made[index] = TaskRecord(task_id=draft.task.name, scenario=blueprint.scenario,
                                 skills=blueprint.path,
                                 solution=draft.task.solution[0].content.decode())
    seconds = time.perf_counter() - started
    metrics = corpus_metrics(list(made.values()), skill_graph(config.graph))
    steps = statistics.mean(len(r.skills) for r in made.values()) if made else 0.0
    return {"metrics": metrics, "failed": failed, "seconds": seconds, "steps": steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--lag", type=int, default=32)
    parser.add_argument("--strength", type=float, default=1.0)
    parser.add_argument("--candidates", type=int, default=16)
    args = parser.parse_args()
    print(f"{args.tasks} items per arm, plan + generate only (coverage does not need "
          f"validation), lag {args.lag}, strength {args.strength}, candidates "
          f"{args.candidates}")
    differences: dict[str, list[float]] = {name: [] for name in METRICS}
    with ProcessPoolExecutor(max_workers=2) as pool:
        for seed in args.seeds:
            common = (args.lag, args.strength, args.candidates)
            plain = pool.submit(arm, seed, args.tasks, False, *common)
            steered = pool.submit(arm, seed, args.tasks, True, *common)
            plain, steered = plain.result(), steered.result()
            p, s = plain["metrics"], steered["metrics"]
            print(f"\nseed {seed}: plain {p.tasks} tasks ({plain['seconds']:.0f} s), "
                  f"steered {s.tasks} tasks ({steered['seconds']:.0f} s)")
            print(f"  {'metric':22s} {'plain':>8s} {'steered':>8s} {'diff':>8s}")
            for name in METRICS:
                a, b = getattr(p, name), getattr(s, name)
                differences[name].append(b - a)
                print(f"  {name:22s} {a:8.3f} {b:8.3f} {b - a:+8.3f}")
            print(f"  {'skills used':22s} {p.skills_used:8d} {s.skills_used:8d} "
                  f"{s.skills_used - p.skills_used:+8d}  (of {p.skills_total})")
            print(f"  {'transitions used':22s} {p.transitions_used:8d} {s.transitions_used:8d} "
                  f"{s.transitions_used - p.transitions_used:+8d}  (of {p.transitions_total})")
            print(f"  {'commands per solution':22s} {p.commands_mean:8.2f} {s.commands_mean:8.2f} "
                  f"{s.commands_mean - p.commands_mean:+8.2f}")
            print(f"  {'skills per task':22s} {plain['steps']:8.2f} {steered['steps']:8.2f} "
                  f"{steered['steps'] - plain['steps']:+8.2f}")
            print(f"  {'generation failures':22s} {plain['failed']:8d} {steered['failed']:8d}")
    if len(args.seeds) > 1:
        print(f"\nmean difference (steered - plain) over {len(args.seeds)} seeds:")
        for name in METRICS:
            print(f"  {name:22s} {statistics.mean(differences[name]):+8.3f} "
                  f"(min {min(differences[name]):+.3f}, max {max(differences[name]):+.3f})")


if __name__ == "__main__":
    main()
