"""What a class's grading leaves for people: OUT/gradebook.csv (a row per student) and each
student's feedback, OUT/students/NAME.md, both rebuilt from everything OUT holds: every
result JSON in OUT/students/, why there is none (NAME.error), what the intake found
(NAME.intake.json), and who each submission is (OUT/roster.json). A run that grades one
student rewrites the whole gradebook, every other row as it was.

The gradebook's denominators are the class's, not a student's: correctness out of the
course's points, speed out of the speed points this class's GPU grades (a stage's speed counts
wherever it could be timed on that GPU, whether or not a student's kernel got that far), and
"not graded" where speed is not timed (a CPU host): never a 0, never a denominator that moves
with what a student started. The file is UTF-8 with a byte-order mark, which spreadsheets
need to read names such as "José Núñez 李", and no cell can start a formula."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.backends import selection as backends
from grader.course import HIDDEN_DEFAULT, Course
from grader.grading.session import NEEDS_CORRECTNESS
from grader.instructor import adjustments
from grader.instructor.roster import Who, read_roster
from grader.instructor.submissions import Entry, listed
from grader.quoting import headline
from grader.report.feedback_page import write_feedback_page
from grader.report.markdown import write_feedback
from grader.results import Report, write_file

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as a formula
# A separator of cells in some spreadsheet's import (comma, semicolon, tab, bar, a line's
# end), with the blanks after it, before what would start a formula there.
_AFTER_A_SEPARATOR = re.compile(r"([,;\t|\r\n][ \t]*)(?=[=+\-@])")


@dataclass
class Intake:
    """What became of a submission before it was graded (OUT/students/NAME.intake.json)."""

    track: str = ""
    why: str = ""  # why that track
    ignored: list[str] = field(default_factory=list)  # zip members not taken, and why
    read_as: list[str] = field(default_factory=list)  # stage files taken from elsewhere, and where
    digest: str = ""  # of the stage files taken (grader.instructor.submissions.digest)
    versions: int = 0  # different versions of the files graded so far (regrades of changes)
    # Set when later files were not graded under the resubmission limit (cleared by grading).
    not_graded_later: str = ""


def write_intake(out: Path, name: str, intake: Intake) -> None:
    write_file(out / "students" / f"{name}.intake.json", json.dumps(asdict(intake), indent=2) + "\n")


def read_intake(out: Path, name: str) -> Intake:
    path = out / "students" / f"{name}.intake.json"
    try:
        return Intake(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return Intake()


GRADED, NOT_A_SUBMISSION, NOT_GRADED = "graded", "not a submission", "not graded"
NO_SUBMISSION = "no submission"  # on the class list (--roster), nothing handed in


def no_result(error: str) -> bool:
    """Whether a submission that failed with `error` is a student left without a result (a
    path that is not a submission at all is no student)."""
    return bool(error) and not error.startswith(NOT_A_SUBMISSION)


@dataclass
class GradebookRow:
    """What the gradebook and the feedback know of one student."""

    name: str
    status: str  # GRADED, NOT_A_SUBMISSION or NOT_GRADED
    intake: Intake
    data: dict | None = None  # the result JSON, when graded
    error: str = ""
    who: Who = field(default_factory=Who)

    @property
    def track(self) -> str:
        backend = backends.BACKENDS.get((self.data or {}).get("backend", ""))
        return backend.track if backend else self.intake.track

    @property
    def machine(self) -> str:
        """The GPU it was graded on, or "CPU"."""
        return ((self.data or {}).get("machine") or {}).get("gpu") or "CPU"

    @property
    def submissions(self) -> tuple[int | None, str]:
        """How many times it was submitted, and what counted."""
        if self.who.submissions is not None:
            return self.who.submissions, "Gradescope history"
        return (self.intake.versions or None), "changed files graded"


def read_row(out: Path, name: str, who: Who | None = None) -> GradebookRow:
    """One student's row from OUT/students/: the result, or why there is none."""
    result = out / "students" / f"{name}.json"
    error_file = out / "students" / f"{name}.error"
    intake = read_intake(out, name)
    who = who or Who()
    if result.is_file():
        try:
            data = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # cut short, or edited by hand: said, not a stop
            return GradebookRow(name, NOT_GRADED, intake, error=f"its result file could not be read "
                       f"({exc})", who=who)
        return GradebookRow(name, GRADED, intake, data, who=who)
    if not error_file.is_file() and not (out / "students" / f"{name}.intake.json").is_file():
        return GradebookRow(name, NO_SUBMISSION, intake, error="no submission: on the class list, "
                   "nothing handed in", who=who)
    error = error_file.read_text().strip() if error_file.is_file() else NOT_GRADED
    status = NOT_GRADED if no_result(error) else NOT_A_SUBMISSION
    return GradebookRow(name, status, intake, error=error, who=who)


def class_names(out: Path, students: list[Entry]) -> list[str]:
    """Every submission OUT knows of (a result, an error, an intake, the roster) and those
    listed now, sorted: the gradebook is the class's, not this run's."""
    names = {e.name for e in students} | set(read_roster(out))
    folder = out / "students"
    if folder.is_dir():
        for path in folder.iterdir():
            for suffix in (".intake.json", ".error", ".json"):
                if path.name.endswith(suffix) and not path.name.startswith("."):
                    names.add(path.name[: -len(suffix)])
                    break
    return sorted(names)


def class_rows(out: Path, students: list[Entry]) -> list[GradebookRow]:
    """A row for every submission of the class (what the gradebook and reports show)."""
    roster = read_roster(out)
    return [read_row(out, name, roster.get(name)) for name in class_names(out, students)]


def speed_points(course: Course, rows: list[GradebookRow]) -> dict[str, float | None]:
    """Per machine, the speed points its gradebook is out of (None: speed not timed there):
    those of every stage whose speed some result on that machine graded or would have once
    correct (the reason is the machine's, not the student's)."""
    timed: dict[str, set[str]] = {}
    for row in rows:
        seen = timed.setdefault(row.machine, set())
        for stage in (row.data or {}).get("stages", []):
            speed = stage.get("speed") or {}
            if speed.get("graded") or speed.get("reason") == NEEDS_CORRECTNESS:
                seen.add(stage["id"])
    return {machine: (sum(s.speed.points for s in course.stages if s.speed and s.id in ids)
                      if ids else None) for machine, ids in timed.items()}


def correctness_max(course: Course) -> float:
    """The correctness points every student is out of: the course's."""
    return round(sum(s.points for s in course.stages), 2)


def total_max(course: Course, speed_max: float | None) -> float:
    """The total a student graded on a machine is out of: the course's correctness points
    and the speed points that machine grades (`speed_points`; None: no speed timed there)."""
    return round(correctness_max(course) + (speed_max or 0), 2)


@dataclass
class Gradebook:
    """The class's gradebook as a table: what gradebook.csv holds, for any other view of it."""

    columns: list[str]  # COLUMNS, with a column per stage after "track"
    rows: list[GradebookRow]
    cells: list[list]  # per row, in the columns' order: numbers as numbers, text as text


def class_gradebook(course: Course, out: Path, students: list[Entry]) -> Gradebook:
    """The gradebook of every submission OUT holds (and those listed now)."""
    stage_ids = [s.id for s in course.stages]
    rows = class_rows(out, students)
    speed_max = speed_points(course, rows)
    by_hand = adjustments.read(out)
    table = Gradebook(COLUMNS[:6] + stage_ids + COLUMNS[6:], rows, [])
    for row in rows:
        cells = _cells(row, course, speed_max.get(row.machine))
        _adjusted(cells, by_hand.get(row.name))
        table.cells.append([cells.pop(c) for c in COLUMNS[:6]]
                           + [cells["stages"].get(i, "") for i in stage_ids]
                           + [cells.get(c, "") for c in COLUMNS[6:]])
    return table


def _adjusted(cells: dict, adjustment: adjustments.Adjustment | None) -> None:
    """The adjustment by hand, and the final score: the total after the late penalty plus
    it (blank where there is no total and no adjustment)."""
    after = cells.get("total after penalty")
    if adjustment is None:
        cells["final"] = after if after is not None else ""
        return
    cells.update({"adjustment": adjustment.points, "adjustment comment": adjustment.comment,
                  "final": round((after or 0) + adjustment.points, 2)})


def write_gradebook(course: Course, out: Path, students: list[Entry]) -> Path:
    """OUT/gradebook.csv: a row per submission OUT holds, a column per stage and the class's
    totals, from the JSON files."""
    path = out / "gradebook.csv"
    table = class_gradebook(course, out, students)
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(table.columns)
    writer.writerows([csv_cell(c) for c in cells] for cells in table.cells)
    # Names, emails and grades: readable by the instructor alone, as every class file is
    # (write_file makes it so), and never half written.
    write_file(path, "\ufeff" + text.getvalue())
    return path


COLUMNS = ["student", "name", "email", "sid", "status", "track",  # then a column per stage
           "correctness", "correctness max", "speed", "speed max", "total", "total max",
           "submitted at", "submitted from", "days late", "late penalty %",
           "total after penalty", "adjustment", "adjustment comment", "final", "submissions",
           "counted", "over limit", "graded on", "seed",
           "not started", "error"]


def _cells(row: GradebookRow, course: Course, speed_max: float | None) -> dict:
    who = row.who
    count, counted = row.submissions
    limit = course.policy.max_submissions
    cells = {"student": row.name, "name": "; ".join(who.names), "email": "; ".join(who.emails),
             "sid": "; ".join(who.sids), "status": row.status, "track": row.track, "stages": {},
             "submitted at": who.submitted_at, "submitted from": who.submitted_from,
             "submissions": count or "", "counted": counted if count else "",
             "over limit": (f"{count} of at most {limit}" if limit and count and count > limit
                            else row.intake.not_graded_later), "error": row.error}
    # Lateness only from Gradescope's own time: file times are the student's to set.
    policy = course.policy
    timed = (policy.due is not None or bool(policy.stage_due)) and who.trusted_when is not None
    data = row.data
    if data is None:
        if timed:  # no stages to weigh: the class's lateness
            late = policy.lateness(who.trusted_when, row.name)
            cells.update({"days late": late.days, "late penalty %": late.percent})
        if row.status in (NOT_A_SUBMISSION, NO_SUBMISSION):  # nothing to grade: a 0, as a number
            cells.update({"correctness": 0, "correctness max": correctness_max(course),
                          "total": 0, "total max": total_max(course, speed_max),
                          "total after penalty": 0})
        return cells
    stages = data["stages"]
    correctness = round(sum(s["points"] for s in stages), 2)
    speed = round(sum((s.get("speed") or {}).get("points", 0) for s in stages), 2)
    total = correctness + (speed if speed_max is not None else 0)
    counted = {s["id"]: s["total_points"] if speed_max is not None else s["points"]
               for s in stages}
    late = policy.penalised(counted, who.trusted_when, row.name)
    if timed:
        cells.update({"days late": late.days, "late penalty %": late.percent})
    cells.update({
        "stages": {s["id"]: s["total_points"] for s in stages},
        "correctness": correctness, "correctness max": correctness_max(course),
        "speed": "" if speed_max is None else speed,  # a number or nothing, for an LMS's import
        "speed max": "" if speed_max is None else speed_max,
        "total": round(total, 2), "total max": total_max(course, speed_max),
        "total after penalty": late.after if timed else round(total, 2),
        "graded on": row.machine, "seed": data["seed"],
        # A stage whose file was missing from the submission kept the skeleton.
        "not started": " ".join(s["id"] for s in stages if s["status"] == "NOT STARTED"),
        # one line per stage: its message's headline (what it quotes, escaped, after it)
        "error": "; ".join(f"{s['id']}: {headline(s['message'])}" for s in stages
                           if s["status"] == "ERROR"),
    })
    return cells


def csv_cell(value):
    """A cell as a spreadsheet must take it: text that would start a formula is quoted, at
    the cell's start and after every separator a spreadsheet may split it on (a name cell
    joined with "; " held a formula after it, live where ';' separates cells); a number of
    points is written without a trailing .0."""
    if isinstance(value, str):
        value = _AFTER_A_SEPARATOR.sub(r"\1'", value)
        return "'" + value if value.startswith(FORMULA_START) else value
    if isinstance(value, float):  # points as people write them: 10, 12.5, 33.33
        return format(round(value, 2), "g")
    return value


def write_feedback_files(out: Path, students: list[Entry],
                         hidden_cases: str = HIDDEN_DEFAULT) -> list[Path]:
    """OUT/students/NAME.md for every submission OUT holds: what they can read of their
    grading. Under the class's policy `hidden_cases = "hidden"`, the hidden cases' results
    are left out of it (their points still count), as Gradescope leaves them out. An
    adjustment by hand (OUT/adjustments.csv) is said with its comment."""
    written = []
    by_hand = adjustments.read(out)
    for row in class_rows(out, students):
        report = Report.from_json(row.data) if row.data is not None else None
        path = out / "students" / f"{row.name}.md"
        note = f"Graded on the {row.track} track ({row.intake.why})." if row.intake.why else ""
        if report is not None and hidden_cases == "hidden":
            note = " ".join(filter(None, [note, _without_hidden_cases(report)]))
        if row.name in by_hand:
            note = " ".join(filter(None, [note, by_hand[row.name].said()]))
        write_feedback(path, row.name, report, row.error, note, listed(row.intake.ignored),
                       row.intake.read_as)
        write_feedback_page(path)  # the same, for a browser (the class report links it)
        written.append(path)
    return written


def _without_hidden_cases(report: Report) -> str:
    """Take the hidden cases out of `report`; what the feedback says of them."""
    count = 0
    for stage in report.stages:
        shown = [c for c in stage.cases if not c.hidden]
        count += len(stage.cases) - len(shown)
        stage.cases = shown
    return (f"{count} hidden cases were graded too; their results are not shown (their points "
            "are in the totals)." if count else "")
