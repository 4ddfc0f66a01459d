"""Python source is parsed one thread at a time (CPython 3.11's AST converter is not
thread-safe: a validation run failed with "AST constructor recursion depth mismatch")."""

import ast
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import taskloom
from taskloom import pysource


def test_parses_from_many_threads_never_overlap(monkeypatch):
    inside, most = 0, 0
    count = threading.Lock()
    real = ast.parse

    def slow_parse(source):
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.01)
        tree = real(source)
        with count:
            inside -= 1
        return tree

    monkeypatch.setattr(ast, "parse", slow_parse)
    with ThreadPoolExecutor(8) as pool:
        trees = list(pool.map(pysource.parse, [f"x = {n}" for n in range(32)]))
    assert most == 1
    assert [tree.body[0].value.value for tree in trees] == list(range(32))


def test_no_module_parses_python_around_the_lock():
    package = Path(taskloom.__file__).parent
    direct = [str(path.relative_to(package)) for path in package.rglob("*.py")
              if path.name != "pysource.py" and "ast.parse(" in path.read_text()]
    assert direct == []
