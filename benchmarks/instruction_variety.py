"""How alike generated instructions are, before any near-duplicate is dropped.

    .venv/bin/python benchmarks/instruction_variety.py [--count 300] [--seed 5]
                                                       [--threshold 0.95] [--show 5]

Plans and generates `--count` procedural tasks of the default configuration (not validated,
two processes, coverage steering off: it needs the run's exported tasks), embeds each
instruction alone (not the skill path) with the default model, all-MiniLM-L6-v2, and
prints the share of tasks whose instruction has another at cosine >= `--threshold`, the
mean nearest-neighbour cosine, and the skills whose tasks are most often such
neighbours. Issue 21's target is at most 2% at 0.95 for a 300-task default run.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

import numpy as np
from unvalidated import drafts

from taskloom.embedding import DEFAULT_MODEL, SentenceTransformerEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--threshold", type=float, default=0.95)
    parser.add_argument("--show", type=int, default=5, help="closest pairs to print")
    args = parser.parse_args()
    started = time.perf_counter()
    made, _ = drafts(args.count, args.seed)
    rows = [(index, " -> ".join(draft.task.config.metadata.get("skills") or ()),
             draft.task.instruction.strip()) for index, draft in made]
    generated = time.perf_counter() - started
    embedder = SentenceTransformerEmbedder(DEFAULT_MODEL, threads=os.cpu_count() or 1,
                                           batch_size=64)
    vectors = embedder.embed([text for _, _, text in rows])
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -1.0)
    nearest = similarity.max(axis=1)
    close = nearest >= args.threshold
    print(f"{len(rows)} tasks of {args.count} items (seed {args.seed}) generated in "
          f"{generated:.0f} s, instructions embedded with {DEFAULT_MODEL}")
    print(f"tasks with a neighbour at cosine >= {args.threshold}: {int(close.sum())} = "
          f"{100 * close.mean():.1f}%   mean nearest cosine: {nearest.mean():.3f}")
    skills = Counter(rows[i][1].split(" -> ")[-1] for i in np.flatnonzero(close))
    if skills:
        print("last skills of those tasks: " + ", ".join(f"{s} {n}" for s, n in
                                                       skills.most_common(12)))
    pairs = sorted(((float(similarity[i, j]), i, j) for i in range(len(rows))
                    for j in range(i + 1, len(rows)) if similarity[i, j] >= args.threshold),
                   reverse=True)
    for cosine, i, j in pairs[:args.show]:
        print(f"\n{cosine:.3f}  item {rows[i][0]} ({rows[i][1]})  ~  item {rows[j][0]} "
              f"({rows[j][1]})\n  A: {rows[i][2][:400]!r}\n  B: {rows[j][2][:400]!r}")


if __name__ == "__main__":
    main()
