"""The registry-wide test: every primitive, several seeds and difficulties, validated in the
real sandbox; the same seed gives the same bytes, different seeds different tasks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from taskloom.config import ValidationConfig
from taskloom.errors import NoDraft
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.procedural.primitives import PRIMITIVES
from taskloom.generators.procedural.primitives.scripting import SAMPLE
from taskloom.generators.protocols import DIMENSIONS, Difficulty
from taskloom.harbor import write_task_folder
from taskloom.skill_graph.model import load_graph
from taskloom.validators.engine import validate_all, validate_task

GRAPH = load_graph()
SEEDS = (0, 1, 2)


def difficulty_for(seed: int) -> Difficulty:
    """Seed 0 easy, 1 mixed, 2 hard on every dimension (steps stay as the path says)."""
    levels = {0: 1, 1: 2, 2: 3}[seed]
    values = {name: levels for name in DIMENSIONS}
    values["steps"] = 1
    if seed == 1:
        values.update(noise=3, edge_cases=1, strictness=3)
    return Difficulty(**values)


def drafts_for(skill: str):
    generator = ProceduralGenerator(GRAPH)
    return [generator.generate(blueprint_for(GRAPH, (skill,), seed=seed,
                                             difficulty=difficulty_for(seed)))
            for seed in SEEDS]


def test_every_primitive_is_a_graph_skill_with_the_graph_types():
    assert set(PRIMITIVES) <= set(GRAPH.skills)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_every_primitive_validates_in_the_sandbox(docker_runtime):
    config = ValidationConfig()
    jobs = []
    for skill in sorted(PRIMITIVES):
        for draft in drafts_for(skill):
            jobs.append(lambda d=draft: validate_task(d.task, docker_runtime, config,
                                                      expected_values=d.expected_values))
    rejected = [r for r in validate_all(jobs, docker_runtime, workers=2) if not r.accepted]
    assert not rejected, "\n".join(describe(r) for r in rejected)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.bwrap
@pytest.mark.parametrize("verifier", ["shared", "separate"])
def test_every_primitive_withstands_every_probe(bwrap_runtime, verifier):
    """Each tamper probe alone, from the start, on every primitive's task.

    Each verifier mode is swept once, on the faster runtime (a sweep takes 3-4 minutes
    there, 4-5 on Docker). Docker runs every primitive's combined probe in the sweep above,
    and tests/test_tamper.py runs each probe in both modes on both runtimes for chained
    tasks.
    """
    generator = ProceduralGenerator(GRAPH, verifier=verifier)
    config = ValidationConfig(checks=("tamper",), probes="each")
    drafts = [generator.generate(blueprint_for(GRAPH, (skill,), seed=0,
                                               difficulty=difficulty_for(0)))
              for skill in sorted(PRIMITIVES)]
    jobs = [lambda d=draft: validate_task(d.task, bwrap_runtime, config,
                                          expected_values=d.expected_values)
            for draft in drafts]
    reports = list(validate_all(jobs, bwrap_runtime, workers=2))
    assert len(reports) == len(PRIMITIVES)
    assert all(any(v.check == "tamper" for v in r.verdicts) for r in reports)
    forged = [r for r in reports if not r.accepted]
    assert not forged, "\n".join(describe(r) for r in forged)


@pytest.mark.parametrize("skill", sorted(PRIMITIVES))
def test_every_primitive_ships_another_correct_solution(skill):
    """Run by the alternatives check in the sweeps above; here: present and different."""
    for draft in drafts_for(skill):
        (alternative,) = draft.task.alternatives
        assert alternative.path == "alternatives/other-tools.sh" and alternative.mode == 0o755
        body = alternative.content.decode().split("\n", 3)[3]
        reference = draft.task.file("solution", "solve.sh").content.decode()
        assert body.strip() and body not in reference


@pytest.mark.parametrize("skill", sorted(PRIMITIVES))
def test_every_primitive_ships_a_mutant_per_stated_rule(skill):
    """Run by the mutations check in the sweeps above (each must earn 0); here: every
    primitive states a rule its data exercises at some difficulty, and each mutant differs
    from the reference in its one step only."""
    shipped = 0
    for draft in drafts_for(skill):
        reference = draft.task.file("solution", "solve.sh").content.decode().splitlines()
        for mutant in draft.task.mutants:
            assert re.fullmatch(r"mutants/step-1-[a-z0-9]+(-[a-z0-9]+)*\.sh", mutant.path)
            lines = mutant.content.decode().splitlines()
            assert lines[1].startswith("# Wrong on purpose (a taskloom mutant): step 1 ignores ")
            assert lines[3:] != reference[3:] and mutant.mode == 0o755
        shipped += len(draft.task.mutants)
    assert shipped, f"{skill} states no rule that its data exercises"


def describe(report) -> str:
    return f"{report.task}: {[(v.check, v.details) for v in report.verdicts if not v.passed]}"


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("skill", sorted(PRIMITIVES))
def test_same_seed_same_bytes_other_seed_other_task(tmp_path, skill):
    generator = ProceduralGenerator(GRAPH)
    blueprint = blueprint_for(GRAPH, (skill,), seed=7, difficulty=difficulty_for(1))
    first = write_task_folder(generator.generate(blueprint).task, tmp_path / "a" / "t")
    second = write_task_folder(generator.generate(blueprint).task, tmp_path / "b" / "t")
    assert folder_bytes(first) == folder_bytes(second)
    other = blueprint_for(GRAPH, (skill,), seed=8, difficulty=difficulty_for(1))
    third = write_task_folder(generator.generate(other).task, tmp_path / "c" / "t")
    assert folder_bytes(third) != folder_bytes(first)


# Primitives none of whose graph successors can take their output: it is already what the
# successor would make of it (unique, sorted, free of blank lines), or lacks what it needs.
# Found by the chain test below; a change that lets one of them chain shows up there.
UNCHAINABLE = {
    "integrity.verify_manifest": "its report lines are unique and sorted",
    "json.extract_field": "the extracted values hold no blank lines",
    "logs.count_by_level": "its count lines are unique and sorted",
    "logs.error_summary_per_service": "its summary lines are unique and sorted",
    "logs.rotate_keep": "the kept logs are all recent, error-free or empty of records",
    "logs.status_summary": "its summary lines are unique, sorted and alike",
    "perms.find_world_writable": "its paths are unique",
    "schedule.find_meeting_slot": "its one slot line is sorted, unique and repeats nothing",
}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_chained_paths_validate(docker_runtime):
    """A two-step chain from every primitive that has a successor in the graph."""
    generator = ProceduralGenerator(GRAPH)
    config = ValidationConfig()
    successors: dict[str, list[str]] = {}
    for first, second in sorted(GRAPH.transitions()):
        if first in PRIMITIVES and second in PRIMITIVES:
            successors.setdefault(first, []).append(second)
    drafts, unchained = [], {}
    for index, (first, options) in enumerate(sorted(successors.items())):
        draft, why = None, []
        # The item's own difficulty first; the others only when no chain makes a task there
        # (a goal-only instruction plans no tool after a hidden step, say).
        for level in sorted(range(3), key=lambda level: level != index % 3):
            difficulty = difficulty_for(level).model_copy(update={"steps": 1})
            for seed in range(index, index + 3):
                for second in options:
                    try:
                        draft = generator.generate(blueprint_for(
                            GRAPH, (first, second), seed=seed, difficulty=difficulty))
                        break
                    except NoDraft as exc:
                        why.append(str(exc))
                if draft is not None:
                    break
            if draft is not None:
                break
        if draft is None:
            unchained[first] = why[-1]
        else:
            drafts.append(draft)
    assert set(unchained) == set(UNCHAINABLE), unchained
    jobs = [lambda d=draft: validate_task(d.task, docker_runtime, config,
                                          expected_values=d.expected_values)
            for draft in drafts]
    rejected = [r for r in validate_all(jobs, docker_runtime, workers=2) if not r.accepted]
    assert len(drafts) == len(successors) - len(UNCHAINABLE)
    assert not rejected, "\n".join(describe(r) for r in rejected)


GOAL_ONLY = Difficulty(steps=2, tool_breadth=1, data_volume=1, noise=1, specification=3,
                       edge_cases=1, strictness=1)


def test_goal_only_checks_do_not_depend_on_a_hidden_steps_choices():
    """The instruction states only the goal: what a hidden step chose freely (an archive's
    path prefix, the file it left for a tool) must not be what a check expects."""
    generator = ProceduralGenerator(GRAPH)
    for seed in range(6):
        draft = generator.generate(blueprint_for(GRAPH, ("git.export_tree", "archive.extract"),
                                                 seed=seed, difficulty=GOAL_ONLY))
        checks = draft.task.file("tests", "test_outputs.py").content.decode()
        assert "/restored" in checks and "output/restored/" + "ferncastle" not in checks
        assert "--prefix" not in draft.task.file("solution", "solve.sh").content.decode()
    with pytest.raises(NoDraft, match="hidden and unchecked"):
        generator.generate(blueprint_for(GRAPH, ("text.sort_unique", "script.write_tool"),
                                         seed=0, difficulty=GOAL_ONLY))
    shown = generator.generate(blueprint_for(
        GRAPH, ("text.sort_unique", "script.write_tool"), seed=0,
        difficulty=GOAL_ONLY.model_copy(update={"specification": 2})))
    checks = shown.task.file("tests", "test_outputs.py").content.decode()
    assert SAMPLE in checks  # the tool runs on a copy of its input


def test_a_check_may_read_only_what_the_instruction_names():
    """Named: the path, a folder above it or a path inside it; the note on the working
    directory does not count, and the account database is named in words."""
    from taskloom.generators.procedural.assemble import unstated_read
    from taskloom.generators.procedural.checks import FileText, PathState

    instruction = ("Mirror `/srv/media/share` and list `/srv/media/share/backups/` files.\n\n"
                   "- Work on this machine only (there is no network). Your working "
                   "directory is /srv/media; /srv/media/output already exists.\n")

    def read(path):
        return unstated_read([FileText("x", path=path)], instruction)

    assert read("/srv/media/share/a/b.txt") is None  # below a named folder
    assert read("/srv/media/share") is None and read("/srv/media/share/backups") is None
    assert read("/srv/media") is None  # a folder around a named path
    assert read("/srv/media/output/mirror/a.txt") == "/srv/media/output/mirror/a.txt"
    assert read("/srv/media/shared/a.txt") == "/srv/media/shared/a.txt"  # not a prefix match
    assert unstated_read([PathState("x", path="/etc/passwd")], instruction) is None


@pytest.mark.parametrize("skill", sorted(PRIMITIVES))
def test_every_check_cites_the_instruction_words_that_demand_it(skill):
    """The requirement map in task.toml: every test of test_outputs.py once, each with words
    the instruction shows; the test itself carries the same words."""
    for draft in drafts_for(skill):
        task = draft.task
        tests = task.file("tests", "test_outputs.py").content.decode()
        names = re.findall(r"^def (test_\w+)\(", tests, re.MULTILINE)
        mapped = [name for entry in task.config.metadata["requirements"]
                  for name in entry["tests"]]
        assert sorted(mapped) == sorted(names) and len(set(mapped)) == len(mapped)
        for entry in task.config.metadata["requirements"]:
            assert entry["demands"] and all(w in task.instruction for w in entry["demands"])
            assert f"# The instruction demands: {entry['demands'][0].splitlines()[0]}" in tests


def test_a_goal_names_the_results_of_hidden_steps_instead_of_nesting_them():
    """'the lines of the lines of the sorted list of ...' is what solvers called garbled."""
    draft = ProceduralGenerator(GRAPH).generate(blueprint_for(
        GRAPH, ("files.find_by_extension", "text.filter_lines", "text.count_lines"), seed=0,
        difficulty=GOAL_ONLY.model_copy(update={"steps": 3})))
    instruction = draft.task.instruction
    assert "Below, A and B name results that you may compute in any way" in instruction
    definitions = re.findall(r"^- ([AB]): (.+)$", instruction, re.MULTILINE)
    assert [letter for letter, _ in definitions] == ["A", "B"]
    assert " of A" in definitions[1][1] and " of B" in instruction.split("Your goal:")[1]
    assert "of the lines of" not in instruction


@pytest.mark.parametrize(("path", "strictness", "free"), [
    (("files.find_by_extension",), 2, True),
    (("files.find_by_extension",), 3, False),  # exact bytes: the instruction states them
    (("files.find_by_extension", "text.filter_lines"), 2, False),  # a later step reads it
])
def test_a_leading_dot_slash_is_free_unless_exact_bytes_or_a_later_step_need_bare_paths(
        path, strictness, free):
    difficulty = difficulty_for(0).model_copy(update={"strictness": strictness,
                                                      "steps": len(path)})
    task = ProceduralGenerator(GRAPH).generate(
        blueprint_for(GRAPH, path, seed=0, difficulty=difficulty)).task
    tests = task.file("tests", "test_outputs.py").content.decode()
    first = tests.split("def test_")[1]  # the check of the paths that step 1 writes
    assert ("leading `./`" not in task.instruction) is free
    assert ("'paths')" in first) is free


@pytest.mark.parametrize(("path", "strictness", "free"), [
    (("files.find_by_extension",), 1, True),
    (("files.find_by_extension",), 2, False),
    (("files.find_by_extension", "text.filter_lines"), 1, False),  # a later step reads it
])
def test_the_instruction_demands_an_order_exactly_where_the_checks_compare_it(
        path, strictness, free):
    """An order the checks do not see must not be stated: a solution ignoring it would earn
    the reward, and one honouring it would do work nobody asked to measure."""
    difficulty = difficulty_for(0).model_copy(update={"strictness": strictness,
                                                      "steps": len(path)})
    for seed in range(3):
        task = ProceduralGenerator(GRAPH).generate(
            blueprint_for(GRAPH, path, seed=seed, difficulty=difficulty)).task
        tests = task.file("tests", "test_outputs.py").content.decode()
        first = tests.split("def test_")[1]  # the check of the list that step 1 writes
        cited = re.search(r"# The instruction demands: (.*)", first).group(1)
        assert ("'set'" in first) is free
        assert ("in any order" in cited) is free
        assert bool(re.search(r"sort|byte value", cited)) is not free
