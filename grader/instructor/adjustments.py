"""Scores adjusted by hand: OUT/adjustments.csv, one row per student, kept across regrades.

An instructor who regrades a part by hand, forgives a penalty or settles an appeal writes a
row: the student's name as the gradebook's `student` column has it, the points added (or,
negative, taken off) and a comment that says why. `grade batch` never writes the file, so
every regrade keeps it; the gradebook shows the adjustment and its comment beside the total
after the late penalty and adds them up in `final`, and the student's feedback file says
the points and the comment.

    student,points,comment
    ada,2,stage 4 graded by hand: the kernel is right for N not a multiple of the tile
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from grader.errors import GradeError

FILE = "adjustments.csv"


@dataclass(frozen=True)
class Adjustment:
    points: float
    comment: str

    def said(self) -> str:
        """The line a student's feedback carries."""
        sign = "+" if self.points >= 0 else ""
        return f"Adjusted by hand: {sign}{self.points:g} points. {self.comment}".rstrip()


def read(out: Path) -> dict[str, Adjustment]:
    """OUT/adjustments.csv by student (none where there is no such file); raises GradeError
    naming the row that cannot be read."""
    path = out / FILE
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise GradeError(f"{path} cannot be read: {getattr(exc, 'strerror', None) or exc}.") \
            from None
    found: dict[str, Adjustment] = {}
    for number, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        student = (row.get("student") or "").strip()
        if not student:
            raise GradeError(f"{path}, line {number}: no student (the header must be "
                             "student,points,comment).")
        try:
            points = float((row.get("points") or "").strip())
        except ValueError:
            raise GradeError(f"{path}, line {number}: points must be a number (2, -1.5), not "
                             f"{row.get('points')!r}.") from None
        earlier = found.get(student, Adjustment(0.0, ""))
        comment = "; ".join(c for c in (earlier.comment, (row.get("comment") or "").strip()) if c)
        found[student] = Adjustment(earlier.points + points, comment)
    return found
