"""What a kernel body may name, checked from its source before any kernel is built.

A kernel body is run by the kernel language, never by the grader: compiled by Triton's code
generator or cuTile's front end (both of which call the Python functions a body names, and
cuTile's `static_eval` evaluates Python), or run as plain Python by Triton's interpreter and
the cuTile simulator. So a body may name only what belongs to the kernel language, and
`check` reads every name and attribute in it first:

- its own parameters and variables; the file's kernels and helpers (only called, never read
  as objects); the file's constants (read as data, grader.replay.literals), never changed:
  no method of one called, nothing stored into one;
- the kernel language's modules (and math's numbers and plain functions), each attribute
  chain on them looked up by spelling and kept only if the language's reviewed list names
  it (grader.replay.kernel_api) and it is the language's own API, not a module or object of
  the host (grader.replay.spellings);
- a few Python built-ins the language itself gives a meaning (`range`, `min`, ...);
- on any other value (a tile, a tensor), no private attribute and none of the few that
  reach the host (a tensor's `handle`, string formatting); no attribute is ever assigned.

No import, `global`, class or nested `def` in a body. Every refusal names the line and
says what a kernel may use instead.
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass, field
from typing import Any

from grader.replay.literals import FROZEN, shown
from grader.replay.spellings import (HIDDEN_ATTRIBUTES, Aliases, Spellings, Unknown, lookup,
                                     part_of_language, short)
from grader.tracks import TRACKS

_STATEMENTS_REFUSED = {
    ast.Import: "an import", ast.ImportFrom: "an import", ast.Global: "`global`",
    ast.Nonlocal: "`nonlocal`", ast.ClassDef: "a class", ast.FunctionDef: "a nested `def`",
    ast.AsyncFunctionDef: "a nested `def`", ast.AsyncFor: "`async for`",
    ast.AsyncWith: "`async with`", ast.Await: "`await`", ast.Yield: "`yield`",
    ast.YieldFrom: "`yield`", ast.Try: "`try`", ast.With: "`with`", ast.Delete: "`del`",
}


class BodyRefused(Exception):
    """What a kernel body may not do; `str()` is the message, at `line`."""

    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line = line


@dataclass
class FileNames:
    """The top-level names of a file, by what the replay made of them."""

    constants: set[str] = field(default_factory=set)  # read as data
    kernels: set[str] = field(default_factory=set)  # decorated functions, and names for them
    helpers: dict[str, ast.FunctionDef] = field(default_factory=dict)  # undecorated functions
    skipped: dict[str, int] = field(default_factory=dict)  # name -> line of host code
    not_data: dict[str, str] = field(default_factory=dict)  # name -> why it is not data
    # name -> (line, what of it could change): data a kernel may not see (a dict)
    changeable: dict[str, tuple[int, str]] = field(default_factory=dict)


def check_body(function: ast.FunctionDef, names: FileNames, aliases: Aliases,
          table: Spellings, helpers_allowed: bool) -> set[str]:
    """Raise BodyRefused at the first thing `function`'s body may not name; else the file's
    undecorated helpers it calls (allowed only with `helpers_allowed`: where the language
    compiles them as tile code, not where it would call them as Python while compiling)."""
    walker = _Walker(names, aliases, table, _locals(function), helpers_allowed)
    for statement in function.body:
        walker.visit(statement)
    return walker.helpers_used


def _locals(function: ast.FunctionDef) -> set[str]:
    """Every name the function binds anywhere in its body (its parameters too)."""
    found = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
        elif isinstance(node, ast.Lambda):
            found |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
    return found


class _Walker(ast.NodeVisitor):
    def __init__(self, names: FileNames, aliases: Aliases, table: Spellings, local: set[str],
                 helpers_allowed: bool):
        self.names, self.aliases, self.table, self.local = names, aliases, table, local
        self.helpers_allowed = helpers_allowed
        self.helpers_used: set[str] = set()

    def generic_visit(self, node: ast.AST) -> None:
        refused = _STATEMENTS_REFUSED.get(type(node))
        if refused:
            raise BodyRefused(node.lineno, f"{refused} inside a kernel: a kernel body holds tile "
                                       "code only (imports, classes and helper functions "
                                       "belong at the top level of the file)")
        super().generic_visit(node)

    # --- names ----------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:  # noqa: N802 - ast's names
        """A name used as a value: never a module (a local bound to one would reach any of
        its attributes unchecked) and never a kernel of the file, except where a call takes
        it (`visit_Call`)."""
        if not isinstance(node.ctx, ast.Load):
            return
        kind = self.name(node)
        if kind == "module" and isinstance(self.api(self.aliases.spelled[node.id], node),
                                           types.ModuleType):
            raise BodyRefused(node.lineno, f"`{node.id}` is a module: a kernel uses what it holds "
                                       f"(`{node.id}.name`), never the module itself as a value")
        if kind == "kernel":
            raise BodyRefused(node.lineno, f"`{node.id}`: a kernel of this file is called (or "
                                       "passed to a call, as a combine function), never kept "
                                       "as a value")

    def visit_Call(self, node: ast.Call) -> None:  # noqa: N802
        """A call may name a kernel of the file, and pass one (`tl.reduce(x, 0, combine)`);
        it never calls a method of a constant (a kernel reads a constant, and that is all)."""
        constant = self.constant_under(node.func) if isinstance(node.func, ast.Attribute) \
            else None
        if constant:
            raise BodyRefused(node.lineno, f"`{shown(node)}` calls a method of the constant "
                                       f"`{constant}`: a kernel reads a constant's value and "
                                       "never calls anything on it (a call could change it "
                                       "while kernels run); compute what you need in the "
                                       "kernel, or in your wrapper and pass it as an argument")
        for part in (node.func, *node.args, *(k.value for k in node.keywords)):
            if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Load) \
                    and self.name(part) == "kernel":
                continue
            self.visit(part)

    def name(self, node: ast.Name) -> str:
        """What a loaded name is: "local", "constant", "kernel", "module" or "builtin"."""
        name, names = node.id, self.names
        if name in self.local:
            return "local"
        if name in names.constants:
            return "constant"
        if name in names.changeable:
            line, why = names.changeable[name]
            raise BodyRefused(node.lineno, f"`{name}` (line {line}) holds {why}, which a kernel could "
                                       f"change while it runs: {FROZEN}; write `{name}` as one of "
                                       "these, or pass the value to the kernel as an argument")
        if name in names.kernels:
            return "kernel"
        if name in names.helpers:
            if not self.helpers_allowed:
                marked = TRACKS[self.table.track].decorator
                raise BodyRefused(node.lineno, f"`{name}` is a function of this file without "
                                           f"{marked}: a kernel may call only kernels and "
                                           f"{marked} helpers (decorate `{name}` with "
                                           f"{marked})")
            self.helpers_used.add(name)
            return "kernel"
        if name in self.aliases.spelled:
            spelled = self.aliases.spelled[name]
            self.api(spelled, node)
            return "module"
        if name in self.table.builtins:
            return "builtin"
        if name in names.not_data:
            raise BodyRefused(names.skipped[name], f"`{name}` is used by a kernel, so it must be a "
                                               f"constant written as data: {names.not_data[name]}")
        if name in names.skipped:
            raise BodyRefused(node.lineno, f"`{name}` is bound at line {names.skipped[name]} by "
                                       "top-level code the grader does not run: a kernel may "
                                       "use only top-level constants written as data (numbers, "
                                       "strings, tl.constexpr(...)), other kernels and helper "
                                       "functions")
        raise BodyRefused(node.lineno, f"`{name}` is not something a kernel may use: a kernel may "
                                   "use its parameters and variables, "
                                   f"{self.table.api} and math, the "
                                   "file's kernels and constants, and the built-ins "
                                   f"{', '.join(sorted(self.table.builtins))}")

    def api(self, spelling: str, node: ast.AST) -> Any:
        """What a spelling names; refused unless it is on the kernel language's reviewed list
        (grader.replay.kernel_api) and the language's own API, or math's."""
        try:
            value = lookup(spelling, self.table)
        except Unknown as exc:
            raise BodyRefused(node.lineno, f"`{short(spelling)}` cannot be used in a kernel: "
                                       f"{exc}; a kernel may use {self.table.api} (the kernel "
                                       "language's own functions, types and dtypes) and "
                                       f"{self.table.math}") from None
        listed = self.table.kernel_api
        if listed is not None and spelling.split(".")[0] != "math" \
                and not listed.allows(spelling):
            raise BodyRefused(node.lineno, f"`{short(spelling)}` cannot be used in a kernel: "
                                       f"{listed.refusal(spelling)}")
        if not part_of_language(value, spelling, self.table):
            raise BodyRefused(node.lineno, f"`{short(spelling)}` cannot be used in a kernel: it is "
                                       f"not part of {self.table.package}'s kernel API; a kernel "
                                       f"may use {self.table.api} (the kernel language's own "
                                       f"functions, types and dtypes) and {self.table.math}")
        return value

    def visit_Subscript(self, node: ast.Subscript) -> None:  # noqa: N802
        """An element of a constant is read, never stored."""
        constant = self.constant_under(node) if not isinstance(node.ctx, ast.Load) else None
        if constant:
            raise BodyRefused(node.lineno, f"`{shown(node)}` is stored into the constant "
                                       f"`{constant}`: a kernel never changes a constant; store "
                                       "results in a tensor the kernel is given")
        self.generic_visit(node)

    def constant_under(self, node: ast.expr) -> str | None:
        """The file's constant at the root of `S.value[0]` or `S.value.pop`, if it is one."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        if isinstance(node, ast.Name) and node.id not in self.local \
                and node.id in self.names.constants:
            return node.id
        return None

    # --- attributes -----------------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> None:  # noqa: N802
        if not isinstance(node.ctx, ast.Load):
            raise BodyRefused(node.lineno, f"`{ast.unparse(node)}` is assigned inside a kernel: a "
                                       "kernel changes no attribute of anything")
        chain, base = [], node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        chain.reverse()
        if isinstance(base, ast.Name) and base.id not in self.local:
            kind = self.name(base)
            if kind == "module":
                if isinstance(self.api(self.aliases.spelling(node), node), types.ModuleType):
                    raise BodyRefused(node.lineno, f"`{ast.unparse(node)}` is a module: a kernel uses "
                                               "what it holds, never the module itself as a "
                                               "value")
                return
            if kind == "kernel":
                raise BodyRefused(node.lineno, f"`{ast.unparse(node)}`: a kernel of this file is "
                                           "called, never read as an object")
        for attr in chain:
            if attr.startswith("_") or attr in HIDDEN_ATTRIBUTES | self.table.hidden:
                raise BodyRefused(node.lineno, f"`.{attr}` cannot be used in a kernel: a kernel "
                                           "reads only the public attributes of tiles, arrays "
                                           "and dtypes (a tensor's data is not reachable "
                                           "from a kernel as a host object)")
        if not isinstance(base, ast.Name):
            self.visit(base)

