"""OUT/roster.json: who each submission of a class is and when it was made, kept across
runs of `grade batch` so that the gradebook, rebuilt from every result in OUT, still knows
the names of students not listed this time (a one-student regrade).

The time a submission was made comes from a Gradescope bulk export's :created_at:, else from
its files: the newest modification time of a folder's files, or the zip's own. The roster
says which (`submitted_from`), since file times are only as good as the copy that made them
and a student can set them (a zip keeps the times its members were given): only Gradescope's
time counts towards lateness (`trusted_when`); a time from files is shown, never penalised.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from grader.errors import GradeError
from grader.instructor.export import UNSAFE_IN_NAME
from grader.instructor.submissions import MACOS_FORKS, Entry
from grader.results import write_file

FROM_METADATA, FROM_FILE_TIMES = "Gradescope metadata", "file times"


@dataclass
class Who:
    """One submission in OUT/roster.json."""

    source: str = ""  # the path it was listed from
    names: list[str] = field(default_factory=list)  # the submitters' (a group has several)
    emails: list[str] = field(default_factory=list)
    sids: list[str] = field(default_factory=list)
    submitted_at: str = ""  # ISO 8601 with its offset ("": not known)
    submitted_from: str = ""  # FROM_METADATA or FROM_FILE_TIMES
    submissions: int | None = None  # the bulk export's count (its :history: and this one)

    @property
    def when(self) -> datetime | None:
        return datetime.fromisoformat(self.submitted_at) if self.submitted_at else None

    @property
    def trusted_when(self) -> datetime | None:
        """When it was made, where Gradescope's metadata says so; None where the time came
        from file times, which the student controls: their lateness is not known."""
        return self.when if self.submitted_from == FROM_METADATA else None


def who(entry: Entry) -> Who:
    meta = entry.meta
    if meta is not None and meta.created_at is not None:
        when, source = meta.created_at, FROM_METADATA
    else:
        when, source = file_time(entry.source), FROM_FILE_TIMES
    people = meta.submitters if meta else ()
    # a path's bytes that are not UTF-8 (a folder named so) kept as escapes: the roster is text
    path = str(entry.source).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return Who(path, [p.name for p in people], [p.email for p in people],
               [p.sid for p in people], when.isoformat(timespec="seconds") if when else "",
               source if when else "", meta.submissions if meta else None)


def file_time(source: Path) -> datetime | None:
    """When a submission's files were last changed: a folder's newest file (outside
    __MACOSX/ and hidden folders such as .git/, which a later fetch touches), or a zip's own
    time."""
    try:
        if source.is_file():
            newest = source.stat().st_mtime
        else:
            newest = max((os.lstat(Path(folder) / name).st_mtime
                          for folder, dirs, files in os.walk(source)
                          if not _skipped(Path(folder).relative_to(source))
                          for name in files), default=None)
    except OSError:
        return None
    return None if newest is None else datetime.fromtimestamp(newest, timezone.utc)


def _skipped(relative: Path) -> bool:
    return any(part == MACOS_FORKS or part.startswith(".") for part in relative.parts)


def read_roster(out: Path) -> dict[str, Who]:
    path = out / "roster.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {name: Who(**row) for name, row in raw.items()}
    except (OSError, ValueError, TypeError):
        return {}


def update_roster(out: Path, found: list[Entry]) -> dict[str, Who]:
    """Add (or refresh) the submissions listed now to OUT/roster.json; the others stay."""
    roster = read_roster(out)
    roster.update({entry.name: who(entry) for entry in found})
    _write_roster(out, roster)
    return roster


def _write_roster(out: Path, roster: dict[str, Who]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_file(out / "roster.json", json.dumps({n: asdict(w) for n, w in sorted(roster.items())},
                                               indent=2, ensure_ascii=False) + "\n")


# The columns a class list may name its students by, in the order a student's key is taken:
# the gradebook's own `student`, else the SID a bulk export names results by, else the email.
KEYS = ("student", "sid", "email")


def import_roster(out: Path, path: Path) -> list[str]:
    """Add the students of a class list (a CSV with a header row naming `student`, `sid` or
    `email`, and `name` where it has one) to OUT/roster.json, so that the gradebook has a
    row for each, a 0 for one who handed nothing in; returns the names added. Raises
    GradeError, saying what the file lacks."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise GradeError(f"--roster {path} cannot be read: {getattr(exc, 'strerror', None) or exc}"
                         ". Export the class list as CSV (UTF-8).") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    header = {(h or "").strip().lower(): h for h in (rows[0].keys() if rows else [])}
    key = next((k for k in KEYS if k in header), None)
    if key is None:
        raise GradeError(f"--roster {path} has no column named student, sid or email (its "
                         f"header: {', '.join(header) or 'none'}); name the column that holds "
                         "each student's name in the gradebook so.")
    roster = read_roster(out)
    added = []
    for row in rows:
        name = UNSAFE_IN_NAME.sub("_", _cell(row, header, key)).strip("._")
        if not name:
            continue
        who = roster.setdefault(name, Who())
        if name not in added and not who.source:
            added.append(name)
        for field_name, column in (("names", "name"), ("emails", "email"), ("sids", "sid")):
            value = _cell(row, header, column)
            if value and value not in getattr(who, field_name):
                getattr(who, field_name).append(value)
    _write_roster(out, roster)
    return added


def _cell(row: dict, header: dict[str, str], column: str) -> str:
    """A class list's cell by its column's name, whatever its case ("" where there is none)."""
    return (row.get(header.get(column, ""), "") or "").strip()
