"""Bugs injected into a working program by typed mutations of its syntax tree.

Also what a program prints for an input (`behaviour`).

A mutation changes one node of a function other than `main`, in place in the program's
text (the rest keeps its formatting):
- `off-by-one`: `<` and `<=` (or `>` and `>=`) traded, a whole-number constant one more or
  one less;
- `wrong-operator`: `+` and `-` traded, `*` made `+`, `//` made `/`, `==` and `!=`, `in`
  and `not in`, `and` and `or` traded, a `not` dropped;
- `swapped-arguments`: the first two positional arguments of a call swapped;
- `missing-case`: an `if` statement (without `else`) deleted;
- `wrong-default`: a parameter's whole-number default changed.

`behaviour` runs a catalogue program's `run` in this process. That is the generator's own
code from `programs`, changed only as above: no mutation adds a call, an import or a loop,
so a mutant reads nothing and writes nothing, and its loops are the original's loops over
the input's lines. A step budget stops it all the same should one ever run long.
"""

from __future__ import annotations

import ast
import copy
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from taskloom import pysource

KINDS = ("off-by-one", "wrong-operator", "swapped-arguments", "missing-case", "wrong-default")
BUDGET = 200_000  # line events a run may take

_STRICTNESS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_OPERATORS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Div,
              ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
              ast.And: ast.Or, ast.Or: ast.And}


@dataclass(frozen=True)
class Mutant:
    """A program with one injected bug."""

    kind: str  # one of KINDS
    function: str  # the function the change is in
    source: str  # the whole mutated program
    original: str  # the original program's lines around the change
    changed: str  # what stands in their place in the mutant (occurs once in it)


def _offset(lines: list[str], line: int, column: int) -> int:
    """The text offset of a node position (1-based line; column in bytes of ASCII text)."""
    return sum(len(text) for text in lines[:line - 1]) + column


def _int(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, int)
            and not isinstance(node.value, bool))


def _sites(function: ast.FunctionDef) -> Iterator[tuple[str, ast.AST, ast.AST | None]]:
    """(kind, node, replacement or None to delete the statement) for each mutation site."""
    for default in function.args.defaults:
        if _int(default):
            for value in {default.value + 1, max(1, default.value - 1), default.value * 2}:
                if value != default.value:
                    yield "wrong-default", default, ast.Constant(value)
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0])
            for kind, table in (("off-by-one", _STRICTNESS), ("wrong-operator", _OPERATORS)):
                if op in table:
                    changed = copy.deepcopy(node)
                    changed.ops = [table[op]()]
                    yield kind, node, changed
        elif isinstance(node, ast.BinOp | ast.BoolOp) and type(node.op) in _OPERATORS:
            changed = copy.deepcopy(node)
            changed.op = _OPERATORS[type(node.op)]()
            yield "wrong-operator", node, changed
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield "wrong-operator", node, node.operand
        elif _int(node) and node not in function.args.defaults:
            for value in (node.value + 1, node.value - 1):
                yield "off-by-one", node, ast.Constant(value)
        elif (isinstance(node, ast.Call) and len(node.args) >= 2
              and not any(isinstance(arg, ast.Starred) for arg in node.args[:2])
              and ast.dump(node.args[0]) != ast.dump(node.args[1])):
            changed = copy.deepcopy(node)
            changed.args[0], changed.args[1] = changed.args[1], changed.args[0]
            yield "swapped-arguments", node, changed
        elif isinstance(node, ast.If) and not node.orelse:
            yield "missing-case", node, None


def mutants(source: str) -> list[Mutant]:
    """Every single-site mutant of the program's functions other than `main`."""
    if not source.isascii():
        raise ValueError("mutations need an ASCII program (positions are byte columns)")
    tree = pysource.parse(source)
    lines = source.splitlines(keepends=True)
    found = []
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef) or function.name == "main":
            continue
        for kind, node, replacement in _sites(function):
            first, last = node.lineno, node.end_lineno
            if replacement is None:  # delete the whole statement's lines
                text = (source[:_offset(lines, first, 0)]
                        + source[_offset(lines, last + 1, 0):])
            else:
                text = _spliced(source, lines, tree, node, replacement)
                if text is None:
                    continue
            try:
                pysource.parse(text)
            except SyntaxError:
                continue
            if _same_program(text, source):
                continue
            found.append(_located(kind, function.name, source, text, first, last))
    return found


class _Replace(ast.NodeTransformer):
    """Replaces the node at one position by another."""

    def __init__(self, node: ast.AST, replacement: ast.AST) -> None:
        self.where = _position(node)
        self.replacement = replacement

    def visit(self, node: ast.AST) -> ast.AST:
        if hasattr(node, "lineno") and _position(node) == self.where:
            return self.replacement
        return self.generic_visit(node)


def _position(node: ast.AST) -> tuple:
    return (type(node).__name__, getattr(node, "lineno", None), getattr(node, "col_offset", None),
            getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None))


def _spliced(source: str, lines: list[str], tree: ast.Module, node: ast.AST,
             replacement: ast.AST) -> str | None:
    """The program with `node`'s text replaced by `replacement`'s.

    In parentheses where the context needs them; None when neither reads back as the
    intended tree.
    """
    intended = ast.dump(_Replace(node, copy.deepcopy(replacement)).visit(copy.deepcopy(tree)))
    start = _offset(lines, node.lineno, node.col_offset)
    end = _offset(lines, node.end_lineno, node.end_col_offset)
    new = ast.unparse(replacement)
    for candidate in (new, f"({new})"):
        text = source[:start] + candidate + source[end:]
        try:
            if ast.dump(pysource.parse(text)) == intended:
                return text
        except SyntaxError:
            continue
    return None


def _same_program(text: str, source: str) -> bool:
    return ast.dump(pysource.parse(text)) == ast.dump(pysource.parse(source))


def _located(kind: str, function: str, source: str, text: str, first: int,
             last: int) -> Mutant:
    """The mutant, with the smallest block of whole lines around the change.

    The block occurs once in the mutant, so a fix can find it.
    """
    old, new = source.splitlines(keepends=True), text.splitlines(keepends=True)
    delta = len(new) - len(old)
    before, after = first - 1, last
    while True:
        original = "".join(old[before:after])
        changed = "".join(new[before:after + delta])
        if changed and text.count(changed) == 1 and source.count(original) == 1:
            return Mutant(kind, function, text, original, changed)
        before, after = max(0, before - 1), min(len(old), after + 1)


class _OverBudget(Exception):
    pass


def behaviour(source: str, lines: list[str], options: tuple[str, ...]) -> tuple[str, ...] | None:
    """What the program prints for a file of these lines, or None when it fails."""
    namespace: dict = {"__name__": "taskloom_program"}
    steps = 0

    def tracer(frame, event, arg):
        nonlocal steps
        steps += 1
        if steps > BUDGET:
            raise _OverBudget
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        exec(compile(source, "<program>", "exec"), namespace)  # the module docstring says why
        printed = namespace["run"](list(lines), *(int(option) for option in options))
        return tuple(str(line) for line in printed)
    except Exception:  # any failure of the program is its behaviour
        return None
    finally:
        sys.settrace(previous)
