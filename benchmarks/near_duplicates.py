"""The near-duplicate filter on 10,000 tasks, beside the naive n x n similarity matrix.

    .venv/bin/python benchmarks/near_duplicates.py [--tasks 10000] [--threshold 0.97]
                                                   [--cache /tmp/nd-10000.npz]

1. Plans and generates `--tasks` procedural tasks (not validated; two processes) and
   embeds each one's skill path + instruction with the default model, once (`--cache`
   keeps texts and vectors for the next invocation).
2. Times the corpus filter alone: `CorpusFilter.decide` on every task in index order
   (exact fingerprints, then the linear-memory `NearDuplicateIndex`), with the peak of
   memory it allocates (tracemalloc, which sees numpy's buffers).
3. Times the baseline in the same process: the full n x n cosine matrix, then the same
   greedy keep-the-earliest pass over it; checks both make the same decisions.
4. Times reading the 10,000 embeddings back from a run store (what a resumed run does).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from unvalidated import drafts

from taskloom.config import DiversityConfig
from taskloom.embedding import (
    DEFAULT_MODEL,
    TEXT_VERSION,
    SentenceTransformerEmbedder,
    embedding_text,
)
from taskloom.pipeline import stages
from taskloom.pipeline.corpus_filter import CorpusFilter
from taskloom.pipeline.store import RunStore


def corpus(tasks: int, cache: Path | None) -> tuple[list, np.ndarray, float, float]:
    """Tasks and their vectors, from the cache or made now (seconds to generate, embed)."""
    if cache is not None and cache.exists():
        data = np.load(cache, allow_pickle=False)
        if int(data["asked"]) == tasks:
            rows = list(zip(data["items"].tolist(), data["names"].tolist(),
                            data["fingerprints"].tolist(), data["texts"].tolist(),
                            strict=True))[:tasks]
            print(f"read {len(rows)} tasks and vectors from {cache} (made "
                  f"{float(data['generate_s']):.0f} s + {float(data['embed_s']):.0f} s)")
            return rows, data["vectors"][:len(rows)], float(data["generate_s"]), \
                float(data["embed_s"])
    started = time.perf_counter()
    made, _ = drafts(tasks, 0)
    rows = [(index, draft.task.name, stages.draft_fingerprint(draft),
             embedding_text(draft.task)) for index, draft in made]
    generate_s = time.perf_counter() - started
    embedder = SentenceTransformerEmbedder(DEFAULT_MODEL, threads=os.cpu_count() or 1,
                                           batch_size=64)
    started = time.perf_counter()
    vectors = embedder.embed([row[3] for row in rows])
    embed_s = time.perf_counter() - started
    if cache is not None:
        np.savez_compressed(cache, items=np.array([r[0] for r in rows]),
                            names=np.array([r[1] for r in rows]),
                            fingerprints=np.array([r[2] for r in rows]),
                            texts=np.array([r[3] for r in rows]), vectors=vectors,
                            asked=tasks, generate_s=generate_s, embed_s=embed_s)
    return rows, vectors, generate_s, embed_s


def run_filter(rows: list, vectors: np.ndarray, threshold: float, store: RunStore):
    """The corpus filter over every task in item order: decisions, seconds, peak bytes."""
    config = DiversityConfig(enabled=True, threshold=threshold)
    tracemalloc.start()
    started = time.perf_counter()
    corpus_filter = CorpusFilter(config, store)
    decisions = [corpus_filter.decide(fingerprint, f"{name} (item {item})", vector)
                 for (item, name, fingerprint, _), vector in zip(rows, vectors, strict=True)]
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return [d is not None for d in decisions], seconds, peak, corpus_filter


def naive(vectors: np.ndarray, threshold: float):
    """Baseline: the n x n similarity matrix, then keep-the-earliest over its rows."""
    tracemalloc.start()
    started = time.perf_counter()
    similarities = vectors @ vectors.T
    kept = np.zeros(len(vectors), dtype=bool)
    dropped = []
    for j in range(len(vectors)):
        row = similarities[j, :j][kept[:j]]
        duplicate = bool(row.size) and float(row.max()) >= threshold
        kept[j] = not duplicate
        dropped.append(duplicate)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return dropped, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--threshold", type=float, default=DiversityConfig().threshold)
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    rows, vectors, generate_s, embed_s = corpus(args.tasks, args.cache)
    n = len(rows)
    print(f"{n} tasks of {args.tasks} items generated in {generate_s:.0f} s (plan + generate, "
          f"2 processes, not validated)")
    print(f"embedded once in {embed_s:.0f} s ({n / embed_s:.1f} texts/s), "
          f"{vectors.shape[1]} dimensions, {vectors.nbytes / 2**20:.1f} MiB of vectors")

    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "run.duckdb")
        ours, ours_s, ours_peak, corpus_filter = run_filter(rows, vectors, args.threshold,
                                                            store)
        theirs, naive_s, naive_peak = naive(vectors, args.threshold)
        with store.transaction():
            for (_, _, fingerprint, _), vector in zip(rows, vectors, strict=True):
                store.put_embedding(fingerprint, DEFAULT_MODEL, TEXT_VERSION,
                                    vector.tolist())
        started = time.perf_counter()
        stored = store.embeddings(DEFAULT_MODEL, TEXT_VERSION)
        lookup_s = time.perf_counter() - started
        assert len(stored) == len({row[2] for row in rows})
        store.close()

    dropped = sum(ours)
    print(f"\nthreshold {args.threshold}: kept {n - dropped}, dropped {dropped} "
          f"({dropped / n:.1%}) as duplicates of an earlier kept task")
    print(f"corpus filter (linear memory)  : {ours_s:7.2f} s, peak {ours_peak / 2**20:7.1f} "
          f"MiB allocated (index buffer {corpus_filter.index.nbytes / 2**20:.1f} MiB)")
    print(f"naive n x n matrix (baseline)  : {naive_s:7.2f} s, peak {naive_peak / 2**20:7.1f} "
          f"MiB allocated")
    print(f"ratio filter / naive           : {ours_s / naive_s:7.2f} x time, "
          f"{ours_peak / naive_peak:7.3f} x memory")
    print(f"same decisions                 : {'yes' if ours == theirs else 'NO'}")
    print(f"reading {n} embeddings back from a run store (resume): {lookup_s:.2f} s")
    print(f"filter + store reads per task  : {(ours_s + lookup_s) / n * 1000:.2f} ms "
          f"(the run embeds a new task once: ~{embed_s / n * 1000:.0f} ms batched here)")


if __name__ == "__main__":
    main()
