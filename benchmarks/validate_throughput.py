"""Validation throughput against the sandbox floor, measured in the same run.

    .venv/bin/python benchmarks/validate_throughput.py [--tasks 60] [--workers 2] [--rounds 2]

The floor runs the same container work with no taskloom logic: per task one container from
the base image, with the task's files, tests and solution copied in, running in one shell
command what validation runs (tests on the untouched environment, then solution + tests R
times), then removed. taskloom runs the full protocol (structure, emulated build, nop,
oracle x R from fresh state, leakage scan) on the same tasks. Rounds alternate the two to
spread machine noise; the ratio is taskloom tasks/min over floor tasks/min.
"""

from __future__ import annotations

import argparse
import io
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from taskfactory import make_task  # noqa: E402

from taskloom.config import ValidationConfig  # noqa: E402
from taskloom.outputs.harbor import read_task_folder  # noqa: E402
from taskloom.sandbox.base_image import BASE_IMAGE  # noqa: E402
from taskloom.sandbox.docker_runtime import KEPT_CAPABILITIES, DockerRuntime, docker_client  # noqa: E402
from taskloom.validators.engine import validate_all, validate_folder  # noqa: E402

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def make_tasks(root: Path, count: int) -> list[Path]:
    """Small, varied pytest-checked tasks: sort, uppercase or count a data file."""
    folders = []
    for i in range(count):
        words = [WORDS[(i * 3 + k) % len(WORDS)] + str(k) for k in range(20 + i % 7)]
        data = "\n".join(words) + "\n"
        kind = i % 3
        if kind == 0:
            expected, solve = "\n".join(sorted(words)) + "\n", "sort /app/data.txt > /app/out.txt"
        elif kind == 1:
            expected = data.upper()
            solve = "tr a-z A-Z < /app/data.txt > /app/out.txt"
        else:
            expected, solve = f"{len(words)}\n", "wc -l < /app/data.txt > /app/out.txt"
        test = ("from pathlib import Path\n\n\ndef test_out():\n"
                f"    assert Path('/app/out.txt').read_text() == {expected!r}\n")
        folders.append(make_task(root, f"task-{i:04d}", environment={"data.txt": data},
                                 solve=f"#!/bin/bash\n{solve}\n", test_py=test))
    return folders


def floor_job(client, folder: Path, repeats: int) -> None:
    task = read_task_folder(folder)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for section, prefix in (("environment", "app"), ("tests", "tests"),
                                ("solution", "solution")):
            for entry in getattr(task, section):
                info = tarfile.TarInfo(f"{prefix}/{entry.path}")
                info.size, info.mode = len(entry.content), entry.mode
                archive.addfile(info, io.BytesIO(entry.content))
    script = ("bash /tests/test.sh; cat /logs/verifier/reward.txt; "
              + "bash /solution/solve.sh; bash /tests/test.sh; cat /logs/verifier/reward.txt; "
              * repeats)
    host = client.api.create_host_config(
        network_mode="none", mem_limit="512m", memswap_limit="512m", nano_cpus=10**9,
        pids_limit=512, cap_drop=["ALL"], cap_add=list(KEPT_CAPABILITIES),
        security_opt=["no-new-privileges"])
    container = client.api.create_container(BASE_IMAGE, ["bash", "-c", script],
                                            working_dir="/app", host_config=host,
                                            network_disabled=True)
    try:
        client.api.put_archive(container["Id"], "/", buffer.getvalue())
        client.api.start(container["Id"])
        client.api.wait(container["Id"], timeout=300)
        client.api.logs(container["Id"])
    finally:
        client.api.remove_container(container["Id"], force=True)


def run_floor(client, folders: list[Path], workers: int, repeats: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda f: floor_job(client, f, repeats), folders))
    return len(folders) / (time.perf_counter() - started) * 60


def run_taskloom(client, folders: list[Path], workers: int, repeats: int) -> float:
    config = ValidationConfig(repeats=repeats)
    runtime = DockerRuntime(client)
    started = time.perf_counter()
    jobs = (lambda f=f: validate_folder(f, runtime, config) for f in folders)
    reports = list(validate_all(jobs, runtime, workers=workers))
    rate = len(folders) / (time.perf_counter() - started) * 60
    rejected = [r for r in reports if not r.accepted]
    if rejected:
        raise SystemExit(f"{len(rejected)} benchmark tasks were rejected: {rejected[0]}")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    client = docker_client()
    with tempfile.TemporaryDirectory() as tmp:
        folders = make_tasks(Path(tmp), args.tasks)
        run_floor(client, folders[:4], args.workers, args.repeats)  # warm caches
        floors, ours = [], []
        for round_index in range(args.rounds):
            floors.append(run_floor(client, folders, args.workers, args.repeats))
            ours.append(run_taskloom(client, folders, args.workers, args.repeats))
            print(f"round {round_index + 1}: floor {floors[-1]:6.1f} tasks/min   "
                  f"taskloom {ours[-1]:6.1f} tasks/min")
    floor, taskloom = sum(floors) / len(floors), sum(ours) / len(ours)
    print(f"\n{args.tasks} tasks, {args.workers} workers, R={args.repeats}")
    print(f"sandbox floor  : {floor:6.1f} tasks/min")
    print(f"taskloom       : {taskloom:6.1f} tasks/min")
    print(f"ratio          : {taskloom / floor:6.2f} of the floor")


if __name__ == "__main__":
    main()
