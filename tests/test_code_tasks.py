"""Code tasks: the program catalogue, its mutations, and the repair and implement steps.

The sandbox validation of both steps (nop, oracle, alternative, the special-casing rule,
tamper probes) is the registry-wide test's; these check what it cannot see: that a program
behaves in a real interpreter as the generator computed, that each mutation kind exists and
changes one place, and that the visible example and the hidden inputs are what the
instruction says they are.
"""

from __future__ import annotations

import ast
import random
import re
import subprocess
import sys
from collections import Counter

import pytest

from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.generators.procedural.domains import DOMAINS
from taskloom.generators.procedural.mutations import KINDS, behaviour, mutants
from taskloom.generators.procedural.programs import SHAPES
from taskloom.generators.protocols import Difficulty
from taskloom.skill_graph.model import load_graph

GRAPH = load_graph()
EASY = Difficulty(steps=1, tool_breadth=1, data_volume=1, noise=2, specification=2,
                  edge_cases=1, strictness=2)


def _programs():
    rng = random.Random(7)
    return [(shape, make(rng, DOMAINS[domain]))
            for shape, make in sorted(SHAPES.items()) for domain in ("ops", "sales")]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_program_prints_in_python3_what_the_generator_computed(tmp_path, shape):
    rng = random.Random(3)
    program = SHAPES[shape](rng, DOMAINS["web"])
    script = tmp_path / program.name
    script.write_text(program.source)
    for number in range(4):
        lines = program.make_input(rng, 12, number)
        options = program.options(rng)
        data = tmp_path / f"input-{number}.txt"
        data.write_text("".join(line + "\n" for line in lines))
        done = subprocess.run([sys.executable, str(script), *options, str(data)],
                              capture_output=True, text=True, timeout=30, check=True)
        assert tuple(done.stdout.splitlines()) == behaviour(program.source, lines, options)
        assert done.stdout  # every input makes the program print something
    usage = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           timeout=30)
    assert usage.returncode == 2 and usage.stdout == "" and "usage:" in usage.stderr


def test_every_mutation_kind_occurs_and_each_changes_one_place():
    kinds = Counter()
    for _, program in _programs():
        original = ast.parse(program.source)
        for mutant in mutants(program.source):
            kinds[mutant.kind] += 1
            assert mutant.function != "main"
            assert ast.dump(ast.parse(mutant.source)) != ast.dump(original)
            assert mutant.source.count(mutant.changed) == 1
            assert mutant.source.replace(mutant.changed, mutant.original) == program.source
    assert set(kinds) == set(KINDS), kinds


def test_a_failing_or_endless_program_has_no_behaviour():
    assert behaviour("def run(lines):\n    return 1 / 0\n", ["a"], ()) is None
    assert behaviour("def run(lines):\n    while True:\n        pass\n", ["a"], ()) is None
    assert behaviour("def run(lines, top=2):\n    return lines[:top]\n", ["a", "b", "c"],
                     ("1",)) == ("a",)


def _text(files, test) -> str:
    """The text of the first task file whose path passes `test`."""
    content = next(f.content for f in files if test(f.path))
    return content.decode() if isinstance(content, bytes) else content


@pytest.mark.parametrize("seed", range(6))
def test_the_repair_example_fails_before_the_fix_and_passes_after(tmp_path, seed):
    draft = ProceduralGenerator(GRAPH).generate(
        blueprint_for(GRAPH, ("code.fix_bug",), seed=seed, difficulty=EASY))
    task = draft.task
    program = _text(task.environment, lambda path: "/tools/" in path and "/examples/" not in path)
    example = _text(task.environment, lambda path: path.endswith(".input"))
    expected = _text(task.environment, lambda path: path.endswith(".expected"))
    (tmp_path / "input").write_text(example)
    script = tmp_path / "program"
    script.write_text(program)
    command = re.search(r"`(/\S+)((?: \d+)?) (\S+\.input)`", task.instruction)
    options = command.group(2).split()  # `PATH [OPTION] EXAMPLE`

    def printed() -> str:
        return subprocess.run([sys.executable, str(script), *options, str(tmp_path / "input")],
                              capture_output=True, text=True, timeout=30).stdout

    assert printed() != expected  # the bug shows on the visible example
    solve = _text(task.solution, lambda path: path == "solve.sh")
    fix = solve[solve.index("python3 - "):solve.index("TASKLOOM_EDIT\n", solve.index("<<")
                                                      + 20) + len("TASKLOOM_EDIT")]
    fix = fix.replace(fix.split()[2], str(script), 1)
    subprocess.run(["bash", "-c", fix], check=True, timeout=30)
    assert printed() == expected
    tests = _text(task.tests, lambda path: path.endswith(".py"))
    assert example not in tests  # the hidden inputs are not the example


def test_the_stub_keeps_the_program_runnable_and_shows_an_example():
    draft = ProceduralGenerator(GRAPH).generate(
        blueprint_for(GRAPH, ("code.implement_function",), seed=4, difficulty=EASY))
    program = _text(draft.task.environment,
                    lambda path: "/tools/" in path and "/examples/" not in path)
    tree = ast.parse(program)
    run = next(node for node in tree.body
               if isinstance(node, ast.FunctionDef) and node.name == "run")
    assert ">>> run(" in ast.get_docstring(run)
    assert isinstance(run.body[-1], ast.Raise)
    assert "is unfinished" in draft.task.instruction or "`run`" in draft.task.instruction


@pytest.mark.bwrap
def test_a_fix_that_drops_the_usage_check_or_capitalises_after_a_hyphen_earns_nothing(
        bwrap_runtime):
    """The hidden runs hold a name with a hyphen or an apostrophe inside a word, and one
    run with an argument too many (forger: `str.title()`, which makes `berners-LEE`
    `Berners-Lee` against the docstring's own example, and a fix that deleted the usage
    check each earned 1; `str.capitalize()` is right)."""
    from endings import rewards, task_for

    seed = next(s for s in range(40) if "clean-" in task_for(("code.fix_bug",), s).instruction)
    task = task_for(("code.fix_bug",), seed)
    program = re.search(r"The program (/\S+) ", task.instruction).group(1)
    edit = ("python3 - <<'PY'\nimport re\n"
            f"path = {program!r}\ntext = open(path).read()\n"
            "new = re.sub(PATTERN, REPLACEMENT, text, count=1, flags=re.S)\n"
            "assert new != text\nopen(path, 'w').write(new)\nPY\n")
    title = r"'return word\[:1\]\.upper\(\) \+ word\[1:\]\.lower\(\)'"
    found = rewards(bwrap_runtime, ("code.fix_bug",), seed, {
        "reference": "",
        "capitalize": edit.replace("PATTERN", title)
                          .replace("REPLACEMENT", "'return word.capitalize()'"),
        "title": edit.replace("PATTERN", title).replace("REPLACEMENT", "'return word.title()'"),
        "no-usage": edit.replace("PATTERN", r"r'    if len\(argv\).*?return 2\n'")
                        .replace("REPLACEMENT", "''"),
    })
    assert found == {"reference": 1.0, "capitalize": 1.0, "title": 0.0, "no-usage": 0.0}, found
