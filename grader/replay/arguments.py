"""A launch's arguments against its kernel's parameters, before anything is compiled.

A kernel launched with an argument too few or too many is a common beginner's fault, and
the compilers word it from deep inside: Triton's front end fails on a missing parameter
with a KeyError, the cuTile simulator with a zip() of unequal lengths. The grader
matches them itself, as Python binds a call, and says which parameter is missing, extra or
given twice, at the line of the file that launches the kernel (found in the source text:
the launch itself arrives as data, without a line).

A parameter may be left out where the kernel supplies it: a default, or (Triton) a value
every configuration of its autotuner sets (grader.tracks.contract.KernelReader.optional).
"""

from __future__ import annotations

import ast
from pathlib import Path

from grader import syntax
from grader.quoting import inline


def mismatch(kernel: str, parameters: list[str], optional: set[str], positional: int,
             keywords: list[str]) -> str | None:
    """What is wrong with a launch of `kernel` passing `positional` arguments by position and
    `keywords` (its parameters' names only) by name; None when every parameter gets one."""
    count = f"{len(parameters)} parameter{'s' if len(parameters) != 1 else ''}"
    takes = f"{kernel} takes {count} ({', '.join(parameters)})"
    if positional > len(parameters):
        return (f"the launch passes {positional} arguments by position, but {takes}: pass one "
                f"argument per parameter, in the order of the kernel's `def`")
    twice = [k for k in keywords if k in parameters[:positional]]
    if twice:
        return (f"the launch passes {twice[0]} twice, by position and as `{twice[0]}=`; "
                f"{takes}")
    given = set(parameters[:positional]) | set(keywords)
    missing = [p for p in parameters if p not in given and p not in optional]
    if missing:
        named = " and ".join(missing) if len(missing) < 3 else ", ".join(missing)
        passed = f"{positional} by position" + (f" and {', '.join(keywords)} by name"
                                                 if keywords else "")
        return (f"the launch gives no value for {named}: {takes}, and the launch passes "
                f"{passed}")
    return None


def at_launch(path: Path, kernel: str, message: str) -> str:
    """`message` at the line(s) of `path` that launch `kernel`, where the source shows them."""
    found = sites(path, kernel)
    if len(found) == 1:
        line, text = found[0]
        return f"line {line} ({inline(text)}): {message}"
    if found:  # which of them proposed this launch, the launch (data) does not say
        lines = ", ".join(str(n) for n, _ in found)
        return f"lines {lines} launch {kernel} or hand it to a call: {message}"
    return message


def sites(path: Path, kernel: str) -> list[tuple[int, str]]:
    """The lines that launch `kernel`, with their first line of text: a call of
    `kernel[...]` (Triton's launch) or a call handed `kernel` itself (`ct.launch(stream,
    grid, kernel, args)`)."""
    try:
        source = path.read_text(encoding="utf-8")
        tree = syntax.parse(source, str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    lines = source.splitlines()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _launches(node, kernel):
            found.append((node.lineno, lines[node.lineno - 1].strip()))
    return sorted(set(found))


def _launches(call: ast.Call, kernel: str) -> bool:
    def named(node) -> bool:
        return isinstance(node, ast.Name) and node.id == kernel

    if isinstance(call.func, ast.Subscript) and named(call.func.value):
        return True
    return any(named(a) for a in call.args)


def check_arguments(path: Path, name: str, language, kernel, positional: int, keywords: dict) -> str | None:
    """The launch of `kernel` (named `name` in `path`; `language`: its language's reader
    part, grader.tracks.contract.KernelReader) with `positional` arguments and `keywords` (launch
    options among them) checked against the kernel's parameters: the message at the launch's
    line, or None."""
    parameters = language.parameters(kernel)
    wrong = mismatch(name, parameters, language.optional(kernel), positional,
                     [k for k in keywords if k in parameters])
    return at_launch(path, name, wrong) if wrong else None
