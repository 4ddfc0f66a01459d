"""Procedural tasks of a default run, planned and generated without validation.

What the breadth, variety and near-duplicate benchmarks read: `drafts(count, seed)` plans
items 0..count-1 of a default configuration with that seed (no coverage snapshot, so
unsteered) in two processes and returns each item's draft, in item order, with the number
of plans that made none (`NoDraft`).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from functools import partial

from taskloom.config import load_run_config
from taskloom.errors import NoDraft
from taskloom.generators.backends import backend_for
from taskloom.generators.protocols import Draft


def _made(seed: int, indices: list[int]) -> tuple[list[tuple[int, Draft]], int]:
    backend = backend_for(load_run_config(None, [f"seed={seed}", "diversity.steering=false"]))
    made, failed = [], 0
    for index in indices:
        try:
            made.append((index, backend.generator.generate(backend.planner.plan(index))))
        except NoDraft:
            failed += 1
    return made, failed


def drafts(count: int, seed: int) -> tuple[list[tuple[int, Draft]], int]:
    """(item, draft) of every item of `count` that generates, and how many did not."""
    made, failed = [], 0
    with ProcessPoolExecutor(max_workers=2) as pool:
        for part, part_failed in pool.map(partial(_made, seed),
                                          [list(range(i, count, 2)) for i in range(2)]):
            made += part
            failed += part_failed
    return sorted(made, key=lambda pair: pair[0]), failed
