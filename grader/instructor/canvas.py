"""The class's scores for Canvas: OUT/canvas.csv, for Canvas's gradebook import.

Canvas takes back a CSV laid out as its own export (Grades > Export): the columns `Student`,
`ID`, `SIS User ID`, `SIS Login ID` and `Section` name each student as Canvas knows them, and
one column per assignment, headed by the assignment's name and Canvas's id for it ("Tile
course (12345)"), holds the scores. Canvas's ids are in its export and nowhere here, so the
instructor hands `grade canvas` that export: each of its students is matched to a gradebook
row, by SIS User ID against the SIDs a Gradescope export gave, by SIS Login ID or email
against the emails and the gradebook's names, else by the student's name, and gets the
row's `final` score (after the late penalty and any adjustment by hand) in the assignment's
column. A student Canvas lists whom no row matches keeps an empty cell (Canvas leaves such
a score as it was) and is named; a row no Canvas student matches is named too.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import Course
from grader.errors import GradeError
from grader.instructor.gradebook import Gradebook, class_gradebook, csv_cell
from grader.results import write_file

FILE = "canvas.csv"
IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POSSIBLE = "Points Possible"  # the row of an export under its header, which Canvas skips


@dataclass
class Written:
    path: Path
    matched: int = 0
    unmatched: list[str] = field(default_factory=list)  # Canvas's students without a row
    unlisted: list[str] = field(default_factory=list)  # gradebook rows Canvas does not list


def write_canvas(course: Course, out: Path, export: Path, column: str) -> Written:
    """OUT/canvas.csv from Canvas's gradebook `export`, with the gradebook's final scores in
    its assignment `column`. Raises GradeError, saying what to fix."""
    header, students = _read_export(export)
    if column not in header:
        shown = ", ".join(h for h in header if h not in IDENTITY)
        raise GradeError(f"{export} has no column {column!r}; its assignments: "
                         f"{shown or 'none'}. Name one as Canvas heads it, with its id "
                         "('Tile course (12345)'), or add the assignment in Canvas and export "
                         "again.")
    gradebook = class_gradebook(course, out, [])
    keys = _keys(gradebook)
    written = Written(out / FILE)
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow([*IDENTITY, column])
    writer.writerow([POSSIBLE, "", "", "", "", _possible(gradebook)])
    claimed = set()
    for student in students:
        row = next((keys[k] for k in _their_keys(student) if k in keys), None)
        if row is None:
            written.unmatched.append(student.get("Student", "") or student.get("ID", ""))
            score = ""
        else:
            claimed.add(row["student"])
            written.matched += 1
            score = row.get("final", "")
        writer.writerow([csv_cell(student.get(c, "")) for c in IDENTITY] + [csv_cell(score)])
    written.unlisted = sorted({r["student"] for r in _rows(gradebook)} - claimed)
    write_file(written.path, "\ufeff" + text.getvalue())
    return written


def _read_export(export: Path) -> tuple[list[str], list[dict]]:
    try:
        text = export.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise GradeError(f"{export} cannot be read: {getattr(exc, 'strerror', None) or exc}."
                         " Export the gradebook from Canvas (Grades > Export).") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in ("Student", "ID") if c not in header]
    if missing:
        raise GradeError(f"{export} is not a Canvas gradebook export: it has no "
                         f"{' or '.join(missing)} column. Export it from Canvas (Grades > "
                         "Export) and give that file.")
    students = [{(k or "").strip(): (v or "").strip() for k, v in row.items()}
                for row in reader]
    # Canvas writes a row of points possible (and a muted or read-only row) under its header.
    return header, [s for s in students if s.get("ID") and not s["Student"].strip().startswith(
        POSSIBLE)]


def _rows(gradebook: Gradebook) -> list[dict]:
    return [dict(zip(gradebook.columns, cells)) for cells in gradebook.cells]


def _keys(gradebook: Gradebook) -> dict[str, dict]:
    """Every way a Canvas export may name a gradebook row, lower-cased."""
    keys: dict[str, dict] = {}
    for row in _rows(gradebook):
        names = [row["student"], *str(row.get("sid", "")).split("; "),
                 *str(row.get("email", "")).split("; "), *str(row.get("name", "")).split("; ")]
        for name in (n.strip().lower() for n in names):
            if name:
                keys.setdefault(name, row)
    return keys


def _their_keys(student: dict) -> list[str]:
    """How a Canvas student may be named in the gradebook, the surest first."""
    login = student.get("SIS Login ID", "")
    name = student.get("Student", "")
    # Canvas writes "Last, First"; a gradebook name is as the student wrote it
    turned = " ".join(reversed([p.strip() for p in name.split(",", 1)])) if "," in name else ""
    candidates = [student.get("SIS User ID", ""), login, login.split("@")[0], name, turned]
    return [c.strip().lower() for c in candidates if c.strip()]


def _possible(gradebook: Gradebook) -> str:
    maxima = {row.get("total max") for row in _rows(gradebook) if row.get("total max") != ""}
    return str(maxima.pop()) if len(maxima) == 1 else ""
