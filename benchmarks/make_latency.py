"""Latency of `taskloom make`: request in words → verified task, offline.

    .venv/bin/python benchmarks/make_latency.py [--count 3] [--runtime docker] [--fresh 7]

Twenty varied requests run one after another in one process (the embedding model and the
sandbox runtime are loaded once, as a service or a notebook would); each time covers
understanding, planning, generating and validating the candidates. The first request's
extra start-up (model load) is printed apart. Prints every request's time, the median and
the p90, and the baseline of one plain validation of a task of the same kind measured in
the same run, as the floor `make` cannot beat.

With `--fresh N`, the first N requests instead run as a user runs them: one fresh
`taskloom make` process each (interpreter start, imports, model load, understanding,
candidates), beside the floor of a fresh `taskloom --help` measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REQUESTS = (
    "a task where the agent must rotate nginx logs and keep 5",
    "find the 3 busiest client IPs in the web access log",
    "count HTTP status codes in the access log",
    "extract the ERROR lines from the payment service log",
    "merge the service logs in time order",
    "sum the order amounts per region from the sales CSV",
    "deduplicate the rows of a research CSV export",
    "convert the JSON sensor readings to CSV with jq",
    "filter JSON records and keep only the failed ones",
    "load a CSV into SQLite and report totals per category",
    "delete stale rows from the inventory database",
    "find files larger than a threshold in the shared drive",
    "sort the media files into folders by extension",
    "create a compressed tar backup of the documents folder",
    "verify the backup files against their checksum manifest",
    "find which commit introduced a change in the repository",
    "revert the commit that broke the build",
    "make the scripts executable and the data files private",
    "create accounts for the new hires listed in a CSV",
    "change the port setting of a service in its INI config",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=3, help="candidates per request")
    parser.add_argument("--runtime", default="docker")
    parser.add_argument("--fresh", type=int, default=0,
                        help="time N fresh `taskloom make` processes instead")
    args = parser.parse_args()
    if args.fresh:
        fresh(args)
        return
    from taskloom.config import ValidationConfig
    from taskloom.embedding import load_embedder
    from taskloom.generators.backends import skill_graph
    from taskloom.pipeline.on_demand import make
    from taskloom.sandbox.runtime import open_runtime
    from taskloom.validators.engine import validate_task

    started = time.perf_counter()
    embedder = load_embedder()
    graph = skill_graph(())
    embedder.embed(["warm up"])
    startup = time.perf_counter() - started
    times = []
    with open_runtime(args.runtime) as runtime, tempfile.TemporaryDirectory() as tmp:
        for request in REQUESTS:
            began = time.perf_counter()
            result = make(request, graph=graph, embedder=embedder, runtime=runtime,
                          count=args.count, out=Path(tmp))
            times.append(time.perf_counter() - began)
            print(f"{times[-1]:6.2f} s  {result.accepted}/{result.candidates} ok  "
                  f"{result.request.skills[0].id:30s} {request}")
        began = time.perf_counter()
        validate_task(result.task, runtime, ValidationConfig())
        floor = time.perf_counter() - began
    ordered = sorted(times)
    p90 = ordered[max(0, round(0.9 * len(ordered)) - 1)]
    print(f"\nmodel load + first embedding: {startup:.2f} s (once per process)")
    print(f"median {statistics.median(times):.2f} s, p90 {p90:.2f} s over {len(times)} "
          f"requests ({args.count} candidates each)")
    print(f"baseline: validating one finished task alone takes {floor:.2f} s "
          f"(median/baseline = {statistics.median(times) / floor:.1f}x)")


def fresh(args: argparse.Namespace) -> None:
    """Wall time of fresh `taskloom make` processes, and of a bare CLI start."""
    cli = [sys.executable, "-m", "taskloom.cli"]
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, request in enumerate(REQUESTS[:args.fresh]):
            began = time.perf_counter()
            done = subprocess.run([*cli, "make", request, "--count", str(args.count),
                                   "--runtime", args.runtime, "--out", f"{tmp}/{index}"],
                                  capture_output=True, text=True)
            times.append(time.perf_counter() - began)
            print(f"{times[-1]:6.2f} s  exit {done.returncode}  {request}")
    began = time.perf_counter()
    subprocess.run([*cli, "--help"], capture_output=True, check=True)
    floor = time.perf_counter() - began
    print(f"\nfresh `taskloom make`: median {statistics.median(times):.2f} s over {len(times)} "
          f"requests ({args.count} candidates each, {args.runtime})")
    print(f"baseline: a fresh `taskloom --help` takes {floor:.2f} s")


if __name__ == "__main__":
    main()
