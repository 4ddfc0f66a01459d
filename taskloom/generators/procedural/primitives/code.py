"""Code primitives: repair a program that a typed mutation broke; implement a stub to spec.

The program comes from the catalogue (`programs`), working, and its docstring states what
it does. A repair step injects one bug (`mutations`) that shows on a visible example, an
input file beside the program with the output it should print, and on at least two of the
hidden inputs. An implementation step replaces the body of its `run` with a stub whose
docstring shows an example call. Either way the checks write hidden inputs and run the
program on them: it must follow its docstring on inputs it was not shown. A program that
only special-cases the example is a stated rule's mutant, so validation proves the hidden
inputs tell it apart.
"""

from __future__ import annotations

import ast

from taskloom import pysource
from taskloom.errors import NotApplicable
from taskloom.generators.procedural.artifacts import ProgramFile, ToolScript
from taskloom.generators.procedural.checks import ToolRuns
from taskloom.generators.procedural.mutations import KINDS, Mutant, behaviour, mutants
from taskloom.generators.procedural.primitives.base import (
    Rule,
    StepContext,
    StepResult,
    primitive,
)
from taskloom.generators.procedural.programs import Program
from taskloom.generators.procedural.world import lines_text, q

HIDDEN = "/tmp/taskloom-program-input-{}.txt"  # where the checks write the hidden inputs
KIND_WORDS = {"off-by-one": "an off-by-one error", "wrong-operator": "a wrong operator",
              "swapped-arguments": "two arguments passed in the wrong order",
              "missing-case": "a case the code no longer handles",
              "wrong-default": "a wrong default value"}
Case = tuple[tuple[str, ...], tuple[str, ...]]  # (lines, options)


def _cases(ctx: StepContext, program: Program, count: int, records: int) -> list[Case]:
    """Inputs with their options; every other one leaves the option out (its default)."""
    malformed = (0, 2, 4)[ctx.difficulty.noise - 1]
    return [(tuple(program.make_input(ctx.rng, records, malformed)),
             () if number % 2 == 0 else program.options(ctx.rng))
            for number in range(count)]


def _bug(ctx: StepContext, program: Program, examples: list[Case],
         hidden: list[Case]) -> tuple[Mutant, Case]:
    """A mutant that fails two hidden inputs and prints a wrong answer on an example.

    On the example it prints (no crash); the kinds are tried in random order.
    """
    expected = {case: behaviour(program.source, list(case[0]), case[1])
                for case in examples + hidden}
    if any(value is None for value in expected.values()):
        raise NotApplicable("the program fails on its own input")  # a catalogue defect
    found = mutants(program.source)
    kinds = list(KINDS)
    ctx.rng.shuffle(kinds)
    for kind in kinds:
        candidates = [mutant for mutant in found if mutant.kind == kind]
        ctx.rng.shuffle(candidates)
        for mutant in candidates:
            wrong = [case for case in hidden
                     if behaviour(mutant.source, list(case[0]), case[1]) != expected[case]]
            if len(wrong) < 2:
                continue
            for case in examples:
                printed = behaviour(mutant.source, list(case[0]), case[1])
                if printed is not None and printed != expected[case]:
                    return mutant, case
    raise NotApplicable("no mutation of this program shows on the inputs")


def _special_cased(source: str, example: Case, printed: tuple[str, ...]) -> str:
    """The program as shipped, made to print the right answer for the example input only."""
    patch = ("_run_as_shipped = run\n\n\n"
             "def run(lines, *options):\n"
             f"    if list(lines) == {list(example[0])!r} and "
             f"list(options) == {[int(o) for o in example[1]]!r}:\n"
             f"        return {list(printed)!r}\n"
             "    return _run_as_shipped(lines, *options)\n\n\n")
    head, _, tail = source.partition("def main(argv):")
    return head + patch + "def main(argv):" + tail


def _written(path: str, text: str, marker: str) -> str:
    return f"cat > {q(path)} <<'{marker}'\n{text}{marker}\nchmod 755 {q(path)}"


def _replaced(path: str, old: str, new: str) -> str:
    """A bash fragment that replaces the one occurrence of `old` in the file by `new`."""
    return (f"python3 - {q(path)} <<'TASKLOOM_EDIT'\n"
            "import sys\n"
            "path = sys.argv[1]\n"
            "text = open(path, encoding='utf-8').read()\n"
            f"old, new = {old!r}, {new!r}\n"
            "if text.count(old) != 1:\n"
            "    sys.exit(f'the lines to change are not in {path}')\n"
            "open(path, 'w', encoding='utf-8').write(text.replace(old, new))\n"
            "TASKLOOM_EDIT")


def _rewritten(path: str, program: Program) -> str:
    """The alternative: the whole working program written anew, formatted otherwise."""
    text = "#!/usr/bin/env python3\n" + ast.unparse(pysource.parse(program.source)) + "\n"
    return _written(path, text, "TASKLOOM_REWRITE")


def _hidden_runs(ctx: StepContext, path: str, program: Program, hidden: list[Case],
                 label: str) -> ToolRuns:
    """The check: the program prints what the working one prints on each hidden input.

    Three arguments (one too many for any of its usages) are a usage error, as its
    docstring says (a fix that also deleted the usage check earned 1: forger).
    """
    runs = tuple(((*options, HIDDEN.format(number)),
                  lines_text(behaviour(program.source, list(lines), options) or ()), 0)
                 for number, (lines, options) in enumerate(hidden, 1))
    return ToolRuns(
        label, program=path,
        cases=(*runs, (("1", HIDDEN.format(1), HIDDEN.format(1)), None, 2)),
        fixtures=tuple((HIDDEN.format(number), lines_text(lines))
                       for number, (lines, _) in enumerate(hidden, 1)),
        compare="exact" if ctx.difficulty.strictness == 3 else "lines", quiet=(2,))


def _repaired(path: str, phrase: str, example: Case, example_path: str,
              printed: tuple[str, ...]) -> ToolScript:
    """The step's output: the working program, with a typical run for later steps."""
    return ToolScript(path=path, phrase=phrase, lines=(), sample=(*example[1], example_path),
                      sample_output=lines_text(printed), sample_text=lines_text(example[0]))


def _catalogued(ctx: StepContext, source) -> tuple[Program, int]:
    """The step's program, and how many records its inputs hold (by the data volume)."""
    if not isinstance(source, ProgramFile) or source.program is None:
        raise NotApplicable("needs a program of the catalogue")
    return source.program, ctx.count((6, 10), (12, 20), (25, 40))


@primitive("code.fix_bug")
def fix_bug(ctx: StepContext, source) -> StepResult:
    """Fix the one bug injected into a working program."""
    program, records = _catalogued(ctx, source)
    examples = _cases(ctx, program, 4, max(5, records // 2))
    hidden = [case for case in _cases(ctx, program, 6, records) if case not in examples]
    mutant, example = _bug(ctx, program, examples, hidden)
    path = source.path
    ctx.world.add(path, mutant.source, mode=0o755)
    folder = path.rsplit("/", 1)[0] + "/examples"
    example_path = ctx.world.add(f"{folder}/{program.name}.input", lines_text(example[0]))
    printed = behaviour(program.source, list(example[0]), example[1]) or ()
    expected_path = ctx.world.add(f"{folder}/{program.name}.expected", lines_text(printed))
    command = " ".join(q(word) for word in (path, *example[1], example_path))
    sentence = ctx.phrase([
        f"The program {path} (run as `{program.name} {program.usage}`) has a bug: "
        f"`{command}` should print exactly the lines of {expected_path}, but it does not. "
        "Its docstring states what it must do. Fix the bug in the program itself, so that it "
        "does what the docstring says for every input; keep its name, its arguments and its "
        "output format.",
        f"Users report that {path} gives wrong results. For example, `{command}` must print "
        f"what {expected_path} holds, and it prints something else. Find the bug and fix it "
        f"in {path}: the program must follow its docstring on any input, not only on this "
        "one, with the same command line and output format.",
        f"Debug {path}: on the example input {example_path} its output differs from the "
        f"expected output in {expected_path} (`{command}`). Correct the code so that the "
        "program behaves as its docstring specifies for all inputs; its arguments and "
        "output format stay as they are.",
    ]) + ctx.hint(f"the bug is {KIND_WORDS[mutant.kind]} in `{mutant.function}`")
    return StepResult(
        output=_repaired(path, f"the repaired program {path}", example, example_path, printed),
        instruction=sentence, solution=_replaced(path, mutant.changed, mutant.original),
        alternative=_rewritten(path, program),
        checks=[_hidden_runs(ctx, path, program, hidden,
                             f"{path} follows its docstring on inputs it was not shown")],
        tools=("python3",), side_effect=True,
        rules=(Rule("every-input", "that the program works for every input, not only the "
                    "example", _written(path, _special_cased(mutant.source, example, printed),
                                        "TASKLOOM_SPECIAL")),))


def _stubbed(source: str, example: Case, printed: tuple[str, ...]) -> tuple[str, str, str]:
    """(program, stub, body): the program with `run`'s body replaced by a stub.

    The stub's docstring shows the example call; `stub` and `body` are the lines of each.
    """
    run = next(node for node in pysource.parse(source).body
               if isinstance(node, ast.FunctionDef) and node.name == "run")
    lines = source.splitlines(keepends=True)
    body = "".join(lines[run.body[0].lineno - 1:run.end_lineno])
    names = [arg.arg for arg in run.args.args]
    options = "".join(f", {option}" for option in example[1])
    meaning = (f" `{names[1]}` is the {names[1].upper()} argument when it is given, else "
               "the default." if len(names) > 1 else "")
    stub = (f'    r"""The lines the program prints for `{names[0]}`, the lines of FILE '
            f"(without their newlines).{meaning}\n\n"
            f"    >>> run({list(example[0])!r}{options})\n"
            f"    {list(printed)!r}\n"
            '    """\n'
            "    raise NotImplementedError('run')\n")
    return source.replace(body, stub), stub, body


@primitive("code.implement_function")
def implement_function(ctx: StepContext, source) -> StepResult:
    """Implement a program's stubbed `run` to its docstring."""
    program, records = _catalogued(ctx, source)
    example = next((case for case in _cases(ctx, program, 4, 4)
                    if behaviour(program.source, list(case[0]), case[1])), None)
    if example is None:
        raise NotApplicable("no example prints anything")
    printed = behaviour(program.source, list(example[0]), example[1]) or ()
    hidden = [case for case in _cases(ctx, program, 5, records) if case != example]
    stubbed, stub, body = _stubbed(program.source, example, printed)
    path = source.path
    ctx.world.add(path, stubbed, mode=0o755)
    sentence = ctx.phrase([
        f"The program {path} (run as `{program.name} {program.usage}`) is unfinished: its "
        "function `run` is a stub. Implement `run` so that the program does what its module "
        "docstring says, for every input; the docstring of `run` shows one example call. "
        "Keep the rest of the program (its name, arguments and output format) as it is.",
        f"Finish {path}: `run` only raises NotImplementedError. Write its body so that "
        f"`{program.name} {program.usage}` behaves exactly as the module docstring "
        "specifies on any input (an example call is in `run`'s docstring); do not change "
        "how the program is called or what it prints around `run`.",
        f"Implement the missing function `run` of {path} to the specification in the "
        "program's docstring (the example in `run`'s docstring must hold, and so must "
        "every other input); the command line and output format stay as they are.",
    ]) + ctx.hint("follow the module docstring rule by rule")
    example_path = ctx.world.add(
        f"{path.rsplit('/', 1)[0]}/examples/{program.name}.input", lines_text(example[0]))
    return StepResult(
        output=_repaired(path, f"the finished program {path}", example, example_path, printed),
        instruction=sentence, solution=_replaced(path, stub, body),
        alternative=_rewritten(path, program),
        checks=[_hidden_runs(ctx, path, program, hidden,
                             f"{path} follows its docstring on inputs it was not shown")],
        tools=("python3",), side_effect=True,
        rules=(Rule("every-input", "that the program works for every input, not only the "
                    "example", _written(path, _special_cased(stubbed, example, printed),
                                        "TASKLOOM_SPECIAL")),))
