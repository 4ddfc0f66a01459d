"""The sandbox floor: the container work validation needs, with no taskloom logic.

Per task: one container from the base image with the task's environment files, tests and
solutions copied in, running in one shell command what validation runs (tests on the
untouched environment; solution + tests R times; each step-removed solution + tests),
then removed. The environment is copied, not built: this is the cheapest possible
sandbox work for the same checks, the baseline taskloom's throughput is compared with.
"""

from __future__ import annotations

import io
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from taskloom.harbor import read_task_folder
from taskloom.models import Task
from taskloom.sandbox.base_image import BASE_IMAGE
from taskloom.sandbox.policy import KEPT_CAPABILITIES
from taskloom.validators.mutations import solution_steps, without_step


def task_archive(task: Task) -> bytes:
    """A tar for `/`: the environment's files in place (its setup.sh and Dockerfile under
    /taskloom-env), /tests, /solution/solve.sh and, for a multi-step solution, /mutants."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        def add(name: str, data: bytes, mode: int) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            archive.addfile(info, io.BytesIO(data))

        for entry in task.environment:
            name = entry.path[len("files/"):] if entry.path.startswith("files/") else \
                f"taskloom-env/{entry.path}"
            add(name, entry.content, entry.mode)
        for entry in task.tests:
            add(f"tests/{entry.path}", entry.content, entry.mode)
        solve = task.file("solution", "solve.sh")
        script = solve.content.decode() if solve else ""
        add("solution/solve.sh", script.encode(), 0o755)
        for index in range(len(solution_steps(script)) if len(solution_steps(script)) > 1
                           else 0):
            add(f"mutants/{index}.sh", without_step(script, index).encode(), 0o755)
    return buffer.getvalue()


def floor_job(client, folder: Path, repeats: int) -> None:
    """Run one task's checks in one container, the simplest way possible."""
    task = read_task_folder(folder)
    solve = task.file("solution", "solve.sh")
    steps = len(solution_steps(solve.content.decode())) if solve else 0
    script = ["bash /taskloom-env/setup.sh 2>/dev/null || true",
              "bash /tests/test.sh >/dev/null 2>&1; cat /logs/verifier/reward.txt"]
    script += ["bash /solution/solve.sh; bash /tests/test.sh >/dev/null 2>&1; "
               "cat /logs/verifier/reward.txt"] * repeats
    script += [f"bash /mutants/{k}.sh; bash /tests/test.sh >/dev/null 2>&1; "
               "cat /logs/verifier/reward.txt" for k in range(steps if steps > 1 else 0)]
    host = client.api.create_host_config(
        network_mode="none", mem_limit="1024m", memswap_limit="1024m", nano_cpus=10**9,
        pids_limit=512, cap_drop=["ALL"], cap_add=list(KEPT_CAPABILITIES),
        security_opt=["no-new-privileges"])
    container = client.api.create_container(BASE_IMAGE, ["bash", "-c", "\n".join(script)],
                                            working_dir="/", host_config=host,
                                            network_disabled=True)
    try:
        client.api.put_archive(container["Id"], "/", task_archive(task))
        client.api.start(container["Id"])
        client.api.wait(container["Id"], timeout=600)
        client.api.logs(container["Id"])
    finally:
        client.api.remove_container(container["Id"], force=True)


def floor_rate(client, folders: list[Path], *, workers: int, repeats: int) -> float:
    """Tasks per minute of the floor over `folders` with `workers` threads."""
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda f: floor_job(client, f, repeats), folders))
    return len(folders) / (time.perf_counter() - started) * 60
