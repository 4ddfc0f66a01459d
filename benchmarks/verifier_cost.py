"""What one run of a task's test.sh costs, beside the floors of any verifier, in one run.

    .venv/bin/python benchmarks/verifier_cost.py [--count 6] [--seed 7] [--runs 15]
    .venv/bin/python benchmarks/verifier_cost.py --tasks RUN/tasks [--count 6]

Every phase of validation (nop, oracle, each mutant, each probe, each alternative) ends in
one run of the task's test.sh: its guard, then the check runner on test_outputs.py. Per
task, one container of the base image holds the task's files as benchmarks/floor.py puts
them there, and one shell in it times, `--runs` times each:
- `bash -c true`: a fork and an exec, the floor of any step;
- `python3 -I -S -B -c pass`: the interpreter the check runner uses, started bare;
- test.sh on the untouched environment with TASKLOOM_FIRST_FAILURE=1, as a nop, mutant or
  probe phase runs it (it stops at the first failing check);
- test.sh after the reference solution, every check run, as an oracle phase runs it.
Medians in ms per task, and test.sh's ratio to the bare interpreter. Tasks are generated
with the procedural generator (`--seed`, any difficulty), or read from `--tasks`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import task_archive

from taskloom.generators.procedural.backend import (
    PlanSettings,
    ProceduralGenerator,
    ProceduralPlanner,
)
from taskloom.harbor import read_task_folder, write_task_folder
from taskloom.sandbox.base_image import BASE_IMAGE
from taskloom.sandbox.docker_runtime import docker_client
from taskloom.sandbox.policy import KEPT_CAPABILITIES
from taskloom.skill_graph.model import load_graph

KINDS = ("bash -c true", "python3 bare", "test.sh, nop", "test.sh, oracle")
TIMER = r"""
bash /taskloom-env/setup.sh >/dev/null 2>&1 || true
timed() {  # LABEL COMMAND...: RUNS lines "LABEL START END"
  local label=$1; shift
  for _ in $(seq "$RUNS"); do
    local start=$EPOCHREALTIME
    "$@" >/dev/null 2>&1
    echo "$label $start $EPOCHREALTIME"
  done
}
nop() { TASKLOOM_FIRST_FAILURE=1 bash /tests/test.sh; }
timed 0 /usr/bin/bash -c true
timed 1 /usr/bin/python3 -I -S -B -c pass
timed 2 nop
echo "reward-nop $(cat /logs/verifier/reward.txt 2>/dev/null)"
bash /solution/solve.sh >/dev/null 2>&1
timed 3 bash /tests/test.sh
echo "reward-oracle $(cat /logs/verifier/reward.txt 2>/dev/null)"
"""


def generated(root: Path, count: int, seed: int) -> list[Path]:
    """`count` procedural tasks (the planner's own mix of difficulty) as Harbor folders."""
    graph = load_graph()
    planner, generator = ProceduralPlanner(graph, PlanSettings(seed=seed)), \
        ProceduralGenerator(graph)
    folders = []
    for index in range(count):
        draft = generator.generate(planner.plan(index))
        folders.append(write_task_folder(draft.task, root / draft.task.name))
    return folders


def measure(client, folder: Path, runs: int) -> dict[str, float]:
    """Median ms of each kind for one task, in one container."""
    task = read_task_folder(folder)
    host = client.api.create_host_config(
        network_mode="none", mem_limit="1024m", memswap_limit="1024m", nano_cpus=10**9,
        pids_limit=512, cap_drop=["ALL"], cap_add=list(KEPT_CAPABILITIES),
        security_opt=["no-new-privileges"])
    container = client.api.create_container(BASE_IMAGE, ["bash", "-c", TIMER],
                                            environment={"RUNS": str(runs)}, working_dir="/",
                                            host_config=host, network_disabled=True)
    try:
        client.api.put_archive(container["Id"], "/", task_archive(task))
        client.api.start(container["Id"])
        client.api.wait(container["Id"], timeout=900)
        output = client.api.logs(container["Id"], stderr=False).decode()
    finally:
        client.api.remove_container(container["Id"], force=True)
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    rewards = {}
    for line in output.splitlines():
        label, *rest = line.split()
        if label.startswith("reward-"):
            rewards[label] = rest[0] if rest else "none"
        elif label.isdigit() and len(rest) == 2:
            times[KINDS[int(label)]].append((float(rest[1]) - float(rest[0])) * 1000)
    if rewards != {"reward-nop": "0", "reward-oracle": "1"}:
        raise SystemExit(f"{folder.name}: test.sh gave {rewards}, not nop 0 and oracle 1")
    return {kind: statistics.median(values) for kind, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, help="a folder of Harbor task folders")
    parser.add_argument("--count", type=int, default=6, help="tasks to time")
    parser.add_argument("--seed", type=int, default=7, help="planner seed (generated tasks)")
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each kind")
    args = parser.parse_args()
    client = docker_client()
    with tempfile.TemporaryDirectory() as scratch:
        folders = (sorted(p for p in args.tasks.iterdir() if (p / "task.toml").is_file())
                   [:args.count] if args.tasks else generated(Path(scratch), args.count,
                                                              args.seed))
        rows = [(folder.name, measure(client, folder, args.runs)) for folder in folders]
    print(f"{'task':<58}" + "".join(f"{kind:>17}" for kind in KINDS) + f"{'oracle/python':>15}")
    for name, row in rows:
        print(f"{name[:57]:<58}" + "".join(f"{row[kind]:17.1f}" for kind in KINDS)
              + f"{row['test.sh, oracle'] / row['python3 bare']:14.1f}x")
    means = {kind: statistics.mean(row[kind] for _, row in rows) for kind in KINDS}
    print(f"{'mean (ms)':<58}" + "".join(f"{means[kind]:17.1f}" for kind in KINDS)
          + f"{means['test.sh, oracle'] / means['python3 bare']:14.1f}x")


if __name__ == "__main__":
    main()
