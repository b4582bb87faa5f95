"""What a kernel file may write where the replay reads it: per language, the modules, the
decorators, the constructors of constants, the annotations, and the built-ins and API a
kernel body may name (the API from a reviewed list: grader.replay.kernel_api).

The replay never evaluates a submission's expressions. It reads names by their *spelling*:
`tl.constexpr` in a file that did `import triton.language as tl` is spelled
"triton.language.constexpr", whatever object that name might hold at run time. Spellings are
looked up in the language's table (a `Spellings`, its reader part's `spellings`), and only the
grader turns a spelling into an object (`lookup`), from the real modules of the kernel
language, by public names.
"""

from __future__ import annotations

import ast
import importlib
import math
import types
from dataclasses import dataclass, field
from typing import Any

from grader.replay.kernel_api import KernelApi
from grader.tracks import TRACKS, wing

# math's numbers, and its functions that take and return numbers and call nothing else.
MATH_NUMBERS = ("pi", "e", "tau", "inf", "nan")
MATH_FUNCTIONS = ("sqrt", "log", "log2", "log10", "exp", "pow", "ceil", "floor", "isqrt", "tanh",
                  "erf", "cos", "sin", "atan", "fabs")
# Attributes no kernel may read of a value, whatever its type: string formatting, which
# walks attributes by name (each language adds the ones that reach its host objects).
HIDDEN_ATTRIBUTES = frozenset({"format", "format_map"})


@dataclass(frozen=True)
class Spellings:
    """One language's table."""

    track: str
    package: str  # the language's own package: a kernel's API lives below it
    api: str  # the API as a student writes it, for messages
    modules: frozenset[str]  # modules a kernel may name, besides `math`
    steps: dict[str, frozenset[str]]  # a module of which a kernel may use only these names
    builtins: frozenset[str]  # Python built-ins a kernel body may name
    host_only: frozenset[str]  # API of the language that belongs to the host, not a kernel
    decorators: dict[str, str]  # spelling -> what the builder makes of it
    annotations: frozenset[str]  # a kernel parameter's annotation, as written
    constant_types: frozenset[str]  # what `ct.Constant[...]` may hold
    homes: tuple[str, ...] = ()  # the modules (and those below them) its API comes from
    hidden: frozenset[str] = frozenset()  # attributes of its values that reach the host
    # What a launch may pass besides the kernel's parameters: compile options that only tune
    # (never one that names a file, a library or the compiler's flags: `ir_override=`,
    # `extern_libs=`, `ptx_options=` would compile another program than the source's).
    launch_options: frozenset[str] = frozenset()
    dtype_class: str = ""  # the spelling of the language's dtype class
    # The spelling of the class that wraps a constant for a kernel (`tl.constexpr`): what a
    # kernel reads of it is its `value`.
    wrapper: str = ""
    options: dict[str, frozenset[str]] = field(default_factory=dict)  # decorator -> keywords
    # A kind of decorator the grader does not rebuild -> why, and what to write instead.
    refused: dict[str, str] = field(default_factory=dict)
    called: frozenset[str] = frozenset()  # kinds of decorator written only as a call
    shown: str = ""  # the decorators the grader rebuilds, as a message lists them
    short: dict[str, str] = field(default_factory=dict)  # a module's prefix -> as files write it
    constant: str = ""  # the annotation subscripted with a constant's type (`ct.Constant[int]`)
    # What of math a kernel body may call, as messages say it: Triton folds math's functions
    # of constants when it compiles; cuTile's compiler takes math's numbers only, and refuses
    # `math.sqrt(...)` in device code.
    math: str = "math's numbers and functions"
    math_functions: bool = True
    # The reviewed list of what a kernel body may name (grader.replay.kernel_api).
    kernel_api: KernelApi | None = None


def short(spelling: str) -> str:
    """A spelling as a file writes it (`tl.load`, `ct.load`), whichever language's it is."""
    for track in TRACKS.values():
        for prefix, written in wing(track).reader.spellings.short.items():
            spelling = spelling.replace(prefix, written)
    return spelling


class Aliases:
    """The names a file's imports bind, each to the module or attribute it spells."""

    def __init__(self, spelled: dict[str, str] | None = None):
        self.spelled: dict[str, str] = dict(spelled or {})  # name -> "triton.language", ...

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]  # `import triton.language` binds `triton`
                self.spelled[alias.asname or top] = alias.name if alias.asname else top
        elif node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    self.spelled[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def spelling(self, node: ast.expr) -> str | None:
        """`tl.constexpr` -> "triton.language.constexpr"; a bare name not imported spells
        itself ("min"); None for anything but a name or a chain of attributes."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.spelled.get(node.id, node.id)
        return ".".join([head, *reversed(parts)])


def is_math(spelling: str) -> bool:
    return spelling in {f"math.{n}" for n in MATH_NUMBERS + MATH_FUNCTIONS}


def module_allowed(spelling: str, table: Spellings) -> bool:
    """Whether `spelling` names a module a kernel of this language may use."""
    return spelling in table.modules or spelling == "math"


class Unknown(Exception):
    """A spelling that names nothing the grader looks up; the message says why."""


def lookup(spelling: str, table: Spellings) -> Any:
    """The object a spelling names, taken from the language's real modules by public names,
    each module on the way one a kernel may use. Raises Unknown."""
    parts = spelling.split(".")
    if parts[0] == "math":
        if len(parts) == 1:
            return math
        if len(parts) == 2 and is_math(spelling):
            if parts[1] in MATH_FUNCTIONS and not table.math_functions:
                raise Unknown(f"{table.package}'s compiler refuses math's functions in a "
                              f"kernel; compute `{spelling}(...)` of a constant on the host and "
                              f"pass it in, or use {table.api}'s own on a tile")
            return getattr(math, parts[1])
        raise Unknown(f"`{spelling}` is not one of math's numbers or plain functions")
    if not module_allowed(parts[0], table):
        raise Unknown(f"`{parts[0]}` is a module of the host, not of {table.package}")
    value: Any = importlib.import_module(parts[0])
    for index, part in enumerate(parts[1:], 1):
        here = ".".join(parts[:index])
        if part.startswith("_"):
            raise Unknown(f"`{spelling}` reaches a private name")
        if here in table.steps and part not in table.steps[here]:
            raise Unknown(f"`{here}.{part}` is not part of {table.package}'s kernel API")
        if isinstance(value, types.ModuleType) and not module_allowed(here, table):
            raise Unknown(f"`{here}` is not a module a kernel may use")
        try:
            value = getattr(value, part)
        except AttributeError:
            try:  # a submodule not imported yet
                value = importlib.import_module(".".join(parts[:index + 1]))
            except ImportError:
                raise Unknown(f"`{spelling}` does not exist") from None
    if isinstance(value, types.ModuleType) and not module_allowed(value.__name__, table):
        raise Unknown(f"`{spelling}` is a module a kernel may not use")
    return value


def home(value: Any) -> str:
    """The module an object of the language comes from (a kernel language wraps its
    functions: Triton's JIT and interpreted functions keep theirs in `fn`)."""
    inner = value
    for _ in range(4):
        wrapped = getattr(inner, "fn", None)
        if wrapped is None or isinstance(inner, types.FunctionType):
            break
        inner = wrapped
    module = getattr(inner, "__module__", None)
    if not isinstance(module, str):
        module = type(value).__module__
    return module


def part_of_language(value: Any, spelling: str, table: Spellings) -> bool:
    """Whether `value`, reached by `spelling`, is the language's own API (or math's): no
    module or object re-exported from elsewhere, nothing of the host."""
    if spelling in table.host_only or any(spelling.startswith(h + ".") for h in table.host_only):
        return False
    if isinstance(value, types.ModuleType):
        return module_allowed(value.__name__, table)
    if spelling.startswith("math."):
        return is_math(spelling)
    if isinstance(value, (int, float, bool, str)) and not isinstance(value, type):
        return True  # a number the language defines, such as a limit
    origin = home(value)
    return origin == table.package or any(origin == h or origin.startswith(h + ".")
                                          for h in table.homes)


def check_launch(parameters: list[str], options: dict, table: Spellings) -> None:
    """Refuse a launch keyword that is neither a parameter of the kernel nor one of the
    language's tuning options; raises ValueError, with the message for the student."""
    extra = sorted(set(options) - set(parameters) - table.launch_options)
    if extra:
        allowed = ", ".join(f"{o}=" for o in sorted(table.launch_options)) or "none"
        raise ValueError(f"`{extra[0]}=` is not a launch option the grader replays: a launch "
                         f"passes the kernel's parameters, and the options {allowed}")
