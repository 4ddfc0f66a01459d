"""Parsing Python source safely from any thread.

CPython 3.11 counts the AST converter's recursion depth in one counter per interpreter,
so two threads building trees at once can fail with `SystemError: AST constructor
recursion depth mismatch` (python/cpython#106905). Validation workers are threads and
read each task's checks, so every parse in taskloom goes through `parse`, one at a time.
"""

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse(source: str) -> ast.Module:
    """`ast.parse(source)`, never at the same time as another thread's.

    Raises:
        SyntaxError: The source is not valid Python.
    """
    with _ONE_AT_A_TIME:
        return ast.parse(source)
