"""A class's submissions as `grade batch` finds them: which paths are students, and each
student's stage files laid over the course's exercises.

What one submission gives (a folder or a zip, the stage files at their places or bare at its
top, inside one top folder or not, within size limits, everything else listed as not taken)
is grader.intake.upload's rule, the one `grade --submission` and the Gradescope autograder
use too; here it is applied to each student of a class.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.course import Course
from grader.intake.overlay import Unpacked, lay_out
from grader.intake.upload import (FILE_LIMIT, TOTAL_LIMIT, NotASubmission,  # noqa: F401
                                  not_a_submission, stage_paths)

MACOS_FORKS = "__MACOSX"  # a macOS zip's copies of file metadata, mirroring the real folders
IGNORED_SHOWN = 50  # ignored members listed per student; a zip may hold millions


@dataclass(frozen=True)
class Entry:
    name: str  # the student, from the folder or zip name
    source: Path


# --- which paths are students ------------------------------------------------------------


def entries(course: Course, paths: list[Path]) -> list[Entry]:
    """The students named on the command line: each folder or zip is one, unless it is a
    folder of submissions (it holds no stage file itself, and some of its entries are
    submissions). A folder that is neither stays a student of its own name, so the
    gradebook says it is not a submission rather than listing what it contains."""
    found = []
    for path in paths:
        if path.is_dir() and not _has_stage_files(course, path) and _holds_submissions(course, path):
            found += [Entry(_name(p), p) for p in sorted(path.iterdir())
                      if (p.is_dir() and not p.name.startswith(".")) or p.suffix == ".zip"]
        else:
            found.append(Entry(_name(path), path))
    return found


def _has_stage_files(course: Course, folder: Path) -> bool:
    """Whether `folder` is laid out like exercises/ (or holds exercises/) with a stage file."""
    return any((candidate / p).is_file() for candidate in (folder / "exercises", folder)
               for p in stage_paths(course))


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
