"""Reading a submission before it runs: imports and calls a kernel submission has no business
making (the lists are course content: [submissions] in course.toml).

This is a speed bump against deliberate cheating, not a wall: Python offers more ways to
reach a module or a builtin than any list names. The wall is the sandbox (grader/sandbox)
and the checks of what the call did (grader/sandbox/host.py, grader/sandbox/launches.py). What it buys is a
clear message, at the line, for the obvious routes: numpy doing the work, a thread the
grader's watch does not see, the grader's own modules patched from inside.
"""

from __future__ import annotations

import ast

from grader import syntax
from grader.course import SubmissionRules
from grader.quoting import inline
from grader.replay.literals import costly

SHOWN = 5  # findings listed in the message


class Endless(Exception):
    """Literals whose computing would not end (Python would compute them as the file loads):
    the file fails before any of it runs; `str()` names the line and why."""


class SourceUnreadable(Exception):
    """A source Python itself cannot parse in the grader (nested too deeply, too large):
    not graded, since nothing can check it before it runs."""


def screen(source: str, filename: str, rules: SubmissionRules) -> list[str]:
    """What the source does that the rules forbid, one line each ("line N: ..."); a source
    that does not parse gives none (loading it reports the syntax error). Raises SourceUnreadable
    for a source whose parse exhausts the parser itself, or that holds a null byte, and
    Endless for one whose literals would take without end to compute."""
    if "\0" in source:  # no Python reads it (a SyntaxError or a ValueError, by version)
        line = source.count("\n", 0, source.index("\0")) + 1
        raise SourceUnreadable(f"line {line} of {filename} holds a null byte, which Python cannot "
                         "read; save the file as plain text.")
    try:
        tree = syntax.parse(source, filename)
    except SyntaxError:
        return []
    except (RecursionError, MemoryError, ValueError) as exc:
        raise SourceUnreadable(_unreadable(source, filename, exc)) from None
    lines = source.splitlines()
    endless = costly(tree)
    if endless:
        text = lines[endless.line - 1].strip() if 0 < endless.line <= len(lines) else ""
        raise Endless(f"{filename}, line {endless.line}: {inline(text)}: {endless.why}; it "
                      "would take Python practically forever to compute (a constant is read "
                      "as data before anything runs): write its value")
    found: dict[int, str] = {}

    def note(node: ast.AST, what: str) -> None:
        text = lines[node.lineno - 1].strip() if node.lineno <= len(lines) else ""
        found.setdefault(node.lineno, f"{filename}, line {node.lineno}: {inline(text)}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _forbidden(alias.name, rules):
                    note(node, f"a kernel submission may not import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            hit = next((m for m in modules if _forbidden(m, rules)), None)
            if hit:
                note(node, f"a kernel submission may not import {hit}")
        elif isinstance(node, ast.Name):
            if node.id in rules.forbidden_calls:
                note(node, f"a kernel submission may not use {node.id}()")
            elif _dunder(node.id) and node.id not in rules.allowed_dunders:
                note(node, f"a kernel submission may not use {node.id}")
        elif isinstance(node, ast.Attribute) and _dunder(node.attr) \
                and node.attr not in rules.allowed_dunders:
            note(node, f"a kernel submission may not reach into .{node.attr}")
    return [found[line] for line in sorted(found)]


def describe(findings: list[str]) -> str:
    """The message of a stage that is not graded because of `findings`."""
    shown = findings[:SHOWN]
    more = f"\n  ... and {len(findings) - SHOWN} more" if len(findings) > SHOWN else ""
    return ("not graded: the submission does what course.toml's [submissions] rules forbid "
            "(the host code may allocate, view and launch kernels; the work belongs in the "
            "kernel):\n" + "\n".join(f"  {f}" for f in shown) + more)


def _unreadable(source: str, filename: str, exc: Exception) -> str:
    """Why the grader cannot read `source`, naming the line when it is one line alone."""
    if isinstance(exc, ValueError):
        return f"{filename} cannot be read as Python ({exc}); save it as plain text."
    line = next((n for n, text in enumerate(source.splitlines(), 1) if _too_deep(text)), None)
    where = f"line {line} of {filename}" if line else f"an expression of {filename}"
    return (f"{where} is nested too deeply for the grader to read; split it up into "
            "several statements.")


def _too_deep(line: str) -> bool:
    """Whether this line alone exhausts the parser (a line that is not a whole statement
    alone is a syntax error, and so not the culprit here)."""
    try:
        syntax.parse(line.strip())
    except (RecursionError, MemoryError):
        return True
    except (SyntaxError, ValueError):
        pass
    return False


def _forbidden(module: str, rules: SubmissionRules) -> bool:
    return any(module == m or module.startswith(m + ".") for m in rules.forbidden_imports)


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")
