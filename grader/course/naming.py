"""How a course's files and stages are named: course.toml (and where it is found) and
course.hidden.toml beside it, `stage3` for the third stage, and the stages a command names
(`stage3`, `3`, `softmax`).

Apart from the dataclasses (model.py) so that what lists or chooses stages from a course's
outline (grader.course.outline) needs none of them.
"""

from __future__ import annotations

from pathlib import Path

from grader.errors import CourseError, StageSelectionError

COURSE_FILE = "course.toml"
HIDDEN_FILE = "course.hidden.toml"  # instructor-only cases; `grade release` leaves it out


def find_course_file(start: Path | None = None) -> Path:
    """The course.toml in `start` or the nearest folder above it."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / COURSE_FILE
        if candidate.is_file():
            return candidate
    raise CourseError(
        f"No {COURSE_FILE} found in {here} or any folder above it. Run `grade` from inside "
        "the course folder, or pass --course PATH/TO/course.toml."
    )


def stage_name(number: int) -> str:
    """How commands and the scorecard name the stage of this number."""
    return f"stage{number}"


def named(stages, selectors) -> list:
    """Of `stages` (a course's, or its outline's), those named, in course order; none or
    `all`: all."""
    wanted = [s for s in selectors if s != "all"]
    chosen = {stage.id for stage in (select(stages, s) for s in wanted)}
    return [s for s in stages if not wanted or s.id in chosen]


def select(stages, selector: str):
    """Of `stages`, the one named by `stage3`, `3` or `softmax`."""
    key = selector.strip().lower()
    for stage in stages:
        if key in (stage.name, str(stage.number), stage.id):
            return stage
    known = ", ".join(f"{s.name} ({s.id})" for s in stages)
    raise StageSelectionError(
        f"There is no stage '{selector}'. Stages: {known}. "
        "Name one as `grade stage3`, `grade 3` or `grade softmax`, or run `grade list`."
    )
