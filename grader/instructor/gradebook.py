"""What a class's grading leaves for people: OUT/gradebook.csv (a row per student) and each
student's feedback, OUT/students/NAME.md, both rebuilt from what OUT/students/ holds: the
result JSON, why there is none (NAME.error), and what the intake found (NAME.intake.json)."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.backends import selection as backends
from grader.course import Course
from grader.instructor.submissions import Entry, listed
from grader.quoting import headline
from grader.report.markdown import write_feedback
from grader.results import Report, write_file


@dataclass
class Intake:
    """What became of a submission before it was graded (OUT/students/NAME.intake.json)."""

    track: str = ""
    why: str = ""  # why that track
    ignored: list[str] = field(default_factory=list)  # zip members not taken, and why


def write_intake(out: Path, name: str, intake: Intake) -> None:
    write_file(out / "students" / f"{name}.intake.json", json.dumps(asdict(intake), indent=2) + "\n")


def read_intake(out: Path, name: str) -> Intake:
    path = out / "students" / f"{name}.intake.json"
    try:
        return Intake(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return Intake()


GRADED, NOT_A_SUBMISSION, NOT_GRADED = "graded", "not a submission", "not graded"


@dataclass
class Row:
    """What the gradebook and the feedback know of one student."""

    name: str
    status: str  # GRADED, NOT_A_SUBMISSION or NOT_GRADED
    intake: Intake
    data: dict | None = None  # the result JSON, when graded
    error: str = ""

    @property
    def track(self) -> str:
        backend = backends.BACKENDS.get((self.data or {}).get("backend", ""))
        return backend.track if backend else self.intake.track


def read_row(out: Path, name: str) -> Row:
    """One student's row from OUT/students/: the result, or why there is none."""
    result = out / "students" / f"{name}.json"
    error_file = out / "students" / f"{name}.error"
    intake = read_intake(out, name)
    if result.is_file():
        return Row(name, GRADED, intake, json.loads(result.read_text(encoding="utf-8")))
    error = error_file.read_text().strip() if error_file.is_file() else NOT_GRADED
    status = NOT_A_SUBMISSION if error.startswith(NOT_A_SUBMISSION) else NOT_GRADED
    return Row(name, status, intake, error=error)


def write_gradebook(course: Course, out: Path, students: list[Entry]) -> Path:
    """OUT/gradebook.csv: one row per student, one column per stage, from the JSON files."""
    path = out / "gradebook.csv"
    stage_ids = [s.id for s in course.stages]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "status", "track", *stage_ids, "total", "max",
                         "speed graded on", "seed", "not started", "error"])
        for entry in students:
            row = read_row(out, entry.name)
            if row.data is None:
                writer.writerow([row.name, row.status, row.track, *[""] * len(stage_ids),
                                 "", "", "", "", "", row.error])
                continue
            data = row.data
            points = {s["id"]: s["total_points"] for s in data["stages"]}
            speed = any(s["speed"]["graded"] for s in data["stages"])
            # one line per stage: its message's headline (what it quotes, escaped, after it)
            problems = "; ".join(f"{s['id']}: {headline(s['message'])}" for s in data["stages"]
                                 if s["status"] == "ERROR")
            # A stage whose file was missing from the submission kept the skeleton.
            untouched = " ".join(s["id"] for s in data["stages"] if s["status"] == "NOT STARTED")
            writer.writerow([row.name, row.status, row.track,
                             *[points.get(i, "") for i in stage_ids], data["points"],
                             data["max_points"], data["machine"]["gpu"] if speed else "",
                             data["seed"], untouched, problems])
    return path


def write_feedback_files(out: Path, students: list[Entry]) -> list[Path]:
    """OUT/students/NAME.md for every student: what they can read of their grading."""
    written = []
    for entry in students:
        row = read_row(out, entry.name)
        report = Report.from_json(row.data) if row.data is not None else None
        path = out / "students" / f"{entry.name}.md"
        note = f"Graded on the {row.track} track ({row.intake.why})." if row.intake.why else ""
        write_feedback(path, entry.name, report, row.error, note,
                       listed(row.intake.ignored))
        written.append(path)
    return written
