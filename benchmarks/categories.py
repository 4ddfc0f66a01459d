"""Breadth of generated tasks over Terminal-Bench 2.0's categories.

    .venv/bin/python benchmarks/categories.py [--count 1000] [--seed 5] [--run RUN_DIR]

Plans and generates `--count` procedural tasks (not validated; two processes; `plan(index)`
without a coverage snapshot, so unsteered) or, with `--run`, reads the exported tasks of a
run directory written by `taskloom generate`. Each task goes to ONE Terminal-Bench 2.0
(TB2) category: the kind of work of its LAST skill (`task.toml`'s `metadata.skills[-1]`, the
step whose output the task asks for). The skill graph names each skill category's work with
TB2's names, and why (`[[category]]` entries of taskloom/skill_graph/data/default.toml, a
skill's own `work` where it differs): that is the documented mapping, and the one the
planner balances a run over. Prints, per TB2
category: TB2's own task count and share, the generated tasks and their share, the distinct
skills seen as a task's last step / the graph's skills mapped to the category, the distinct
skills seen at any step / the same; then the plans that made no draft (`NoDraft`), and the
target "at least 8 categories with >= 5% of tasks each, none over 30%" as PASS or FAIL with
the numbers. Exits 0 either way (a measurement); exits 1 before measuring when a skill's
work is no TB2 category.

TB2's categories are the `[metadata] category` of its 89 tasks' `task.toml` (the official
repository harbor-framework/terminal-bench-2, formerly laude-institute/terminal-bench-2, is
not in the index these were read from; read from two copies of its task files):
- zxss702/terminal-bench-2.1 @ dd8b0bf, `tasks/dataset.toml` (the 89 task names) and
  `tasks/<task>/task.toml` for 68 of them (TB 2.1: per harbor-framework/terminal-bench-website
  `content/blog/terminal-bench-2-1.mdx`, it fixes the environment or the instruction of 28
  of TB 2.0's 89 tasks, same names);
- frontier-harness-eval/eval @ d4c6ddb, `tasks/<task>/task.toml` for the other 21 (TB 2.0's
  images, `alexgshaw/<task>:20251031`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from unvalidated import drafts

from taskloom.config import load_run_config
from taskloom.errors import StoreError
from taskloom.generators.backends import skill_graph
from taskloom.pipeline.store import RunDirectory
from taskloom.skill_graph.model import SkillGraph

# TB2's 89 tasks by `[metadata] category` (sources in the module docstring).
TB2_TASKS: dict[str, tuple[str, ...]] = {
    "software-engineering": (
        "build-pmars", "build-pov-ray", "cancel-async-tasks", "circuit-fibsqrt",
        "cobol-modernization", "code-from-image", "fix-git", "fix-ocaml-gc",
        "git-leak-recovery", "gpt2-codegolf", "headless-terminal", "kv-store-grpc",
        "make-doom-for-mips", "make-mips-interpreter", "path-tracing", "path-tracing-reverse",
        "polyglot-c-py", "polyglot-rust-c", "prove-plus-comm", "pypi-server", "regex-chess",
        "schemelike-metacircular-eval", "torch-pipeline-parallelism",
        "torch-tensor-parallelism", "winning-avg-corewars", "write-compressor"),
    "system-administration": (
        "compile-compcert", "configure-git-webserver", "git-multibranch",
        "install-windows-3.11", "mailman", "nginx-request-logging", "qemu-alpine-ssh",
        "qemu-startup", "sqlite-with-gcov"),
    "security": (
        "break-filter-js-from-html", "crack-7z-hash", "filter-js-from-html",
        "fix-code-vulnerability", "openssl-selfsigned-cert", "password-recovery",
        "sanitize-git-repo", "vulnerable-secret"),
    "scientific-computing": (
        "adaptive-rejection-sampler", "bn-fit-modify", "dna-assembly", "dna-insert",
        "modernize-scientific-stack", "protein-assembly", "raman-fitting", "tune-mjcf"),
    "data-science": (
        "hf-model-inference", "mcmc-sampling-stan", "mteb-leaderboard", "mteb-retrieve",
        "query-optimize", "reshard-c4-data", "rstan-to-pystan", "sam-cell-seg"),
    "file-operations": (
        "db-wal-recovery", "extract-elf", "extract-moves-from-video", "gcode-to-text",
        "large-scale-text-editing"),
    "debugging": (
        "build-cython-ext", "custom-memory-heap-crash", "merge-diff-arc-agi-task",
        "overfull-hbox", "sqlite-db-truncate"),
    "data-processing": (
        "financial-document-processor", "log-summary-date-ranges", "multi-source-data-merger",
        "regex-log"),
    "mathematics": (
        "feal-differential-cryptanalysis", "feal-linear-cryptanalysis", "largest-eigenval",
        "model-extraction-relu-logits"),
    "model-training": (
        "count-dataset-tokens", "pytorch-model-cli", "pytorch-model-recovery", "train-fasttext"),
    "machine-learning": (
        "caffe-cifar-10", "distribution-search", "llm-inference-batching-scheduler"),
    "data-querying": ("sparql-university",),
    "games": ("chess-best-move",),
    "optimization": ("portfolio-optimization",),
    "personal-assistant": ("constraints-scheduling",),
    "video-processing": ("video-processing",),
}

TARGET_CATEGORIES = 8
TARGET_MIN_SHARE = 0.05
TARGET_MAX_SHARE = 0.30


def mapping_problems(graph: SkillGraph) -> list[str]:
    """Every kind of work of `graph` that is no TB2 category (empty: the mapping is complete)."""
    problems = []
    for skill_id in sorted(graph.skills):
        work = graph.work_of(skill_id)
        if work not in TB2_TASKS:
            skill = graph.skills[skill_id]
            problems.append(f"skill {skill_id!r} (category {skill.category!r}) is work {work!r}, "
                            f"not a TB2 category (one of {', '.join(sorted(TB2_TASKS))}): "
                            "name one as the category's `work` in its [[category]] entry of "
                            "the skill graph, or as the skill's own `work`")
    return problems


def generated(count: int, seed: int) -> tuple[list[tuple[str, ...]], int]:
    """Skill paths of `count` planned items (two processes), and the NoDraft count."""
    made, failed = drafts(count, seed)
    return [tuple(draft.task.config.metadata["skills"]) for _, draft in made], failed


def from_run(run: Path) -> tuple[list[tuple[str, ...]], SkillGraph]:
    """Skill paths of a run's exported tasks, and the run's skill graph."""
    with RunDirectory(run).open(read_only=True) as store:
        info = store.run()
        paths = [task.skills for task in store.tasks()]
    graph = skill_graph(tuple((info.config if info else {}).get("graph") or ()))
    return paths, graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--run", type=Path, default=None,
                        help="read a run directory's exported tasks instead of generating")
    args = parser.parse_args()
    if args.run is None:
        graph = skill_graph(load_run_config(None, [f"seed={args.seed}"]).graph)
        if problems := mapping_problems(graph):
            sys.exit("\n".join(problems))
        started = time.perf_counter()
        paths, failed = generated(args.count, args.seed)
        source = (f"{args.count} items planned (seed {args.seed}), {len(paths)} tasks "
                  f"generated in {time.perf_counter() - started:.0f} s (2 processes, not "
                  f"validated)")
    else:
        try:
            paths, graph = from_run(args.run)
        except StoreError as exc:
            sys.exit(str(exc))
        failed = None
        source = f"{len(paths)} exported tasks of {args.run}"
    problems = mapping_problems(graph)
    unknown = sorted({s for path in paths for s in path} - set(graph.skills))
    problems += [f"skill {s!r} of a task is not in the skill graph" for s in unknown]
    if problems:
        sys.exit("\n".join(problems))

    mapped, last_seen, any_seen = defaultdict(set), defaultdict(set), defaultdict(set)
    for skill_id in graph.skills:
        mapped[graph.work_of(skill_id)].add(skill_id)
    tasks = Counter()
    for path in paths:
        category = graph.work_of(path[-1])
        tasks[category] += 1
        last_seen[category].add(path[-1])
        for skill_id in path:
            any_seen[graph.work_of(skill_id)].add(skill_id)

    print(source)
    n, tb2_total = max(len(paths), 1), sum(len(v) for v in TB2_TASKS.values())
    print(f"\n{'TB2 category':<22} {'TB2 tasks':>9} {'TB2 %':>6} {'tasks':>6} {'share':>6}  "
          f"{'last skill seen/mapped':>22}  {'any step seen/mapped':>20}")
    order = sorted(TB2_TASKS, key=lambda c: (-tasks[c], -len(TB2_TASKS[c]), c))
    for category in order:
        total = len(mapped[category])
        last = f"{len(last_seen[category])}/{total}" if total else "-"
        anywhere = f"{len(any_seen[category])}/{total}" if total else "-"
        print(f"{category:<22} {len(TB2_TASKS[category]):>9} "
              f"{len(TB2_TASKS[category]) / tb2_total:>6.1%} {tasks[category]:>6} "
              f"{tasks[category] / n:>6.1%}  {last:>22}  {anywhere:>20}")
    print(f"{'total':<22} {tb2_total:>9} {'':>6} {len(paths):>6}")
    if failed is not None:
        print(f"plans that failed to generate (NoDraft): {failed} of {args.count}")

    broad = [c for c in TB2_TASKS if tasks[c] / n >= TARGET_MIN_SHARE]
    largest = max(TB2_TASKS, key=lambda c: tasks[c])
    ok = len(broad) >= TARGET_CATEGORIES and tasks[largest] / n <= TARGET_MAX_SHARE
    print(f"\ntarget: >= {TARGET_CATEGORIES} categories with >= {TARGET_MIN_SHARE:.0%} of tasks "
          f"each, none over {TARGET_MAX_SHARE:.0%}: {'PASS' if ok else 'FAIL'} "
          f"({len(broad)} categories >= {TARGET_MIN_SHARE:.0%}; largest {largest} "
          f"{tasks[largest] / n:.1%})")


if __name__ == "__main__":
    main()
