"""A submission's constants, read as data: never evaluated, nothing of the file called.

The replay takes a file's top-level constants, its kernels' annotations and defaults, and
its decorators' options only when they are written as data (`LiteralReader.constant`):

- a number, bool, string or None; a tuple, list or dict of data (a list is read as a
  tuple: a constant cannot change while kernels run);
- arithmetic on numbers, and a name already read as a constant;
- a dtype of the kernel language by its plain spelling (`tl.float16`, `ct.float32`), one
  of its enum members (`ct.PaddingMode.ZERO`), one of math's numbers (`math.pi`);
- a short fixed list of constructors applied to data: the language's own (its reader part's
  `constructors`: `tl.constexpr(64)`, `triton.Config({...}, num_warps=4)`,
  `ct.ByTarget(...)`), math's plain functions and `min`, `max`, `abs`, `int`, `float`,
  `round`, `bool` of numbers. A refusal lists those of the file's own language.

Names are read by their spelling through the file's imports (grader.replay.spellings): no
attribute of anything is fetched but the kernel language's public names, and every
argument is checked to be data before the grader's own constructor is called with it. A
function, a lambda, a keyword that takes a callable, a call of anything else, `*args`:
refused with `NotData`, whose message names the line and what to write instead. Reading a
constant costs little whatever it says: integers, strings and containers have a size
bound, and so has every operation on them (a power, a shift, round's digits).

What a kernel itself sees of a constant is frozen (`changeable` says what is not): a
number, bool, string or None, a dtype or enum member, a tuple of these, or the language's
wrapper of one (`tl.constexpr(64)`). A dict is data where a decorator reads it
(`triton.Config({...})`), never where a kernel does: Triton's interpreter runs a launch's
programs one after another in one process, so a container a kernel could change would
carry state from one program to the next, which no GPU does.
"""

from __future__ import annotations

import ast
import enum
import math
from typing import Any, Callable

from grader.replay.spellings import Aliases, Spellings, Unknown, is_math, lookup, short
from grader.tracks import wing

_LARGEST_INT_BITS = 4096
# round(n, -d) of an integer computes 10**d: past 1300 digits (more than 2**4096 has) every
# integer the grader reads rounds to 0, and a larger d would only cost time.
_ROUND_DIGITS = 1300
_LONGEST = 10_000  # characters of a string, items of a container
_NUMBERS = (int, float, bool)
_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b, ast.Pow: lambda a, b: a ** b,
    ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.UAdd: lambda x: +x, ast.USub: lambda x: -x, ast.Not: lambda x: not x,
    ast.Invert: lambda x: ~x}
_NUMBER_BUILTINS = {"min": min, "max": max, "abs": abs, "int": int, "float": float,
                    "round": round, "bool": bool}


class NotData(Exception):
    """An expression the grader does not read as a constant: `str()` is the message, at
    the line, with what to write instead."""

    def __init__(self, node: ast.AST, why: str):
        super().__init__(why)
        self.line = getattr(node, "lineno", 0)
        self.why = why


class TooCostly(NotData):
    """A literal whose reading (or Python's own evaluation) would cost without bound."""


def costly(tree: ast.AST) -> TooCostly | None:
    """An expression of `tree` made of literals alone that would take Python without end to
    compute (`round(1, -(1 << 4000))`), refused as the grader's reading refuses it; None where
    there is none. A file is checked so before any of it runs: the process that imports a
    submission would compute it first. Every node is read once, the deepest first, so a
    long chain of operators costs its length, not its square, and no deep recursion."""
    reader = _Remembering()
    for node in reversed(list(ast.walk(tree))):  # every node after all the nodes below it
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call)):
            try:
                reader.constant(node)
            except TooCostly as exc:
                return exc
            except (NotData, ArithmeticError, ValueError, TypeError, RecursionError):
                pass  # not literals alone: Python computes it, under the time limit
    return None


class LiteralReader:
    """Reads the data of one file: `aliases` its imports, `constants` the top-level
    constants read so far (name -> value), `table` its language's spellings (None: numbers
    only, as `costly` reads them)."""

    def __init__(self, aliases: Aliases, constants: dict[str, Any], table: Spellings | None):
        self.aliases, self.constants, self.table = aliases, constants, table

    # --- constants ----------------------------------------------------------------------

    def constant(self, node: ast.expr) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise NotData(node, f"`{shown(node)}` is not a constant the grader reads: write "
                                f"{self._what_is_data()}")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Any:  # noqa: N802 - ast's names
        value = node.value
        if value is not None and type(value) not in (*_NUMBERS, str):
            raise NotData(node, f"a {type(value).__name__} is not a constant the grader reads")
        return _bounded(value, node)

    def _Name(self, node: ast.Name) -> Any:  # noqa: N802
        if node.id in self.constants:
            return self.constants[node.id]
        if node.id in self.aliases.spelled:
            return self._named(node)
        raise NotData(node, f"`{node.id}` is not a constant of this file written as data "
                            f"({self._what_is_data()})")

    def _Attribute(self, node: ast.Attribute) -> Any:  # noqa: N802
        return self._named(node)

    def _named(self, node: ast.expr) -> Any:
        """A dtype, enum member or math number, by its spelling."""
        spelling = self.aliases.spelling(node)
        if spelling is not None and self.table and (spelling.startswith(self.table.package + ".")
                                     or spelling.startswith("math.")):
            try:
                value = lookup(spelling, self.table)
            except Unknown:
                value = None
            if is_dtype(value, self.table) or isinstance(value, enum.Enum) or (
                    spelling.startswith("math.") and isinstance(value, float)):
                return value
        raise NotData(node, f"`{shown(node)}` is not a constant the grader reads: a name may "
                            "be a dtype of the kernel language (tl.float16, ct.float32), one of "
                            "its enum members, a math number (math.pi), or a constant above it "
                            "written as data")

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:  # noqa: N802
        operand = self._number(node.operand)
        return _bounded(_UNARY[type(node.op)](operand), node)

    def _BinOp(self, node: ast.BinOp) -> Any:  # noqa: N802
        left, right = self._number(node.left), self._number(node.right)
        op = type(node.op)
        if op is ast.Pow and isinstance(left, int) and isinstance(right, int) and (
                right > _LARGEST_INT_BITS
                or abs(left).bit_length() * max(right, 0) > _LARGEST_INT_BITS):
            raise TooCostly(node, "this power is too large to be a constant")
        if op in (ast.LShift, ast.RShift) and (not isinstance(right, int)
                                               or right > _LARGEST_INT_BITS):
            raise TooCostly(node, "this shift is too large to be a constant")
        if op not in _OPERATORS:
            raise NotData(node, "this operator is not read in a constant (`+ - * / // % ** "
                                "<< >> & | ^` are)")
        try:
            return _bounded(_OPERATORS[op](left, right), node)
        except (ArithmeticError, ValueError) as exc:
            raise NotData(node, f"this arithmetic fails ({type(exc).__name__})") from None

    def _number(self, node: ast.expr) -> Any:
        value = self.constant(node)
        if type(value) not in _NUMBERS:
            raise NotData(node, "arithmetic in a constant is on numbers only")
        return value

    def _Tuple(self, node: ast.Tuple) -> tuple:  # noqa: N802
        return _bounded(tuple(self.constant(e) for e in node.elts), node)

    _List = _Tuple  # a constant never changes while kernels run: its list is a tuple

    def _Dict(self, node: ast.Dict) -> dict:  # noqa: N802
        found = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                raise NotData(node, "`**` is not read in a constant: write each entry")
            name = self.constant(key)
            if not isinstance(name, str):
                raise NotData(key, "a dict in a constant has string keys")
            found[name] = self.constant(value)
        return _bounded(found, node)

    def _Call(self, node: ast.Call) -> Any:  # noqa: N802
        spelling = self.aliases.spelling(node.func) or shown(node.func)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise NotData(node, "`*` and `**` are not read in a constant: write each argument")
        constructor = wing(self.table.track).reader.constructors.get(spelling) if self.table else None
        if constructor is not None:  # the language's own (tl.constexpr, triton.Config, ...)
            return constructor(self, node, spelling)
        if is_math(spelling) or spelling in _NUMBER_BUILTINS and spelling not in self.constants:
            function = getattr(math, spelling[5:]) if is_math(spelling) \
                else _NUMBER_BUILTINS[spelling]
            if node.keywords:
                raise NotData(node, f"`{spelling}` takes no keywords in a constant")
            args = [self._number(a) for a in node.args]
            if spelling == "round" and len(args) == 2 and type(args[0]) is int \
                    and abs(args[1]) > _ROUND_DIGITS:
                raise TooCostly(node, f"round's digits are at most {_ROUND_DIGITS} in a constant")
            try:
                return _bounded(function(*args), node)
            except (ArithmeticError, ValueError, TypeError) as exc:
                raise NotData(node, f"`{shown(node)}` fails ({type(exc).__name__})") from None
        raise NotData(node, f"`{shown(node)}` calls `{spelling}`, which the grader does not "
                            "run to read a constant: write its value as a number, or use one "
                            f"of {self._readable_calls()}")

    def _what_is_data(self) -> str:
        """What a constant may be, with this file's language's spelling of a dtype."""
        written = next(iter(self.table.short.values()), "") if self.table else ""
        return (f"a number, a string, True/False/None, a tuple of these, a dtype such as "
                f"{written}float16, or one of these calls on them: {self._readable_calls()}")

    def _readable_calls(self) -> str:
        """The calls a constant of this file's language may hold, as the file writes them:
        the language's constructors (one spelling each), then math's and the builtins."""
        first: dict[Callable, str] = {}
        for spelling, constructor in (wing(self.table.track).reader.constructors.items()
                                      if self.table else ()):
            first.setdefault(constructor, f"{short(spelling)}(...)")
        return ", ".join([*first.values(), "math's functions", *_NUMBER_BUILTINS])

    def positional(self, node: ast.Call, count: int | None, spelling: str) -> list:
        """A call's positional arguments, read as data (`count` of them, and no keyword,
        where it is given)."""
        if count is not None and (len(node.args) != count or node.keywords):
            raise NotData(node, f"`{spelling}` takes {count} plain argument here")
        return [self.constant(a) for a in node.args]

    def keywords(self, node: ast.Call, allowed: frozenset[str] | None = None) -> dict:
        """A call's keywords, read as data (each one of `allowed`, where it is given)."""
        found = {}
        for keyword in node.keywords:
            if allowed is not None and keyword.arg not in allowed:
                raise NotData(keyword.value, f"`{keyword.arg}=` is not an option the grader "
                                             f"reads (only {', '.join(sorted(allowed))})")
            found[keyword.arg] = self.constant(keyword.value)
        return found

    # --- annotations --------------------------------------------------------------------

    def annotation(self, node: ast.expr) -> Any:
        """A kernel parameter's annotation: one of the language's (tl.constexpr,
        ct.Constant[int], int, ...), or a constant of the file that holds one."""
        if isinstance(node, ast.Name) and node.id in self.constants \
                and node.id not in self.aliases.spelled:
            value = self.constants[node.id]
            if _is_annotation(value):
                return value
        spelling = self.aliases.spelling(node)
        if spelling in self.table.annotations:
            return _BUILTIN_TYPES[spelling] if spelling in _BUILTIN_TYPES \
                else lookup(spelling, self.table)
        if isinstance(node, ast.Subscript):
            base = self.aliases.spelling(node.value)
            inner = self.aliases.spelling(node.slice)
            if base == self.table.constant and inner in self.table.constant_types:
                return lookup(base, self.table)[_BUILTIN_TYPES[inner]]
        allowed = ", ".join(sorted(short(a) for a in self.table.annotations))
        raise NotData(node, f"`{shown(node)}` is not an annotation the grader reads: write one "
                            f"of {allowed}" + (f", {short(self.table.constant)}[int]"
                                               if self.table.constant_types else ""))


_BUILTIN_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def _is_annotation(value: Any) -> bool:
    """A value the annotation reader made (`ConstInt = ct.Constant[int]` above a kernel)."""
    # by identity: a value's own __eq__ (triton.Config's) is not the grader's to call
    return type(value).__module__ == "typing" or any(value is t for t in _BUILTIN_TYPES.values())


def is_dtype(value: Any, table: Spellings) -> bool:
    if value is None or not table.dtype_class:
        return False
    try:
        return isinstance(value, lookup(table.dtype_class, table))
    except Unknown:
        return False


class _Remembering(LiteralReader):
    """A reader of numbers alone that reads each node once, and remembers what came of it."""

    def __init__(self):
        super().__init__(Aliases(), {}, None)
        self.read: dict[int, tuple[bool, Any]] = {}  # id(node) -> (read, value or exception)

    def constant(self, node: ast.expr) -> Any:
        if id(node) not in self.read:
            try:
                self.read[id(node)] = (True, super().constant(node))
            except (NotData, ArithmeticError, ValueError, TypeError, RecursionError) as exc:
                self.read[id(node)] = (False, exc)
        done, value = self.read[id(node)]
        if not done:
            raise value
        return value


def changeable(value: Any, table: Spellings) -> str | None:
    """What of `value` could change while kernels run, in words ("a dict"); None where a
    kernel may see it: a number, bool, string or None, a dtype or enum member of the
    language, an annotation (`ct.Constant[int]`), a tuple of these, or the language's wrapper
    of one (`tl.constexpr`)."""
    if value is None or type(value) in (*_NUMBERS, str) or isinstance(value, enum.Enum) \
            or is_dtype(value, table) or _is_annotation(value):
        return None
    if type(value) is tuple:
        return next((why for item in value if (why := changeable(item, table))), None)
    if table.wrapper and isinstance(value, lookup(table.wrapper, table)):
        return changeable(value.value, table)
    return f"a {type(value).__name__}"


def frozen(value: Any, node: ast.AST, table: Spellings) -> Any:
    """`value`, which a kernel will see; NotData where it could change while kernels run."""
    why = changeable(value, table)
    if why:
        raise NotData(node, f"`{shown(node)}` holds {why}, which a kernel could change while it "
                            f"runs: {FROZEN}")
    return value


# What a kernel may see of a constant, as messages say it.
FROZEN = ("a kernel sees only values that cannot change (numbers, strings, True/False/None, "
          "dtypes, and tuples of these)")


def _bounded(value: Any, node: ast.AST) -> Any:
    """`value`, refused when it is too large to be a constant (so that no literal can
    stall the grader)."""
    if isinstance(value, int) and not isinstance(value, bool) \
            and value.bit_length() > _LARGEST_INT_BITS:
        raise NotData(node, "this integer is too large to be a constant")
    if isinstance(value, (str, tuple, dict)) and len(value) > _LONGEST:
        raise NotData(node, "this constant is too long")
    return value


def shown(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 3] + "..."
