"""Encoding one request: the numpy all-MiniLM-L6-v2 against sentence-transformers (torch).

    .venv/bin/python benchmarks/request_encoder.py [--runs 3] [--texts 600]

1. Start-up, as `taskloom make` pays it: a fresh Python process loads the encoder and embeds
   one request; wall time seen by the parent, `--runs` runs of each (alternating), median.
2. Throughput in this process: both encoders (defaults: batch 32, one thread) embed the same
   `--texts` short texts, three alternating rounds, median texts/s; and how far their
   vectors differ.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import time

REQUEST = "a task where the agent must rotate nginx logs and keep 5"
LOADERS = {
    "numpy (taskloom.minilm)": "from taskloom.minilm import load_fast_embedder as load",
    "sentence-transformers": "from taskloom.embedding import load_embedder as load",
}
VERBS = ("sort", "count", "merge", "filter", "compress", "rotate", "back up", "rename",
         "deduplicate", "validate", "convert", "summarize")
THINGS = ("the nginx logs", "a sales CSV", "JSON sensor readings", "the git history",
          "user accounts", "an INI config", "media files", "a SQLite table",
          "checksum manifests", "cron jobs")
PLACES = ("in /var/log", "in the home folder", "on the shared drive", "per region",
          "by date")


def fresh_process_seconds(loader: str) -> float:
    """Wall time of a new interpreter that loads the encoder and embeds REQUEST once."""
    script = f"{loader}\nload().embed([{REQUEST!r}])"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", script], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per encoder")
    parser.add_argument("--texts", type=int, default=600, help="texts for the throughput")
    args = parser.parse_args()

    times: dict[str, list[float]] = {name: [] for name in LOADERS}
    for _ in range(args.runs):
        for name, loader in LOADERS.items():
            times[name].append(fresh_process_seconds(loader))
    print(f"fresh process: load + embed one request (median of {args.runs} runs)")
    medians = {name: statistics.median(runs) for name, runs in times.items()}
    for name, runs in times.items():
        print(f"  {name:26} {medians[name]:6.2f} s   runs: "
              + " ".join(f"{t:.2f}" for t in runs))
    numpy_name, torch_name = LOADERS
    print(f"  ratio                      {medians[torch_name] / medians[numpy_name]:6.1f}x "
          "(sentence-transformers / numpy)")

    import numpy as np

    from taskloom.embedding import SentenceTransformerEmbedder
    from taskloom.minilm import NumpyMiniLM

    texts = [f"{verb} {thing} {place}" for verb, thing, place
             in itertools.product(VERBS, THINGS, PLACES)][:args.texts]
    encoders = {numpy_name: NumpyMiniLM(), torch_name: SentenceTransformerEmbedder()}
    rates: dict[str, list[float]] = {name: [] for name in encoders}
    vectors = {}
    for encoder in encoders.values():
        encoder.embed(texts[:32])  # warm-up
    for _ in range(3):
        for name, encoder in encoders.items():
            started = time.perf_counter()
            vectors[name] = encoder.embed(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
    print(f"throughput: {len(texts)} short texts, batch 32, one thread (median of 3 rounds)")
    for name, runs in rates.items():
        print(f"  {name:26} {statistics.median(runs):6.0f} texts/s   rounds: "
              + " ".join(f"{r:.0f}" for r in runs))
    ratio = statistics.median(rates[numpy_name]) / statistics.median(rates[torch_name])
    print(f"  ratio                      {ratio:6.2f}x (numpy / sentence-transformers)")
    difference = np.abs(vectors[numpy_name] - vectors[torch_name]).max()
    print(f"  max |numpy - torch| over all components: {difference:.1e}")


if __name__ == "__main__":
    main()
