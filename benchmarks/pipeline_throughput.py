"""Batch-run throughput: verified tasks/min of `taskloom generate` beside the sandbox floor.

    .venv/bin/python benchmarks/pipeline_throughput.py [--count 1000] [--workers 2]
                                                       [--runtimes docker,bwrap] [--seed 0]
                                                       [--sample 40] [--floor-tasks 200]

Runs the whole pipeline (plan, generate, validate with every default check, refine, filter,
export) for `count` verified procedural tasks on each runtime, then the sandbox floor
(benchmarks/floor.py: nop, oracle and step-removed runs in one Docker container per task,
no taskloom logic) over the first exported tasks, all in the same process. Prints each rate,
the run's peak RSS (and over its first tenth of time, for the growth) and
the machine's CPU per verified task (every process, dockerd and the sandboxes included,
from /proc/stat), then where those core-seconds go:

- by stage: plan and generate (the run's items planned, steered as the run steered them,
  and generated again, alone, in this process), validate (a sample of the exported tasks
  validated again, alone: the machine's CPU meanwhile), filter (embedding the exported
  tasks and deciding each against those kept; the model is loaded once per run), export
  (writing their folders again);
- by phase kind (nop, oracle, alternative, mutation, probe): the CPU of each phase's
  commands inside the sandbox, as its driver counts them (the processes' user and system
  time), over the same sample, and the part of it their runs of test.sh took; the rest of
  validation is sandbox setup, the in-place resets and the host's side.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import floor_rate
from runtime_compare import busy_cpu_seconds

from taskloom.config import load_run_config
from taskloom.embedding import load_embedder
from taskloom.harbor import read_task_folder, write_task_folder
from taskloom.pipeline import stages
from taskloom.pipeline.corpus_filter import CorpusFilter
from taskloom.pipeline.runner import Runner, StoredCoverage
from taskloom.pipeline.store import RunStore
from taskloom.sandbox.docker_runtime import docker_client
from taskloom.sandbox.trial import TrialResult
from taskloom.validators.engine import validate_task
from taskloom.validators.phases import commands

PHASE_KINDS = {"nop": "nop", "oracle": "oracle", "alternative": "alternative",
               "mutant": "mutation", "tamper": "probe", "answer": "answer key"}


def planning_cpu(config, run: Path, items: int) -> tuple[float, float]:
    """CPU seconds of planning and of generating the run's `items` again, one at a time.

    Steered as the run steered: item i sees the exported tasks of items < i - lag.
    """
    coverage, planned = StoredCoverage(config.diversity), []
    with RunStore(run / "run.duckdb", read_only=True) as store:
        started = time.process_time()
        for item in range(items):
            planned.append(stages.plan(config, item,
                                       coverage=coverage.for_item(store, item)).value)
    generating = time.process_time()
    for blueprint in planned:
        if blueprint is not None:
            stages.generate(config, blueprint)
    return generating - started, time.process_time() - generating


class Recording:
    """A runtime that keeps every trial it runs."""

    def __init__(self, runtime) -> None:
        self.runtime, self.trials = runtime, []

    def run(self, plan) -> TrialResult:
        result = self.runtime.run(plan)
        self.trials.append(result)
        return result


def validation_cpu(config, folders: list[Path]) -> tuple[float, Counter, Counter]:
    """Machine CPU of validating `folders` alone, and the sandbox commands' CPU by phase kind.

    Also the part of each kind's that its runs of test.sh took (the checks, the verifier's
    sweep and guard).
    """
    tasks = [read_task_folder(folder) for folder in folders]
    runtime = stages.process_runtime(config.runtime)
    recording = Recording(runtime)
    validate_task(tasks[0], runtime, config.validation)  # warm: the rootfs, the image cache
    cpu = busy_cpu_seconds()
    for task in tasks:
        validate_task(task, recording, config.validation)
    cpu = busy_cpu_seconds() - cpu
    kinds: Counter = Counter()
    tests: Counter = Counter()
    for trial in recording.trials:
        for phase in trial.phases:
            kind = PHASE_KINDS.get(phase.name.split("-")[0], phase.name)
            for _, script, outcome in commands(phase):
                kinds[kind] += outcome.cpu_seconds
                tests[kind] += outcome.cpu_seconds if script == "test.sh" else 0.0
    return cpu, kinds, tests


def filter_cpu(config, tasks: list, tmp: Path) -> float:
    """CPU seconds of the corpus filter: embedding each task and deciding it against the kept.

    The model is loaded once per run and not counted.
    """
    embedder = load_embedder(config.diversity.model, download=config.diversity.download)
    with RunStore(tmp / "filter.duckdb") as store:
        corpus = CorpusFilter(config.diversity, store, embedder)
        started = time.process_time()
        for task in tasks:  # as the run does: one at a time, each stored
            corpus.decide(task.name, task.name, corpus.vector(task.name, task))
        return time.process_time() - started


def export_cpu(tasks: list, tmp: Path) -> float:
    """CPU seconds of writing the tasks' Harbor folders (the store's rows not counted)."""
    started = time.process_time()
    for task in tasks:
        write_task_folder(task, tmp / "export" / task.name)
    return time.process_time() - started


class PeakRss:
    """This process's resident set size while the block runs, sampled twice a second.

    ru_maxrss would not do: it is the peak of the whole process, earlier runs included.
    """

    def __enter__(self) -> PeakRss:
        self.started, self.samples = time.monotonic(), [(0.0, rss_mib())]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self.done.wait(0.5):
            self.samples.append((time.monotonic() - self.started, rss_mib()))

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()
        self.samples.append((time.monotonic() - self.started, rss_mib()))

    def peak(self, within: float = 1.0) -> float:
        """The peak MiB over the first `within` of the block's time."""
        end = self.samples[-1][0] * within
        return max(mib for at, mib in self.samples if at <= end)


def rss_mib() -> float:
    """This process's resident set size now, in MiB (/proc/self/status)."""
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmRSS:"))
    return int(kib) / 1024


def shown(costs: dict[str, float], per: int) -> str:
    return ", ".join(f"{name} {seconds / per:.3f}" for name, seconds in costs.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runtimes", default="docker,bwrap")
    parser.add_argument("--sample", type=int, default=40,
                        help="exported tasks validated again for the per-phase split")
    parser.add_argument("--floor-tasks", type=int, default=200,
                        help="exported tasks the sandbox floor runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for runtime in args.runtimes.split(","):
            config = load_run_config(None, [f"count={args.count}", f"seed={args.seed}",
                                            f"workers={args.workers}", f"runtime={runtime}"])
            run = Path(tmp) / runtime
            cpu, started = busy_cpu_seconds(), time.perf_counter()
            with PeakRss() as peak:
                summary = Runner(config, run).run()
            elapsed = time.perf_counter() - started
            cpu = busy_cpu_seconds() - cpu
            per_task = max(summary.exported, 1)
            print(f"{runtime:7s} taskloom generate : {summary.exported / elapsed * 60:6.1f} "
                  f"verified tasks/min ({summary.exported} of {summary.items} items in "
                  f"{elapsed:.0f} s), {cpu / per_task:.2f} core-s per verified task, "
                  f"peak RSS {peak.peak():.0f} MiB ({peak.peak(0.1):.0f} in its first tenth)",
                  flush=True)
            folders = sorted(p for p in (run / "tasks").iterdir() if p.is_dir())
            sample = folders[:args.sample]
            plan, generate = planning_cpu(config, run, summary.items)
            validate, kinds, tests = validation_cpu(config, sample)
            tasks = [read_task_folder(folder) for folder in folders]
            corpus = filter_cpu(config, tasks, Path(tmp) / f"{runtime}-filter")
            export = export_cpu(tasks, Path(tmp) / f"{runtime}-export")
            print("        core-s per verified task by stage: " + shown(
                {"plan": plan, "generate": generate}, per_task) + ", " + shown(
                {"validate": validate}, len(sample)) + ", " + shown(
                {"filter": corpus, "export": export}, len(folders)), flush=True)
            inside = sum(kinds.values())
            print("        core-s per task by phase kind (sandbox commands): " + shown(
                dict(kinds.most_common()), len(sample)) + "; setup, resets and the host "
                f"{(validate - inside) / len(sample):.3f}", flush=True)
            print("        of which their runs of test.sh: " + shown(
                {kind: tests[kind] for kind, _ in kinds.most_common()}, len(sample)), flush=True)
        floor = floor_rate(docker_client(), folders[:args.floor_tasks], workers=args.workers,
                           repeats=config.validation.repeats)
    print(f"sandbox floor (docker)   : {floor:6.1f} tasks/min")


if __name__ == "__main__":
    main()
