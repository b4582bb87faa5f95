"""Literal expressions of a submission's file, evaluated without running its code.

The replay (grader.replay.kernels) takes a file's top-level constants, its functions'
annotations and defaults, and its decorators' options only when they are literals: numbers,
strings, their arithmetic, tuples, lists and dicts of them, names already bound, attributes
of the kernel languages' modules, and calls of a few pure functions (`tl.constexpr`,
`triton.Config`, `math.sqrt`, `min`). `Literal.value` evaluates such an expression and raises
`NotLiteral` for anything else; sizes are bounded, so no literal can stall the grader.
"""

from __future__ import annotations

import ast
import math
import sys
import types
from typing import Any

from grader.tracks import TRACKS

ALLOWED_MODULES = (*(t.module for t in TRACKS.values()), "math", "numpy", "torch")
SAFE_BUILTINS = {"int": int, "float": float, "bool": bool, "str": str, "min": min, "max": max,
                 "abs": abs, "round": round, "len": len}
_MATH = ("sqrt", "log", "log2", "log10", "exp", "exp2", "pow", "ceil", "floor", "isqrt", "tanh",
         "erf", "cos", "sin", "atan", "fabs")
_LARGEST_INT_BITS = 4096
_LONGEST = 10_000


class NotLiteral(Exception):
    """The expression is not a literal the grader evaluates."""


def allowed_module(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in ALLOWED_MODULES)


class Literal:
    """Evaluates a literal expression: numbers, strings, their arithmetic, tuples, lists and
    dicts of them, names already bound, attributes of the allowed modules, and calls of a
    few pure functions (`tl.constexpr`, `triton.Config`, `math.sqrt`, `min`)."""

    def __init__(self, ns: dict[str, Any], annotations: bool = False):
        self.ns = ns
        self.annotations = annotations  # subscripts such as ct.Constant[int] are allowed

    def value(self, node: ast.expr) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise NotLiteral
        return method(node)

    def _Constant(self, node):  # noqa: N802 - ast's names
        return node.value

    def _Name(self, node):  # noqa: N802
        # A name already bound: a constant, a module, a type such as `ConstInt` (naming it
        # runs nothing; calls are what _pure restricts).
        if node.id in self.ns:
            return self.ns[node.id]
        if node.id in SAFE_BUILTINS:
            return SAFE_BUILTINS[node.id]
        raise NotLiteral

    def _Attribute(self, node):  # noqa: N802
        base = self.value(node.value)
        if node.attr.startswith("_") or not (isinstance(base, types.ModuleType)
                                             or is_trusted(base)):
            raise NotLiteral
        if isinstance(base, types.ModuleType) and not allowed_module(base.__name__):
            raise NotLiteral
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise NotLiteral from None

    def _Subscript(self, node):  # noqa: N802
        if not self.annotations:
            raise NotLiteral
        base = self.value(node.value)
        if not is_trusted(base):
            raise NotLiteral
        return base[self.value(node.slice)]

    def _Tuple(self, node):  # noqa: N802
        return tuple(self.value(e) for e in node.elts)

    def _List(self, node):  # noqa: N802
        return [self.value(e) for e in node.elts]

    def _Dict(self, node):  # noqa: N802
        if any(k is None for k in node.keys):
            raise NotLiteral
        return {self.value(k): self.value(v) for k, v in zip(node.keys, node.values)}

    def _UnaryOp(self, node):  # noqa: N802
        operand = self.value(node.operand)
        ops = {ast.UAdd: lambda x: +x, ast.USub: lambda x: -x, ast.Not: lambda x: not x,
               ast.Invert: lambda x: ~x}
        return ops[type(node.op)](operand)

    def _BinOp(self, node):  # noqa: N802
        left, right = self.value(node.left), self.value(node.right)
        op = type(node.op)
        if op is ast.Pow and isinstance(left, int) and isinstance(right, int):
            if right > _LARGEST_INT_BITS or abs(left).bit_length() * max(right, 0) > _LARGEST_INT_BITS:
                raise NotLiteral
        if op is ast.LShift and (not isinstance(right, int) or right > _LARGEST_INT_BITS):
            raise NotLiteral
        if op is ast.Mult and isinstance(left, (str, tuple, list)) or isinstance(right, (str, tuple, list)):
            count = right if isinstance(left, (str, tuple, list)) else left
            if not isinstance(count, int) or count * len(left if count is right else right) > _LONGEST:
                raise NotLiteral
        ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
               ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
               ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b,
               ast.RShift: lambda a, b: a >> b, ast.BitAnd: lambda a, b: a & b,
               ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b}
        if op not in ops:
            raise NotLiteral
        try:
            return ops[op](left, right)
        except (ArithmeticError, TypeError, ValueError):
            raise NotLiteral from None

    def _Call(self, node):  # noqa: N802
        function = self.value(node.func)
        if not _pure(function):
            raise NotLiteral
        args = [self.value(a) for a in node.args]
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise NotLiteral
            kwargs[keyword.arg] = self.value(keyword.value)
        try:
            return function(*args, **kwargs)
        except (ArithmeticError, TypeError, ValueError):
            raise NotLiteral from None


def is_trusted(value: Any) -> bool:
    """A class or object of the kernel languages' own packages (a dtype, `ct.Constant`)."""
    module = getattr(value, "__module__", None) or type(value).__module__
    return isinstance(module, str) and any(module == m or module.startswith(m + ".")
                                           for m in (*(t.module for t in TRACKS.values()),
                                                     "numpy", "typing"))


def _pure(function: Any) -> bool:
    if function in SAFE_BUILTINS.values() and function is not len:
        return True
    if any(function is getattr(math, name, None) for name in _MATH):
        return True
    if "triton" in sys.modules:
        import triton
        import triton.language as tl

        if function is tl.constexpr or function is triton.Config:
            return True
    return False


