"""Breadth of generated tasks over Terminal-Bench 2.0's categories.

    .venv/bin/python benchmarks/categories.py [--count 1000] [--seed 5] [--run RUN_DIR]

Plans and generates `--count` procedural tasks (not validated; two processes; `plan(index)`
without a coverage snapshot, so unsteered) or, with `--run`, reads the exported tasks of a
run directory written by `taskloom generate`. Each task goes to ONE Terminal-Bench 2.0
(TB2) category: the one of its LAST skill (`task.toml`'s `metadata.skills[-1]`, the step
whose output the task asks for), through `SKILL_OVERRIDES` for that skill id when it has an
entry, else through `SKILL_CATEGORIES` for the skill's graph `category`. Prints, per TB2
category: TB2's own task count and share, the generated tasks and their share, the distinct
skills seen as a task's last step / the graph's skills mapped to the category, the distinct
skills seen at any step / the same; then the plans that made no draft (`NoDraft`), and the
target "at least 8 categories with >= 5% of tasks each, none over 30%" as PASS or FAIL with
the numbers. Exits 0 either way (a measurement); exits 1 before measuring when a skill
category of the graph has no TB2 category (add it to `SKILL_CATEGORIES` below).

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

# Skill graph `category` -> TB2 category. Every category of the graph needs an entry (the
# script refuses to measure otherwise); the names in comments are TB2 tasks of that category.
SKILL_CATEGORIES: dict[str, str] = {
    # Archive/extract files (db-wal-recovery, extract-elf read and write files). The two
    # backup skills go to system-administration in SKILL_OVERRIDES.
    "archives and backups": "file-operations",
    # Could be security, but manifests here guard against corruption, not an attacker, and
    # TB2's security tasks attack or defend something: file-operations.
    "checksums and integrity": "file-operations",
    # Editing a service's settings (nginx-request-logging configures a server).
    "config files": "system-administration",
    # Reshaping and summarizing records (multi-source-data-merger, log-summary-date-ranges).
    # Not data-science: TB2's data-science tasks are models and statistics.
    "csv processing": "data-processing",
    "file organisation": "file-operations",
    "file search": "file-operations",
    # fix-git and git-leak-recovery are software-engineering; TB2's git tasks filed under
    # system-administration (configure-git-webserver, git-multibranch) run a git server.
    "git": "software-engineering",
    "json processing": "data-processing",
    # log-summary-date-ranges and regex-log (count and match log lines) are data-processing;
    # nginx-request-logging (system-administration) configures logging, not reading it.
    "log analysis": "data-processing",
    # Logrotate-style housekeeping of a machine's logs.
    "log rotation": "system-administration",
    # Accounts, ownership and modes are administration; the world-writable audit goes to
    # security in SKILL_OVERRIDES.
    "permissions and users": "system-administration",
    "scheduled jobs": "system-administration",
    # Writing a tool (headless-terminal: a bash-facing program) is software-engineering;
    # installing one on the PATH goes to system-administration in SKILL_OVERRIDES.
    "shell scripting": "software-engineering",
    # SQL queries over a store: the closest name is data-querying (sparql-university, queries
    # over a graph store), though TB2's one SQL task, query-optimize, is data-science (it
    # tunes a query, where these write one).
    "sqlite": "data-querying",
    # Filtering, counting, sorting lines (regex-log); the in-place sed edit goes to
    # file-operations in SKILL_OVERRIDES (large-scale-text-editing).
    "text processing": "data-processing",
    # Fix an injected bug in a small Python program. Could be debugging, but TB2 files a bug
    # fix in a program's own source under software-engineering (fix-ocaml-gc) and its
    # debugging tasks find why a build or run fails (build-cython-ext, overfull-hbox,
    # custom-memory-heap-crash): that is our "debugging" category below.
    "code repair": "software-engineering",
    # Implement a stubbed function from its docstring and examples (cobol-modernization,
    # cancel-async-tasks, headless-terminal implement to a spec).
    "implementing to spec": "software-engineering",
    # Configure and start a local HTTP/TCP service. Could be software-engineering
    # (kv-store-grpc, pypi-server write and run one), but here the service exists and is
    # configured, as in nginx-request-logging, mailman, configure-git-webserver.
    "services": "system-administration",
    # A job that fails for one injected cause (permissions, path, env var, encoding, missing
    # file): find and remove the cause (build-cython-ext, sqlite-db-truncate).
    "debugging": "debugging",
    # Remove secrets from files and history, tighten modes, rotate a credential
    # (sanitize-git-repo is security; git-leak-recovery, filed as software-engineering, is
    # the one TB2 task that would pull it the other way).
    "security hygiene": "security",
}

# Skill id -> TB2 category, for skills whose category maps them wrongly. Keep it short.
SKILL_OVERRIDES: dict[str, str] = {
    "backup.mirror_rsync": "system-administration",  # backups of a machine
    "backup.prune_dated": "system-administration",
    "perms.find_world_writable": "security",  # an audit for unsafe modes
    "script.make_executable": "system-administration",  # install on the PATH: sqlite-with-gcov
    "text.replace_pattern": "file-operations",  # in-place edit: large-scale-text-editing
}

TARGET_CATEGORIES = 8
TARGET_MIN_SHARE = 0.05
TARGET_MAX_SHARE = 0.30


def mapping_problems(graph: SkillGraph) -> list[str]:
    """Every gap or stale entry of the mapping against `graph` (empty: it is complete)."""
    here = "benchmarks/categories.py"
    problems = []
    by_category = defaultdict(list)
    for skill in graph.skills.values():
        by_category[skill.category].append(skill.id)
    for category, skills in sorted(by_category.items()):
        if category not in SKILL_CATEGORIES:
            problems.append(f"skill category {category!r} (skills {', '.join(sorted(skills))}) "
                            f"has no TB2 category: add it to SKILL_CATEGORIES in {here}")
    for skill_id in sorted(set(SKILL_OVERRIDES) - set(graph.skills)):
        problems.append(f"SKILL_OVERRIDES names {skill_id!r}, not a skill of the graph: "
                        f"rename or remove it in {here}")
    for table, entries in (("SKILL_CATEGORIES", SKILL_CATEGORIES),
                           ("SKILL_OVERRIDES", SKILL_OVERRIDES)):
        for key, tb2 in entries.items():
            if tb2 not in TB2_TASKS:
                problems.append(f"{table}[{key!r}] = {tb2!r} is not a TB2 category (one of "
                                f"{', '.join(sorted(TB2_TASKS))}): fix it in {here}")
    return problems


def tb2_category(graph: SkillGraph, skill_id: str) -> str:
    """The TB2 category of one skill (the mapping must be complete: `mapping_problems`)."""
    return SKILL_OVERRIDES.get(skill_id) or SKILL_CATEGORIES[graph.skills[skill_id].category]


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
        mapped[tb2_category(graph, skill_id)].add(skill_id)
    tasks = Counter()
    for path in paths:
        category = tb2_category(graph, path[-1])
        tasks[category] += 1
        last_seen[category].add(path[-1])
        for skill_id in path:
            any_seen[tb2_category(graph, skill_id)].add(skill_id)

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
    absent = sorted(set(SKILL_CATEGORIES) - {s.category for s in graph.skills.values()})
    if absent:
        print(f"\nmapped skill categories not in the graph (yet): {', '.join(absent)}")
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
