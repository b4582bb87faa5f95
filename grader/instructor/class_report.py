"""OUT/report.html: the class report, read from what `grade batch` leaves in OUT/students/
(each student's result JSON, NAME.error where there is none, NAME.intake.json, NAME.md)
and the stage files kept in OUT/files/ (grader.instructor.similarity compares them), never
from the gradebook CSV; drawn by grader.report.class_page.

`grade batch` writes it beside the gradebook; `grade report OUT` writes it again from an OUT
folder alone.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from grader.course import Course, Stage
from grader.errors import GradeError
from grader.instructor import similarity
from grader.instructor.gradebook import (GradebookRow, class_gradebook, class_names, read_row,
                                         speed_points, total_max)
from grader.instructor.submissions import Entry
from grader.report.class_page import page
from grader.report.class_view import ClassView, SpeedLine, StageColumn, Student
from grader.results import Report, write_file

REPORT = "report.html"


def write_report(out: Path, course: Course, names: list[str] | None = None,
                 listed: list[Entry] = ()) -> Path:
    """Write OUT/report.html for the students `names` (None: the gradebook's, every
    submission OUT knows of and those `listed` now); returns its path."""
    if names is None:
        names = students_in(out, listed)
    students = [student(out, name) for name in names]
    # Out of what the gradebook counts: the same total for every student graded on one
    # machine, whatever they started (grader.instructor.gradebook.speed_points).
    rows = [row for _, row in students if row is not None]
    speed_max = speed_points(course, rows)
    for shown, row in students:
        if row is not None and shown.report is not None:
            shown.out_of = total_max(course, speed_max.get(row.machine))
    _from_the_gradebook(course, out, [shown for shown, _ in students], listed)
    view = ClassView(course.title, [column(stage) for stage in course.stages],
                     [shown for shown, _ in students])
    view.alike, view.alike_more = similarity.alike(out, course, names)
    path = out / REPORT
    write_file(path, page(view))
    return path


def _from_the_gradebook(course: Course, out: Path, shown: list[Student],
                        listed: list[Entry]) -> None:
    """Who each student is, their late penalty and final score, as the gradebook has them."""
    table = class_gradebook(course, out, list(listed))
    rows = {cells[0]: dict(zip(table.columns, cells)) for cells in table.cells}
    for student in shown:
        row = rows.get(student.name, {})
        student.people = str(row.get("name", "") or "")
        late, final = row.get("late penalty %", ""), row.get("final", "")
        student.late_percent = float(late) if late != "" else None
        student.final = float(final) if final != "" else None


def students_in(out: Path, listed: list[Entry] = ()) -> list[str]:
    """The gradebook's students (grader.instructor.gradebook.class_names), of an OUT folder
    that `grade batch` wrote."""
    if not (out / "students").is_dir():
        raise GradeError(f"{out} holds no students/ folder: name the --out folder of a "
                         "`grade batch` run.")
    return class_names(out, list(listed))


def student(out: Path, name: str) -> tuple[Student, GradebookRow | None]:
    """One student as the report shows them, and their gradebook row; a result file that
    cannot be read is said so, in the place of the result, rather than ending the report."""
    # the feedback as a page, else (a class graded before there were pages) as Markdown
    link = next((f"students/{name}{suffix}" for suffix in (".html", ".md")
                 if (out / "students" / f"{name}{suffix}").is_file()), "")
    try:
        row = read_row(out, name)
        report = Report.from_json(row.data) if row.data is not None else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Student(name, None, "", f"its result file could not be read ({exc})", link), None
    return Student(name, report, row.track, row.error, link), row


def column(stage: Stage) -> StageColumn:
    """A stage's column, with its speed thresholds per backend: one line per distinct
    speed-up, named with the GPU kinds it is set for."""
    if stage.speed is None:
        return StageColumn(stage.number, stage.id, stage.title, stage.points)
    where: dict[str, dict[float, list[str]]] = defaultdict(lambda: defaultdict(list))
    for arch, backends in stage.speed.thresholds.items():
        for backend, threshold in backends.items():
            if threshold.min_speedup:
                where[backend][threshold.min_speedup].append(arch)
    lines = {backend: [SpeedLine(value, ", ".join(sorted(arches)))
                       for value, arches in sorted(values.items())]
             for backend, values in where.items()}
    return StageColumn(stage.number, stage.id, stage.title, stage.points, stage.speed.points,
                       lines)
