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

A second kind of block marks a place to tune, where the reference's launch configuration
(tile shapes, program order, pipelining, occupancy hints) differs from the plain one the
exercise ships:

    # >>> tuned: tile shapes and pipelining (see "Making it fast")
    BLOCK_M, BLOCK_N, num_stages = 128, 256, 4
    # --- plain
    # BLOCK_M, BLOCK_N, num_stages = 64, 64, 2
    # <<<

The reference runs the tuned lines; the plain ones are comments there, as placeholders
are. The exercise gets `# TUNE: tile shapes and pipelining (...)` and the plain lines
un-commented: working code, not a TODO, so it never counts as one. Inside a solution
block the same block (its description optional) picks between the reference's form and
the plain one of a line the student writes (a fast-math flag, a load's latency hint); the
exercise shows neither. `make_plain_solution` builds the untuned configuration filled in
correctly: the solution lines of every TODO with the plain lines of every TUNE place, the
honest baseline for what tuning earns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from grader.course import Course
from grader.course.todos import todo_state
from grader.errors import GradeError
from grader.instructor.backups import backup

BEGIN, SPLIT, END = "# >>> solution", "# --- exercise", "# <<<"
TUNED, PLAIN = "# >>> tuned", "# --- plain"
TUNE = "# TUNE:"  # what a tuned block's description becomes in the exercise
_STEP = re.compile(r"^(\s*)# Step (\d+):")
# (part, marker) -> the part after it. The parts: "code" (shared by solution and exercise),
# "solution" / "exercise" (a TODO block's reference lines and placeholder), "tuned" /
# "plain" (a TUNE place's two configurations) and, inside a solution block,
# "solution-tuned" / "solution-plain".
_NEXT = {
    ("code", BEGIN): "solution", ("solution", SPLIT): "exercise", ("exercise", END): "code",
    ("code", TUNED): "tuned", ("tuned", PLAIN): "plain", ("plain", END): "code",
    ("solution", TUNED): "solution-tuned", ("solution-tuned", PLAIN): "solution-plain",
    ("solution-plain", END): "solution",
}
_SHAPES = (f"each block is '{BEGIN}', solution lines, '{SPLIT}', placeholder, '{END}', or "
           f"'{TUNED}: what it controls', tuned lines, '{PLAIN}', plain lines, '{END}' (a "
           f"tuned block may also sit inside the solution lines)")


class MarkerError(GradeError):
    """A solution file's >>> / --- / <<< markers are out of order."""


def _marker(line: str) -> str | None:
    text = line.strip()
    if text in (BEGIN, SPLIT, END, PLAIN):
        return text
    if text == TUNED or text.startswith(TUNED + ":"):
        return TUNED
    return None


def regions(solution: str, origin: str = "<solution>") -> Iterator[tuple[str, int, str]]:
    """(part, line number, line) for each line of a solution that is not a marker, and
    ("tune", line number, marker line) for the opening marker of a TUNE place.

    The parts are those of _NEXT. Lines keep their line endings. Raises MarkerError, as it
    reaches them, for markers out of order, a TUNE place without its description, plain
    lines that are not comments or hold a `...` placeholder, and a block left open at the
    end.
    """
    state = "code"
    for lineno, line in enumerate(solution.splitlines(keepends=True), 1):
        marker = _marker(line)
        if marker is None:
            if state.endswith("plain") and "..." in _uncomment(line, origin, lineno).split("#")[0]:
                raise MarkerError(f"{origin}, line {lineno}: plain lines between '{PLAIN}' and "
                                  f"'{END}' are working code; a `...` there would count as a "
                                  "TODO placeholder.")
            yield state, lineno, line
            continue
        if (state, marker) not in _NEXT:
            raise MarkerError(f"{origin}, line {lineno}: '{marker}' found while in the {state} "
                              f"part; {_SHAPES}.")
        if (state, marker) == ("code", TUNED):
            if not line.strip().removeprefix(TUNED).removeprefix(":").strip():
                raise MarkerError(f"{origin}, line {lineno}: a TUNE place says what it controls: "
                                  f"'{TUNED}: tile shapes and pipelining' (it becomes the "
                                  f"exercise's '{TUNE}' comment).")
            yield "tune", lineno, line
        state = _NEXT[state, marker]
    if state != "code":
        opened = TUNED if state in ("tuned", "plain") else BEGIN
        raise MarkerError(f"{origin}: a '{opened}' block is not closed with '{END}'.")


def _tune_comment(marker_line: str) -> str:
    indent = marker_line[: len(marker_line) - len(marker_line.lstrip())]
    text = marker_line.strip().removeprefix(TUNED).removeprefix(":").strip()
    return f"{indent}{TUNE} {text}\n"


def make_exercise(solution: str, origin: str = "<solution>") -> str:
    """The student skeleton for a solution source: TODO placeholders, plain TUNE places."""
    out: list[str] = []
    for part, lineno, line in regions(solution, origin):
        if part in ("exercise", "plain"):
            out.append(_uncomment(line, origin, lineno))
        elif part == "code":
            out.append(_STEP.sub(r"\1# TODO \2:", line))
        elif part == "tune":
            out.append(_tune_comment(line))
    return "".join(out)


def make_plain_solution(solution: str, origin: str = "<solution>") -> str:
    """The untuned configuration filled in correctly: the solution's lines in every TODO
    block, the plain lines (not the tuned ones) in every TUNE place."""
    out: list[str] = []
    for part, lineno, line in regions(solution, origin):
        if part in ("code", "solution"):
            out.append(line)
        elif part in ("plain", "solution-plain"):
            out.append(_uncomment(line, origin, lineno))
        elif part == "tune":
            out.append(_tune_comment(line))
    return "".join(out)


def write_plain_solutions(course: Course, folder: Path) -> list[Path]:
    """Every stage's plain solution (make_plain_solution), laid out like exercises/ in
    `folder`, so that `grade --submission FOLDER` grades them; returns the files written."""
    written = []
    for stage in course.stages:
        for track in stage.modules:
            solution = course.module_path(stage, track, solutions=True)
            target = Path(folder) / stage.modules[track]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(make_plain_solution(solution.read_text(encoding="utf-8"),
                                                  str(solution)), encoding="utf-8")
            written.append(target)
    return written


def _uncomment(line: str, origin: str, lineno: int) -> str:
    body = line.lstrip()
    indent = line[: len(line) - len(body)]
    if not body.startswith("#"):
        raise MarkerError(
            f"{origin}, line {lineno}: placeholder lines between '{SPLIT}' and '{END}', and "
            f"plain lines between '{PLAIN}' and '{END}', must be comments (they are "
            "un-commented in the exercise)."
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
