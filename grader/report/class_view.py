"""The class report's records: what grader.instructor.class_report reads of a class (its
course, each student's result files and the pairs of their files that are unusually alike)
and grader.report.class_page draws."""

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
    people: str = ""  # who the submission is, where the class knows (a bulk export's names)
    late_percent: float | None = None  # the gradebook's late penalty, where one was weighed
    final: float | None = None  # the gradebook's final score: after the penalty and by hand


@dataclass(frozen=True)
class AlikeFile:
    """One file of a pair that is unusually alike: whose it is, its text, the lines that hold
    what the two have in common, and how much of its own code (the handout's left out) that is."""

    student: str
    lines: tuple[str, ...]
    marked: frozenset[int]  # indices into `lines`
    share: float  # 0-1


@dataclass(frozen=True)
class AlikePair:
    """Two students' files of one stage, more alike than the class's pairs of that file are
    (grader.instructor.similarity): evidence for a person to read, not a finding."""

    path: str  # the stage file below exercises/: "triton/stage3_softmax.py"
    score: float  # 0-1: the fingerprints the two share, of those they hold together
    typical: float  # the median pair of that file in this class, on the same scale
    first: AlikeFile
    second: AlikeFile


@dataclass
class ClassView:
    course: str
    stages: list[StageColumn]
    students: list[Student]
    alike: list[AlikePair] = field(default_factory=list)  # most alike first
    alike_more: int = 0  # pairs as unusual as those, not shown
