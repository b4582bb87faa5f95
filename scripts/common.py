"""What the studies share: the checkout, its course, and the reference solutions loaded as
the grader loads a submission (in this process: the studies time kernels, they grade no
one)."""

from __future__ import annotations

from pathlib import Path

from grader.course import Course, Stage, load_course
from grader.sandbox.submission import Submission

ROOT = Path(__file__).resolve().parents[1]


def course() -> Course:
    """The checkout's course.toml."""
    return load_course(ROOT / "course.toml")


def reference(course: Course, stage: Stage, track: str) -> Submission:
    """The stage's reference solution on `track`, not yet loaded."""
    return Submission(course.module_path(stage, track, solutions=True), stage.problem.function)
