"""Exercise skeletons: generated from the solutions, and recognised when still untouched.

One source of truth keeps exercise and solution in sync. A solution marks each piece the
student writes:

    # Step 2: Subtract the row maximum before exponentiating ...
    # >>> solution
    z = x - tl.max(x, axis=0)
    # --- exercise
    # z = ...
    # <<<

The exercise keeps the lesson text (`# Step N:` becomes `# TODO N:`), drops the solution
lines, and un-comments the placeholder. Every placeholder holds Python's `...`, which is how
the grader tells an untouched skeleton (NOT STARTED) from a started one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from grader.errors import GradeError

BEGIN, SPLIT, END = "# >>> solution", "# --- exercise", "# <<<"
_STEP = re.compile(r"^(\s*)# Step (\d+):")
_TODO = re.compile(r"^\s*# TODO (\d+):")


class MarkerError(GradeError):
    """A solution file's >>> / --- / <<< markers are out of order."""


def regions(solution: str, origin: str = "<solution>") -> Iterator[tuple[str, int, str]]:
    """(part, line number, line) for each line of a solution that is not a marker.

    The part is "code" (outside the blocks, shared by solution and exercise), "solution"
    (the reference lines of a block) or "exercise" (its commented placeholder). Lines keep
    their line endings. Raises MarkerError, as it reaches them, for markers out of order and
    for a block left open at the end.
    """
    state = "code"
    expected = {BEGIN: "code", SPLIT: "solution", END: "exercise"}
    following = {BEGIN: "solution", SPLIT: "exercise", END: "code"}
    for lineno, line in enumerate(solution.splitlines(keepends=True), 1):
        marker = line.strip()
        if marker in expected:
            if state != expected[marker]:
                raise MarkerError(
                    f"{origin}, line {lineno}: '{marker}' found while in the {state} part; "
                    f"each block is '{BEGIN}', solution lines, '{SPLIT}', placeholder, '{END}'."
                )
            state = following[marker]
        else:
            yield state, lineno, line
    if state != "code":
        raise MarkerError(f"{origin}: a '{BEGIN}' block is not closed with '{END}'.")


def make_exercise(solution: str, origin: str = "<solution>") -> str:
    """The student skeleton for a solution source."""
    out: list[str] = []
    for part, lineno, line in regions(solution, origin):
        if part == "exercise":
            out.append(_uncomment(line, origin, lineno))
        elif part == "code":
            out.append(_STEP.sub(r"\1# TODO \2:", line))
    return "".join(out)


def _uncomment(line: str, origin: str, lineno: int) -> str:
    body = line.lstrip()
    indent = line[: len(line) - len(body)]
    if not body.startswith("#"):
        raise MarkerError(
            f"{origin}, line {lineno}: placeholder lines between '{SPLIT}' and '{END}' "
            "must be comments (they are un-commented in the exercise)."
        )
    body = body[2:] if body.startswith("# ") else body[1:]
    return indent + body


@dataclass(frozen=True)
class TodoState:
    """Which TODO blocks of a module still hold their `...` placeholder."""

    todos: tuple[int, ...]  # TODO numbers present in the file
    unfilled: tuple[tuple[int, int], ...]  # (TODO number, line) of each remaining placeholder

    @property
    def not_started(self) -> bool:
        return bool(self.todos) and {n for n, _ in self.unfilled} >= set(self.todos)

    def describe(self) -> str:
        lines: dict[int, list[str]] = {}
        for n, line in self.unfilled:
            lines.setdefault(n, []).append(str(line))
        shown = ", ".join(
            f"TODO {n} (line{'s' if len(at) > 1 else ''} {', '.join(at)})" for n, at in lines.items()
        )
        return f"still unfilled: {shown}" if shown else "every TODO is filled in"


def todo_state(source: str) -> TodoState:
    """Find placeholders (`...` expressions) and the TODO block each belongs to."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return TodoState((), ())  # the import reports the syntax error itself
    headers = [
        (lineno, int(m.group(1)))
        for lineno, line in enumerate(source.splitlines(), 1)
        if (m := _TODO.match(line))
    ]
    placeholders = sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value is Ellipsis
    )
    unfilled = []
    for line in placeholders:
        owners = [n for header_line, n in headers if header_line < line]
        unfilled.append((owners[-1] if owners else 0, line))
    return TodoState(tuple(dict.fromkeys(n for _, n in headers)), tuple(unfilled))
