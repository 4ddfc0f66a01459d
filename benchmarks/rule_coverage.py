"""How often a step's stated rules are exercised by the task's data.

    .venv/bin/python benchmarks/rule_coverage.py [--count 300] [--seed 5] [--show 25]
    .venv/bin/python benchmarks/rule_coverage.py --path perms.chown_tree,perms.set_modes \
        [--seeds 15]

A task ships a mutant (`mutants/step-N-RULE.sh`: the reference solution with step N ignoring
one rule its instruction states) only where its data exercises that rule, so that ignoring
it misses the reward. A rule stated but not exercised is one a solver may ignore for free.

The first form reads the drafts of a default run's first `--count` items (planned and
generated, not validated: `unvalidated.drafts`); the second generates one skill path at seeds
0 .. `--seeds`-1. For each skill, apart at step 1 and at a later step, it prints how many
of its stated steps ship no mutant at all (a solver doing only the step's core earns its
part), most first; then, for each rule name the skill ships anywhere in the sample, in how
many of the skill's stated steps the rule ships, least first. A step is stated when the
task's `metadata.stated_steps` lists it: a step hidden in a goal-only instruction
(specification 3; not the last, no side effect) states no rule.

Rules are known only by their mutants' names, so a rule no step of the sample exercises does
not show at all, and a step states some rules only under some of its choices (an exclude
rule names its pattern; a revert by issue number has no rule on longer numbers unless the
history holds one). A low share is a lead to read in the primitive, not yet a defect.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter, defaultdict

from unvalidated import drafts

from taskloom.errors import NoDraft
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.protocols import Draft
from taskloom.skill_graph.model import load_graph

MUTANT = re.compile(r"mutants/step-(\d+)-([a-z0-9-]+)\.sh")


def tally(made: list[Draft]) -> tuple[Counter, Counter, Counter]:
    """Per (skill, where): stated steps, and those shipping no mutant; per (skill, where,
    rule): shipped mutants."""
    stated: Counter = Counter()
    bare: Counter = Counter()
    shipped: Counter = Counter()
    for draft in made:
        metadata = draft.task.config.metadata
        path = metadata["skills"]
        stated_steps = set(metadata["stated_steps"])
        rules = defaultdict(set)
        for mutant in draft.task.mutants:
            number, rule = MUTANT.fullmatch(mutant.path).groups()
            rules[int(number)].add(rule)
        for number, skill in enumerate(path, start=1):
            if number not in stated_steps:
                continue
            where = "step 1" if number == 1 else "later"
            stated[skill, where] += 1
            bare[skill, where] += not rules[number]
            for rule in rules[number]:
                shipped[skill, where, rule] += 1
    return stated, bare, shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300, help="items of a default run")
    parser.add_argument("--seed", type=int, default=5, help="the default run's seed")
    parser.add_argument("--path", help="a skill path instead, comma-separated skill ids")
    parser.add_argument("--seeds", type=int, default=15, help="seeds of --path")
    parser.add_argument("--show", type=int, default=25, help="least exercised rows to print")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.path:
        graph = load_graph()
        generator = ProceduralGenerator(graph)
        path = tuple(args.path.split(","))
        made, failed = [], 0
        for seed in range(args.seeds):
            try:
                made.append(generator.generate(blueprint_for(graph, path, seed=seed)))
            except NoDraft:
                failed += 1
            except (KeyError, ValueError) as exc:  # an unknown skill, or steps that do not chain
                parser.error(f"--path {args.path}: {exc}")
        what = f"{' -> '.join(path)}, seeds 0-{args.seeds - 1}"
    else:
        pairs, failed = drafts(args.count, args.seed)
        made = [draft for _, draft in pairs]
        what = f"{args.count} items of a default run (seed {args.seed})"
    stated, bare, shipped = tally(made)
    names = defaultdict(set)
    for skill, _, rule in shipped:
        names[skill].add(rule)
    rows = sorted(((shipped[skill, where, rule] / count, skill, where, rule, count)
                   for (skill, where), count in stated.items() for rule in names[skill]),
                  key=lambda row: (row[0], -row[4], row[1:4]))
    print(f"{len(made)} tasks of {what} generated in {time.perf_counter() - started:.0f} s "
          f"({failed} made none)")
    pairs_total = sum(count * len(names[skill]) for (skill, _), count in stated.items())
    pairs_shipped = sum(shipped.values())
    print(f"stated steps x known rules: {pairs_total}, exercised {pairs_shipped} "
          f"({100 * pairs_shipped / max(pairs_total, 1):.1f}%); rules never exercised by a "
          f"stated step of their skill: {sum(1 for row in rows if row[0] == 0)} of {len(rows)}")
    print(f"stated steps shipping no mutant: {sum(bare.values())} of {sum(stated.values())}")
    print(f"{'share':>6}  {'no mutant':>9}  skill (where)")
    for (skill, where), count in sorted(stated.items(), key=lambda item: (
            -bare[item[0]] / item[1], -item[1], item[0]))[:args.show]:
        if bare[skill, where]:
            print(f"{100 * bare[skill, where] / count:5.0f}%  {bare[skill, where]:>4}/{count:<4}  "
                  f"{skill} ({where})")
    print(f"{'share':>6}  {'shipped':>9}  skill (where) rule")
    for share, skill, where, rule, count in rows[:args.show]:
        print(f"{100 * share:5.0f}%  {shipped[skill, where, rule]:>4}/{count:<4}  "
              f"{skill} ({where}) {rule}")


if __name__ == "__main__":
    main()
