"""Python source read into a syntax tree, one parse at a time in the grader's processes.

CPython 3.11 counts the depth of the tree it is building in one place per interpreter, not
per thread. Two threads parsing at once (a batch's workers each reading a student's files, a
later stage read beside an earlier one's cases) can each see the other's count, and one of
them fails with SystemError "AST constructor recursion depth mismatch" (reproduced with two
threads parsing while the garbage collector ran finalizers; CPython 3.12 keeps the count per
parse). Every parse and compile of a tree the grader makes goes through one lock here.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_ONE_AT_A_TIME = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(source, filename)`, never beside another thread's parse or compile here."""
    with _ONE_AT_A_TIME:
        return ast.parse(source, filename)


def compile_tree(tree: ast.Module, filename: str, flags: int) -> CodeType:
    """`compile(tree, filename, "exec", flags, dont_inherit=True)`, under the same lock:
    turning a tree back into CPython's own counts its depth the same way."""
    with _ONE_AT_A_TIME:
        return compile(tree, filename, "exec", flags=flags, dont_inherit=True)
