"""Peak memory of a batch run for a small and a large run: it must not grow with run size.

    .venv/bin/python benchmarks/pipeline_memory.py [--small 100] [--large 2000] [--workers 2]

Each run is a separate process running the whole pipeline (real generation and validation
in Docker); its peak resident set size is read from the kernel (ru_maxrss).
The ratio large/small should stay near 1: items stream through a bounded window and
everything else lives in the run store on disk (its size is printed too: run.duckdb plus
run.payloads).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def peak_rss_mb(count: int, workers: int, root: Path) -> tuple[float, float, float]:
    """(peak RSS MiB, seconds, store MiB) of one whole run in a fresh child process."""
    out = root / f"n{count}"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", str(count), "--workers",
                           str(workers), "--out", str(out)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"run of {count} tasks failed:\n{done.stderr[-2000:]}")
    peak_kib = float(done.stdout.strip().splitlines()[-1])
    store_mb = sum(os.path.getsize(out / name) for name in ("run.duckdb", "run.payloads")
                   if (out / name).exists()) / 2**20
    return peak_kib / 1024, seconds, store_mb


def child(count: int, workers: int, out: Path) -> None:
    """Run one batch in this process and print its peak RSS in KiB."""
    from taskloom.config import load_run_config
    from taskloom.pipeline.runner import Runner

    config = load_run_config(None, [f"count={count}", "seed=0", f"workers={workers}"])
    Runner(config, out).run()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.workers, args.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        small = peak_rss_mb(args.small, args.workers, Path(tmp))
        large = peak_rss_mb(args.large, args.workers, Path(tmp))
    for count, (rss, seconds, store) in ((args.small, small), (args.large, large)):
        print(f"{count:6d} tasks: peak RSS {rss:7.1f} MiB, {seconds:7.0f} s, "
              f"store {store:6.1f} MiB")
    print(f"ratio large/small peak RSS: {large[0] / small[0]:.2f}")


if __name__ == "__main__":
    main()
