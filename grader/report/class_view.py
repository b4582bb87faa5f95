"""The class report's records: what grader.instructor.class_report reads of a class (its
course and each student's result files) and grader.report.class_page draws."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.results import Report


@dataclass(frozen=True)
class SpeedLine:
    """A speed threshold of a stage for one backend, and the GPU kinds it is set for."""

    speedup: float
    where: str  # "sm_90, sm_80"


@dataclass
class StageColumn:
    """A stage as the class report shows it (from the course)."""

    number: int
    id: str
    title: str
    points: float  # correctness
    speed_points: float = 0.0
    lines: dict[str, list[SpeedLine]] = field(default_factory=dict)  # backend -> thresholds


@dataclass
class Student:
    """One student: their result, or why there is none."""

    name: str
    report: Report | None
    track: str = ""
    error: str = ""  # why there is no result
    feedback: str = ""  # the feedback file, relative to the page ("" when there is none)
    out_of: float | None = None  # the gradebook's denominator (None: the result's own maximum)


@dataclass
class ClassView:
    course: str
    stages: list[StageColumn]
    students: list[Student]
