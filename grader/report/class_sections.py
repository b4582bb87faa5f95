"""The class report's sections below the gradebook: points per stage, speed-ups per speed
case, the confirmed causes the class hit most, who has not started which stage, and what
could not be graded. Each is counted here into records that templates/class_sections.html.j2
draws.

A confirmed cause is what the judge names when a wrong output itself confirms a mistake
(grader.problems.evidence): its key in the case's `stats["causes"]`, and its sentence in
`stats["cause_texts"]` by key (a result written before those were kept has the sentences only
in its details, as lines beginning "cause: ", in the keys' order). The details' other lines
say what was observed, and are not counted here: an observation names no mistake.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from grader.quoting import single_line
from grader.report.charts import Chart, Mark, points_chart, speedup_chart
from grader.report.class_view import ClassView, Student
from grader.results import CaseResult, SpeedCase, Status

CAUSE_PREFIX = "cause: "  # a confirmed cause in a case's details (read only from older results)
EXAMPLE_CHARS = 500  # of a cause's quoted example
CAUSES_SHOWN = 20


@dataclass(frozen=True)
class Figure:
    """A chart with its title above it and its caption below."""

    title: str
    chart: Chart
    caption: str


def points_figures(view: ClassView) -> list[Figure]:
    """A chart of each stage's points, of the students with a result of it."""
    figures = []
    for column in view.stages:
        results = [s for st in _graded(view) for s in st.report.stages if s.id == column.id]
        if not results:
            continue
        maximum = max(s.total_max_points for s in results)
        statuses = Counter(s.status.value for s in results)
        caption = (f"{_students(len(results))}; "
                   + ", ".join(f"{n} {status}" for status, n in sorted(statuses.items())))
        chart = points_chart([s.total_points for s in results], maximum,
                             f"stage {column.number} {column.id}: points of {len(results)} "
                             "students")
        figures.append(Figure(f"{column.number}. {column.title}", chart, caption))
    return figures


@dataclass
class _Timed:
    speedups: list[float] = field(default_factory=list)
    fast: int = 0
    untimed: int = 0  # the timing failed or was refused: no speed-up to show


def speed_figures(view: ClassView) -> list[Figure]:
    """A chart of each speed case's speed-ups, on each backend, with its thresholds."""
    timed: dict[tuple[str, str, str], _Timed] = defaultdict(_Timed)
    for student in _graded(view):
        for stage in student.report.stages:
            if stage.speed.graded:
                for case in stage.speed.cases:
                    _count(timed[(stage.id, case.id, stage.backend)], case)
    columns = {c.id: c for c in view.stages}
    figures = []
    order = [c.id for c in view.stages]
    for (stage_id, case_id, backend), found in sorted(
            timed.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order else 99,
                                           kv[0])):
        column = columns.get(stage_id)
        lines = column.lines.get(backend, []) if column else []
        marks = [Mark(line.speedup, f"needs {line.speedup:g}x"
                      + (f" ({line.where})" if len(lines) > 1 else "")) for line in lines]
        where = "; ".join(f"{line.speedup:g}x on {line.where}" for line in lines)
        caption = (f"{_students(len(found.speedups) + found.untimed)} timed, {found.fast} fast "
                   f"enough" + (f", {found.untimed} without a speed-up (the timing failed or "
                                "was rejected)" if found.untimed else "")
                   + (f". Threshold: {where}." if where else
                      ". No speed-up threshold in course.toml for this backend."))
        label = f"stage {stage_id}, case {case_id}, {backend}: speed-ups"
        title = f"{stage_id} {case_id} ({backend})"
        figures.append(Figure(title, speedup_chart(found.speedups, marks, label), caption))
    return figures


def _count(found: _Timed, case: SpeedCase) -> None:
    if case.speedup > 0:
        found.speedups.append(case.speedup)
    else:
        found.untimed += 1
    found.fast += case.passed


@dataclass
class _Cause:
    students: set[str] = field(default_factory=set)
    cases: int = 0
    example: tuple[str, str, str] = ("", "", "")  # student, case id, the judge's sentence


@dataclass(frozen=True)
class CauseRow:
    """A confirmed cause of a stage: how many students and cases, and one of them."""

    stage: str
    key: str
    students: int
    cases: int
    student: str  # the example's
    case: str
    text: str  # the judge's sentence, on one line


def causes(view: ClassView) -> tuple[list[CauseRow], int]:
    """The confirmed causes, by how many students hit each (the first CAUSES_SHOWN), and how
    many more there are."""
    found: dict[tuple[str, str], _Cause] = defaultdict(_Cause)
    for student in _graded(view):
        for stage in student.report.stages:
            for case in stage.cases:
                for key, text in confirmed(case):
                    cause = found[(stage.id, key)]
                    cause.students.add(student.name)
                    cause.cases += 1
                    if not cause.example[0]:
                        cause.example = (student.name, case.id, text)
    ranked = sorted(found.items(), key=lambda kv: (-len(kv[1].students), -kv[1].cases, kv[0]))
    rows = [CauseRow(stage_id, key, len(cause.students), cause.cases, cause.example[0],
                     cause.example[1], single_line(cause.example[2], EXAMPLE_CHARS))
            for (stage_id, key), cause in ranked[:CAUSES_SHOWN]]
    return rows, max(len(ranked) - CAUSES_SHOWN, 0)


def confirmed(case: CaseResult) -> list[tuple[str, str]]:
    """The causes a case's output confirmed: (key, the judge's sentence) each."""
    if case.passed or case.hidden:
        return []
    keys = [k for k in case.stats.get("causes", ()) if isinstance(k, str)]
    texts = case.stats.get("cause_texts")
    if isinstance(texts, dict):
        return [(key, str(texts.get(key) or "")) for key in keys]
    # A result written before the judge kept each cause's sentence in its stats: read the
    # sentences from its details' "cause: " lines, in the order of the keys.
    sentences = [d[len(CAUSE_PREFIX):] for d in case.details
                 if d.startswith(CAUSE_PREFIX)]
    return [(key, sentences[i] if i < len(sentences) else "") for i, key in enumerate(keys)]


@dataclass(frozen=True)
class Unstarted:
    """Who has not started a stage."""

    number: int
    title: str
    names: list[str]


@dataclass(frozen=True)
class Ungraded:
    """A stage of a student's that could not be graded (ERROR), and why."""

    student: str
    number: int
    stage: str
    message: str


def not_started(view: ClassView) -> list[Unstarted]:
    return [Unstarted(column.number, column.title,
                      [st.name for st in _graded(view) for s in st.report.stages
                       if s.id == column.id and s.status is Status.NOT_STARTED])
            for column in view.stages]


def errors(view: ClassView) -> list[Ungraded]:
    return [Ungraded(st.name, s.number, s.id, s.message)
            for st in _graded(view) for s in st.report.stages if s.status is Status.ERROR]


def _students(n: int) -> str:
    return f"{n} student" + ("" if n == 1 else "s")


def _graded(view: ClassView) -> list[Student]:
    return [s for s in view.students if s.report is not None]
