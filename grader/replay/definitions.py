"""A kernel made from its `def`: the function compiled bare, its annotations and defaults
read as data, its decorators recognised by spelling and applied by the grader with options
read as data (grader.replay.kernels decides what is a kernel; this makes one)."""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

from grader import syntax
from grader.replay.literals import NotData, LiteralReader, frozen
from grader.tracks import TRACKS, wing


def options(call: ast.Call, allowed: frozenset[str], reader: LiteralReader) -> dict[str, Any]:
    """A decorator's (or replace_hints') keywords, each an option the grader knows and its
    value data."""
    found = {}
    for keyword in call.keywords:
        if keyword.arg is None or keyword.arg not in allowed:
            raise NotData(call, f"`{keyword.arg or '**'}=` is not an option the grader "
                                f"rebuilds (only data options are: "
                                f"{', '.join(sorted(allowed)) or 'none'})")
        found[keyword.arg] = reader.constant(keyword.value)
    return found


def bare_function(node: ast.FunctionDef, reader: LiteralReader, module: types.ModuleType,
                  flags: int) -> types.FunctionType:
    """The function of `node`, its globals `module`'s namespace, with its annotations and
    defaults read as data (a default frozen: grader.replay.literals.changeable), compiled without decorators, defaults or annotations: defining
    it runs nothing."""
    args = node.args
    annotations = {a.arg: reader.annotation(a.annotation)
                   for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
                   if a.annotation is not None}
    # A default is a value the kernel sees: frozen, as a constant it names
    defaults = tuple(frozen(reader.constant(d), d, reader.table) for d in args.defaults)
    kwdefaults = {a.arg: frozen(reader.constant(d), d, reader.table)
                  for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    bare = ast.FunctionDef(
        name=node.name, args=_without_defaults(args), body=node.body, decorator_list=[],
        returns=None, type_comment=None,
        **({"type_params": []} if sys.version_info >= (3, 12) else {}))
    ast.copy_location(bare, node)
    code = syntax.compile_tree(ast.fix_missing_locations(ast.Module([bare], [])),
                               module.__file__, flags)
    scratch = dict(module.__dict__)  # defining it binds its name: not in the kernels' namespace
    exec(code, scratch)  # defines the function; its body does not run  # noqa: S102
    function = types.FunctionType(scratch[node.name].__code__, module.__dict__, node.name)
    function.__annotations__ = annotations
    function.__defaults__ = defaults or None
    function.__kwdefaults__ = kwdefaults or None
    function.__module__ = module.__name__
    function.__qualname__ = node.name
    return function


def decorate(node: ast.expr, function: Any, reader: LiteralReader, interpreted: bool) -> Any:
    """`function` under the decorator `node`, applied by the grader (by the language's wing);
    `interpreted`: the kernel as the CPU backend runs it."""
    table = reader.table
    call = node if isinstance(node, ast.Call) else None
    spelling = reader.aliases.spelling(call.func if call else node) or ""
    kind = table.decorators.get(spelling)
    if kind in table.refused:
        raise NotData(node, table.refused[kind])
    if kind is None or (kind in table.called and call is None):
        shown = ", ".join(wing(track).reader.spellings.shown for track in TRACKS.values())
        raise NotData(node, f"this decorator is not one the grader rebuilds ({shown})")
    if call is not None and call.args:
        raise NotData(node, "a decorator's arguments must be given by keyword")
    given = options(call, table.options.get(kind, frozenset()), reader) if call else {}
    return wing(table.track).reader.decorate(function, spelling, given, node, interpreted)


def _without_defaults(args: ast.arguments) -> ast.arguments:
    def bare(a: ast.arg) -> ast.arg:
        return ast.copy_location(ast.arg(arg=a.arg, annotation=None), a)

    return ast.arguments(posonlyargs=[bare(a) for a in args.posonlyargs],
                         args=[bare(a) for a in args.args],
                         vararg=args.vararg and bare(args.vararg),
                         kwonlyargs=[bare(a) for a in args.kwonlyargs],
                         kw_defaults=[None] * len(args.kwonlyargs),
                         kwarg=args.kwarg and bare(args.kwarg), defaults=[])
