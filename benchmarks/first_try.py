"""How often a generated task's other correct solution earns reward 1, and its rule mutants
earn 0, on the first try, per primitive, beside the reference solution's share measured in
the same run.

    .venv/bin/python benchmarks/first_try.py [--count 200] [--seed 0]
                                             [--runtime bwrap|docker] [--workers 2]

Plans `--count` items as `taskloom generate` does (difficulty drawn per item), generates
each at its first sub-seed (no regeneration after a rejection: this is the first try), and
validates it with the oracle (once), the alternatives check and the mutations check. Prints,
per primitive: the tasks that use it; the share whose reference solution earned 1 (the
baseline); the share whose alternative did; the rule mutants its steps shipped and the share
of those that earned 0; the share of its uses that shipped at least one rule mutant. Then
the failing tasks with the verdicts, and the time the alternative and mutant phases add
against the oracle phase. Target: 100% alternatives and rule mutants for every primitive.
"""

from __future__ import annotations

import argparse
import re
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

RULE_MUTANT = re.compile(r"mutants/step-(\d+)-([a-z0-9-]+)\.sh")
CHECKS = ("oracle", "alternatives", "mutations")


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
    config = ValidationConfig(repeats=1, checks=CHECKS)
    with open_runtime(args.runtime) as runtime:
        jobs = [lambda d=draft: validate_task(d.task, runtime, config,
                                              expected_values=d.expected_values)
                for draft in drafts]
        reports = {r.task: r for r in validate_all(jobs, runtime, workers=args.workers)}
    uses: dict[str, int] = defaultdict(int)
    ok = {check: defaultdict(int) for check in ("oracle", "alternatives")}
    ruled: dict[str, int] = defaultdict(int)  # uses that shipped at least one rule mutant
    mutants: dict[str, int] = defaultdict(int)
    weak: dict[str, int] = defaultdict(int)
    failures, seconds = [], dict.fromkeys(CHECKS, 0.0)
    first_try = {"alternatives": 0, "mutations": 0}
    for draft in drafts:
        verdicts = {v.check: v for v in reports[draft.task.name].verdicts}
        for check in CHECKS:
            seconds[check] += verdicts[check].seconds if check in verdicts else 0.0
        shipped = [RULE_MUTANT.search(m.path) for m in draft.task.mutants]
        mutations = verdicts.get("mutations")
        passed_by = set() if mutations is None or mutations.passed else \
            {(int(k), rule) for k, rule in RULE_MUTANT.findall(mutations.details)}
        for number, skill in enumerate(draft.blueprint.path, start=1):
            uses[skill] += 1
            for check in ok:
                ok[check][skill] += bool(verdicts.get(check) and verdicts[check].passed)
            own = [(int(m.group(1)), m.group(2)) for m in shipped
                   if m and int(m.group(1)) == number]
            ruled[skill] += bool(own)
            mutants[skill] += len(own)
            weak[skill] += len(passed_by & set(own))
        for check in ("alternatives", "mutations"):
            verdict = verdicts.get(check)
            # No mutations verdict after a passing oracle: a one-step task without rules.
            nothing = check == "mutations" and verdict is None and "oracle" in verdicts \
                and verdicts["oracle"].passed
            first_try[check] += bool((verdict and verdict.passed) or nothing)
            if not nothing and (verdict is None or not verdict.passed):
                failures.append((draft.task.name, check, verdict.details if verdict else
                                 f"no {check} verdict (the build or oracle failed first?)"))
    print(f"{len(drafts)} tasks of {args.count} planned (seed {args.seed}, {args.runtime})\n")
    print(f"{'primitive':30} {'tasks':>5} {'oracle':>7} {'altern.':>8} {'mutants':>8} "
          f"{'earn 0':>7} {'uses w/ rule':>12}")
    for skill in sorted(uses, key=lambda s: (ok["alternatives"][s] / uses[s], s)):
        rejected = (f"{(mutants[skill] - weak[skill]) / mutants[skill]:7.0%}"
                    if mutants[skill] else f"{'-':>7}")
        print(f"{skill:30} {uses[skill]:5d} {ok['oracle'][skill] / uses[skill]:7.0%} "
              f"{ok['alternatives'][skill] / uses[skill]:8.0%} {mutants[skill]:8d} "
              f"{rejected} {ruled[skill] / uses[skill]:12.0%}")
    total = max(len(drafts), 1)
    shipped_total = sum(mutants.values())
    print(f"\nalternative earned reward 1 on the first try: {first_try['alternatives']} of "
          f"{len(drafts)} tasks ({first_try['alternatives'] / total:.1%})")
    print(f"every mutant (steps removed, rules ignored) earned 0 on the first try: "
          f"{first_try['mutations']} of {len(drafts)} tasks ({first_try['mutations'] / total:.1%})")
    print(f"rule mutants shipped: {shipped_total} ({shipped_total / total:.2f} per task); "
          f"earned 0: {shipped_total - sum(weak.values())}")
    if seconds["oracle"]:
        print(f"phase time / oracle phase time: alternatives "
              f"{seconds['alternatives'] / seconds['oracle']:.2f}, mutants "
              f"{seconds['mutations'] / seconds['oracle']:.2f}")
    for name, check, details in failures:
        print(f"- {name} ({check}): {details}")


if __name__ == "__main__":
    main()
