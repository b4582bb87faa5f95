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
the grader tells an untouched skeleton (NOT STARTED) from a started one
(grader.course.todos).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from grader.course import Course
from grader.course.todos import todo_state
from grader.errors import GradeError
from grader.instructor.backups import backup

BEGIN, SPLIT, END = "# >>> solution", "# --- exercise", "# <<<"
_STEP = re.compile(r"^(\s*)# Step (\d+):")


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


def update_exercises(course: Course, check: bool, force: bool,
                     say: Callable[[str], None]) -> tuple[int, int]:
    """Regenerate every exercise that differs from its solution's skeleton (with `check`,
    only name them); never replace one whose TODOs were filled in unless `force`, and then
    keep the old file as .bak. Returns (exercises out of date, exercises kept)."""
    stale = refused = 0
    for stage in course.stages:
        for track in stage.modules:
            solution = course.module_path(stage, track, solutions=True)
            exercise = course.module_path(stage, track, solutions=False)
            if not solution.is_file():
                raise GradeError(f"{solution} is missing: `grade skeletons` needs the solutions/ "
                                 "folder, which the student handout does not include.")
            wanted = make_exercise(solution.read_text(encoding="utf-8"), str(solution))
            current = exercise.read_text(encoding="utf-8") if exercise.is_file() else None
            if current == wanted:
                continue
            stale += 1
            shown = exercise.relative_to(course.root)
            if check:
                say(f"out of date: {shown} (run `grade skeletons`)")
                continue
            if current is not None and not todo_state(current).not_started:
                # Someone filled in TODOs here: never overwrite their work silently.
                if not force:
                    refused += 1
                    say(f"kept {shown}: its TODOs are filled in (use --force to replace it; "
                        "the old file is kept as .bak)")
                    continue
                kept = backup(exercise)
                say(f"kept the old {shown} as {kept.name}")
            exercise.parent.mkdir(parents=True, exist_ok=True)
            exercise.write_text(wanted, encoding="utf-8")
            say(f"wrote {shown}")
    return stale, refused
