"""A class's submissions as `grade batch` finds them: which paths are students, and each
student's stage files laid over the course's exercises.

What one submission gives (a folder or a zip, the stage files at their places or bare at its
top, inside one top folder or not, within size limits, everything else listed as not taken)
is grader.intake.upload's rule, the one `grade --submission` and the Gradescope autograder
use too; here it is applied to each student of a class. A Gradescope bulk export
(grader.instructor.export) is a class whose submissions are named by who made them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from grader.course import Course
from grader.errors import GradeError
from grader.instructor.export import ExportError, Metadata, is_export, one_of
from grader.instructor.export import submissions as export_submissions
from grader.intake.overlay import Unpacked, lay_out
from grader.intake.upload import (FILE_LIMIT, TOTAL_LIMIT, NotASubmission,  # noqa: F401
                                  not_a_submission, read_upload, stage_paths)

MACOS_FORKS = "__MACOSX"  # a macOS zip's copies of file metadata, mirroring the real folders
IGNORED_SHOWN = 50  # ignored members listed per student; a zip may hold millions


@dataclass(frozen=True)
class Entry:
    name: str  # the student, from the folder or zip name (a bulk export: their SIDs)
    source: Path
    meta: Metadata | None = None  # who and when, where a bulk export says


# --- which paths are students ------------------------------------------------------------


def entries(course: Course, paths: list[Path]) -> list[Entry]:
    """The students named on the command line: each folder or zip is one, unless it is a
    folder of submissions (it holds no stage file itself, and some of its entries are
    submissions) or a Gradescope bulk export. A folder that is neither stays a student of
    its own name, so the gradebook says it is not a submission rather than listing what it
    contains."""
    try:
        return [entry for path in paths for entry in _entries_of(course, path)]
    except ExportError as exc:
        raise GradeError(str(exc)) from None


def _entries_of(course: Course, path: Path) -> list[Entry]:
    # One submission of an export, named alone (a regrade of one student), is that student
    # whatever it holds: an upload that brings its own submission_metadata.yml and
    # submission_NNNN/ folders was once read as an export, its forged names and times taken.
    if path.is_dir() and (alone := one_of(path)):
        return [Entry(alone[0], path, alone[1])]
    if path.is_dir() and is_export(path):
        return [Entry(name, p, meta) for name, p, meta in export_submissions(path)]
    if path.is_dir() and not _has_stage_files(course, path) and _holds_submissions(course, path):
        return [Entry(_name(p), p) for p in sorted(path.iterdir())
                if (p.is_dir() and not p.name.startswith(".")) or p.suffix == ".zip"]
    return [Entry(_name(path), path)]


# A submission's files in OUT/students/ are NAME.json, NAME.intake.json, ...: a name that
# ends so would write its result where another student's intake record is, or be read as one.
RESERVED_ENDING = ".intake"


def usable_names(found: list[Entry]) -> tuple[list[Entry], list[str]]:
    """Each submission under a name its result files can carry, and a note for each one the
    grader had to name itself: the name is the key of a student's results, so it must be
    UTF-8 text, must not end in RESERVED_ENDING (alice.intake.json is alice's intake record)
    and must be one submission's alone (two named 'ada', from two folders, would overwrite
    each other; the second, in the order of their paths, becomes 'ada-2'). A name from a
    student's files never stops the class."""
    names: dict[int, str] = {}
    notes, taken = [], set()
    for entry in sorted(found, key=lambda e: (e.name, str(e.source))):
        name, why = _usable(entry.name)
        base, count = name, 1
        while name in taken:
            count += 1
            name, why = f"{base}-{count}", f"another submission is named '{base}'"
        taken.add(name)
        names[id(entry)] = name
        if name != entry.name:
            notes.append(f"{entry.source}: its results are named '{name}' ({why})")
    return [replace(entry, name=names[id(entry)]) for entry in found], notes


def _usable(name: str) -> tuple[str, str]:
    """`name` as a file name of results, and why it changed if it did."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes no encoding of the file system's could read
        return (name.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
                "its name is not UTF-8 text")
    if name.endswith(RESERVED_ENDING):
        return (f"{name[:-len(RESERVED_ENDING)]}-intake",
                f"a result named {name}.json would be the intake record of "
                f"'{name[:-len(RESERVED_ENDING)]}'")
    return name, ""


def _has_stage_files(course: Course, folder: Path) -> bool:
    """Whether `folder` is laid out like exercises/ (or holds exercises/) with a stage file,
    or holds one bare at its top, as a drag-and-drop upload brings it."""
    paths = stage_paths(course)
    return any((candidate / p).is_file() for candidate in (folder / "exercises", folder)
               for p in paths) or any((folder / PurePosixPath(p).name).is_file() for p in paths)


def _holds_submissions(course: Course, folder: Path) -> bool:
    return any(p.suffix == ".zip" or (p.is_dir() and _exercise_root(course, p) is not None)
               for p in folder.iterdir() if not p.is_symlink())


def _name(path: Path) -> str:
    return path.stem if path.suffix == ".zip" else path.name


# --- one student or a class: the folders laid out like exercises/ ---------------------


def _exercise_root(course: Course, source: Path) -> Path | None:
    """The shallowest folder at or below `source` that is laid out like exercises/ and holds
    a stage file (outside __MACOSX/ and hidden folders such as .git/)."""
    paths = stage_paths(course)
    queue = [source]
    while queue:  # breadth first: the shallowest wins over one that merely sorts first
        level, queue = queue, []
        for folder in level:
            if _has_stage_files(course, folder):
                return folder / "exercises" if any((folder / "exercises" / p).is_file()
                                                   for p in paths) else folder
            queue += sorted(p for p in folder.iterdir()
                            if p.is_dir() and not p.is_symlink()
                            and p.name != MACOS_FORKS and not p.name.startswith("."))
    return None


# --- one student ------------------------------------------------------------------------


def unpack(entry: Entry, course: Course, into: Path) -> Unpacked:
    """The course's exercises overlaid with the submission's files, in `into`/exercises
    (grader.intake.upload's rule). Raises NotASubmission (no stage file) or ValueError (a
    corrupt zip)."""
    return lay_out(course, entry.source, into)


def listed(ignored: list[str]) -> list[str]:
    """The ignored members to show: the first IGNORED_SHOWN, and how many more."""
    more = len(ignored) - IGNORED_SHOWN
    return ignored[:IGNORED_SHOWN] + ([f"... and {more} more"] if more > 0 else [])


# --- what changed ----------------------------------------------------------------------------


# Leads every digest of the stage files alone: a digest without it was taken by an older
# grader of the whole laid-out folder, and says nothing about whether the files changed.
DIGEST_FORM = "files:"


def digest(files: dict[str, bytes]) -> str:
    """A digest of what a submission gives: the stage files taken from it (grader.intake.upload's
    rule, where each is graded -> its bytes), by path and content. The handout's files laid
    under them are left out, so a change to the handout is not taken for a new submission."""
    hashed = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        hashed.update(f"{name}\0{len(data)}\0".encode())
        hashed.update(data)
    return DIGEST_FORM + hashed.hexdigest()


def comparable(earlier: str | None) -> bool:
    """Whether a kept digest can say if the files changed (one of this form)."""
    return bool(earlier) and earlier.startswith(DIGEST_FORM)


def current_digest(entry: Entry, course: Course) -> str | None:
    """The digest of `entry` as it is now (None: not a submission, or unreadable)."""
    try:
        return digest(read_upload(course, entry.source).files)
    except (ValueError, OSError):
        return None
