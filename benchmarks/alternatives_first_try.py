"""How often a generated task's alternative solution earns reward 1 on the first try, per
primitive, beside the reference solution's share measured in the same run.

    .venv/bin/python benchmarks/alternatives_first_try.py [--count 200] [--seed 0]
                                                          [--runtime bwrap|docker] [--workers 2]

Plans `--count` items as `taskloom generate` does (difficulty drawn per item), generates
each at its first sub-seed (no regeneration after a rejection: this is the first try), and
validates it with the oracle (once) and the alternatives check. Prints, per primitive, the
tasks that use it, the share whose reference solution earned 1 (the baseline) and the share
whose alternative did, then the failing tasks with the tests that rejected them, and the
time the alternative phase adds against the oracle phase. Target: 100% for every primitive.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from taskloom.config import ValidationConfig
from taskloom.errors import NoDraft
from taskloom.generators.procedural.backend import (
    PlanSettings,
    ProceduralGenerator,
    ProceduralPlanner,
)
from taskloom.sandbox.runtime import open_runtime
from taskloom.skill_graph.model import load_graph
from taskloom.validators.engine import validate_all, validate_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runtime", choices=("bwrap", "docker"), default="bwrap")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    graph = load_graph()
    planner = ProceduralPlanner(graph, PlanSettings(seed=args.seed))
    generator = ProceduralGenerator(graph)
    drafts = []
    for index in range(args.count):
        try:
            drafts.append(generator.generate(planner.plan(index)))
        except NoDraft:
            continue
    config = ValidationConfig(repeats=1, checks=("oracle", "alternatives"))
    with open_runtime(args.runtime) as runtime:
        jobs = [lambda d=draft: validate_task(d.task, runtime, config,
                                              expected_values=d.expected_values)
                for draft in drafts]
        reports = {r.task: r for r in validate_all(jobs, runtime, workers=args.workers)}
    uses: dict[str, int] = defaultdict(int)
    oracle_ok: dict[str, int] = defaultdict(int)
    alternative_ok: dict[str, int] = defaultdict(int)
    failures, seconds = [], {"oracle": 0.0, "alternatives": 0.0}
    for draft in drafts:
        report = reports[draft.task.name]
        verdicts = {v.check: v for v in report.verdicts}
        for check in seconds:
            seconds[check] += verdicts[check].seconds if check in verdicts else 0.0
        oracle = verdicts.get("oracle")
        alternative = verdicts.get("alternatives")
        for skill in set(draft.blueprint.path):
            uses[skill] += 1
            oracle_ok[skill] += bool(oracle and oracle.passed)
            alternative_ok[skill] += bool(alternative and alternative.passed)
        if alternative is None or not alternative.passed:
            failures.append((draft.task.name, alternative.details if alternative else
                             "no alternatives verdict (the build or oracle failed first?)"))
    print(f"{len(drafts)} tasks of {args.count} planned (seed {args.seed}, {args.runtime})\n")
    print(f"{'primitive':34} {'tasks':>5} {'oracle':>7} {'alternative':>12}")
    for skill in sorted(uses, key=lambda s: (alternative_ok[s] / uses[s], s)):
        print(f"{skill:34} {uses[skill]:5d} {oracle_ok[skill] / uses[skill]:7.0%} "
              f"{alternative_ok[skill] / uses[skill]:12.0%}")
    passed = len(drafts) - len(failures)
    print(f"\nalternative earned reward 1 on the first try: {passed} of {len(drafts)} tasks "
          f"({passed / max(len(drafts), 1):.1%})")
    if seconds["oracle"]:
        print(f"alternative phase time / oracle phase time: "
              f"{seconds['alternatives'] / seconds['oracle']:.2f}")
    for name, details in failures:
        print(f"- {name}: {details}")


if __name__ == "__main__":
    main()
