"""A class's submissions as `grade batch` finds them: which paths are students, and each
student's stage files laid over the course's exercises.

A class is hostile input. A folder (a git checkout) is taken as it is, minus symbolic links;
a zip is only read, never extracted: of its members, only the stage files are taken (at the
paths course.toml names, below exercises/ or not, optionally inside one top folder, or the
bare file names as Gradescope uploads arrive), each within a size limit and all of them
within a total. Everything else is ignored and listed, so the student's feedback can say
what was not graded and why. A Gradescope bulk export (grader.instructor.export) is a class
whose submissions are named by who made them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.course import Course
from grader.errors import GradeError
from grader.instructor.export import ExportError, Metadata, is_export, one_of
from grader.instructor.export import submissions as export_submissions
from grader.tracks import TRACKS

MACOS_FORKS = "__MACOSX"  # a macOS zip's copies of file metadata, mirroring the real folders
FILE_LIMIT = 256 << 10  # bytes per stage file: the references are under 20 KiB
TOTAL_LIMIT = 2 << 20  # bytes of stage files per submission
IGNORED_SHOWN = 50  # ignored zip members listed per student; a zip may hold millions
LOOKED_FOR_SHOWN = 3  # stage paths named in "not a submission"


class NotASubmission(ValueError):
    """A path that holds no stage file: reported under its own name, never graded."""

    def __init__(self, message: str, ignored: list[str] | None = None):
        super().__init__(message)
        self.ignored = ignored or []  # a zip's members that were not taken, for the feedback


@dataclass(frozen=True)
class Entry:
    name: str  # the student, from the folder or zip name (a bulk export: their SIDs)
    source: Path
    meta: Metadata | None = None  # who and when, where a bulk export says


@dataclass
class Unpacked:
    exercises: Path  # the course's exercises with the submission's files over them
    ignored: list[str] = field(default_factory=list)  # "member: why", for the feedback


def stage_paths(course: Course) -> list[str]:
    """Every stage file, as it sits below exercises/ ("triton/stage1_vector_add.py")."""
    return [stage.modules[track] for stage in course.stages for track in TRACKS]


def not_a_submission(course: Course, ignored: list[str] | None = None) -> NotASubmission:
    paths = stage_paths(course)
    shown = ", ".join(f"exercises/{p}" for p in paths[:LOOKED_FOR_SHOWN])
    more = " ..." if len(paths) > LOOKED_FOR_SHOWN else ""
    return NotASubmission(f"not a submission: no stage files found (looked for {shown}{more})",
                          ignored)


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
    if path.is_dir() and is_export(path):
        return [Entry(name, p, meta) for name, p, meta in export_submissions(path)]
    if path.is_dir() and (alone := one_of(path)):  # one submission of an export, named alone
        return [Entry(alone[0], path, alone[1])]
    if path.is_dir() and not _has_stage_files(course, path) and _holds_submissions(course, path):
        return [Entry(_name(p), p) for p in sorted(path.iterdir())
                if (p.is_dir() and not p.name.startswith(".")) or p.suffix == ".zip"]
    return [Entry(_name(path), path)]


def require_unique_names(found: list[Entry]) -> None:
    """Two submissions of one name would overwrite each other's results: name both."""
    first: dict[str, Path] = {}
    for entry in found:
        if entry.name in first:
            raise GradeError(f"Two submissions are both named '{entry.name}': {first[entry.name]} "
                             f"and {entry.source}. Their results would overwrite each other; "
                             "rename one (or grade them into different --out folders).")
        first[entry.name] = entry.source


def _has_stage_files(course: Course, folder: Path) -> bool:
    """Whether `folder` is laid out like exercises/ (or holds exercises/) with a stage file."""
    return any((candidate / p).is_file() for candidate in (folder / "exercises", folder)
               for p in stage_paths(course))


def _holds_submissions(course: Course, folder: Path) -> bool:
    return any(p.suffix == ".zip" or (p.is_dir() and _exercise_root(course, p) is not None)
               for p in folder.iterdir() if not p.is_symlink())


def _name(path: Path) -> str:
    return path.stem if path.suffix == ".zip" else path.name


# --- a folder --------------------------------------------------------------------------------


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


def _python_files(root: Path) -> list[Path]:
    """The submission's .py files (outside __MACOSX/); raises ValueError for a link."""
    found = []
    for folder, dirs, files in os.walk(root):  # never into linked folders
        here = Path(folder)
        if MACOS_FORKS in here.relative_to(root).parts:
            continue
        for name in dirs + files:
            if (here / name).is_symlink() and (name in dirs or name.endswith(".py")):
                raise ValueError(f"{(here / name).relative_to(root)} is a symbolic link; "
                                 "submit the files themselves")
        found += [here / name for name in files if name.endswith(".py")]
    return sorted(found)


def _overlay_folder(course: Course, source: Path, exercises: Path) -> None:
    root = _exercise_root(course, source)
    if root is None:
        raise not_a_submission(course)
    for file in _python_files(root):
        target = exercises / file.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target, follow_symlinks=False)


# --- a zip -----------------------------------------------------------------------------------


def _classify(course: Course, name: str) -> tuple[str, str]:
    """What a member's name stands for: ("stage", its stage path), ("bare", "") for a
    stage file's name alone (its track is told by its content), or ("ignored", why)."""
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\\" in name:
        return "ignored", "an absolute path"
    parts = PurePosixPath(name).parts
    if ".." in parts:
        return "ignored", "a path outside the submission (..)"
    known = set(stage_paths(course))
    for start in (0, 1):  # the paths themselves, or inside one top folder (a zipped folder)
        rest = parts[start:]
        rest = rest[1:] if rest[:1] == ("exercises",) else rest
        if "/".join(rest) in known:
            return "stage", "/".join(rest)
    if len(parts) <= 2 and parts[-1] in {PurePosixPath(p).name for p in known}:
        return "bare", ""
    return "ignored", "not a stage file"


def _bare_track(source: bytes) -> str | None:
    """The track of a bare stage file, from what it imports (both tracks share names)."""
    text = source.decode("utf-8", errors="replace")
    found = [name for name, track in TRACKS.items() if track.imports.search(text)]
    return found[0] if len(found) == 1 else None


def _is_link_or_special(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if mode and stat.S_IFMT(mode) and not stat.S_ISREG(mode):
        return "not a regular file"
    return ""


def _read_bounded(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes | None:
    """The member's bytes, or None past `limit`: read, not trusted from the header (a zip
    can claim any size), and never more than limit + 1 bytes decompressed."""
    with archive.open(info) as handle:
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def _overlay_zip(course: Course, source: Path, exercises: Path) -> list[str]:
    """Write the zip's stage files over `exercises`; returns the ignored members."""
    ignored: list[str] = []
    taken: dict[str, str] = {}  # stage path -> the member it came from
    total = 0
    try:
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                name = info.filename
                if info.is_dir() or MACOS_FORKS in PurePosixPath(name).parts:
                    continue  # folders carry no code; __MACOSX/ is metadata the OS added
                kind, target = _classify(course, name)
                why = _is_link_or_special(info) or (target if kind == "ignored" else "")
                data = None if why else _read_bounded(archive, info, FILE_LIMIT)
                if not why and data is None:
                    why = f"larger than {FILE_LIMIT >> 10} KiB"
                elif not why and total + len(data) > TOTAL_LIMIT:
                    why = f"over the submission's {TOTAL_LIMIT >> 20} MiB of stage files"
                elif not why and kind == "bare":
                    target, why = _bare_target(course, name, data)
                if not why and target in taken:
                    why = f"a second copy of {target} (took {taken[target]})"
                if why:
                    ignored.append(f"{name}: {why}")
                    continue
                taken[target] = name
                total += len(data)
                (exercises / target).parent.mkdir(parents=True, exist_ok=True)
                (exercises / target).write_bytes(data)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
        raise ValueError(f"{source.name} is not a valid zip file ({exc})") from None
    if not taken:
        raise not_a_submission(course, ignored)
    return ignored


def _bare_target(course: Course, name: str, data: bytes) -> tuple[str | None, str]:
    track = _bare_track(data)
    if track is None:
        return None, "a stage file name, but it imports neither triton nor cuda.tile"
    bare = PurePosixPath(name).name
    target = next(p for p in stage_paths(course)
                  if p.startswith(f"{track}/") and PurePosixPath(p).name == bare)
    return target, ""


# --- both ------------------------------------------------------------------------------------


def unpack(entry: Entry, course: Course, into: Path) -> Unpacked:
    """The course's exercises overlaid with the submission's files, in `into`/exercises.
    Raises NotASubmission (no stage file) or ValueError (a corrupt zip, a link)."""
    exercises = into / "exercises"
    shutil.copytree(course.root / "exercises", exercises)
    if entry.source.suffix == ".zip" and entry.source.is_file():
        return Unpacked(exercises, _overlay_zip(course, entry.source, exercises))
    if entry.source.is_dir():
        _overlay_folder(course, entry.source, exercises)
        return Unpacked(exercises)
    raise NotASubmission(f"not a submission: {entry.source.name} is neither a folder nor a "
                         ".zip file")


def listed(ignored: list[str]) -> list[str]:
    """The ignored members to show: the first IGNORED_SHOWN, and how many more."""
    more = len(ignored) - IGNORED_SHOWN
    return ignored[:IGNORED_SHOWN] + ([f"... and {more} more"] if more > 0 else [])


# --- what changed ----------------------------------------------------------------------------


def digest(exercises: Path) -> str:
    """A digest of what is graded of a submission: every file of its unpacked exercises
    (the course's skeleton with the submission's files over it), by path and content."""
    hashed = hashlib.sha256()
    for path in sorted(p for p in exercises.rglob("*") if p.is_file() and not p.is_symlink()):
        name = path.relative_to(exercises).as_posix()
        if "__pycache__" in name:
            continue
        data = path.read_bytes()
        hashed.update(f"{name}\0{len(data)}\0".encode())
        hashed.update(data)
    return hashed.hexdigest()


def current_digest(entry: Entry, course: Course) -> str | None:
    """The digest of `entry` as it is now (None: not a submission, or unreadable)."""
    with tempfile.TemporaryDirectory(prefix="tilecourse-digest-") as tmp:
        try:
            return digest(unpack(entry, course, Path(tmp)).exercises)
        except (ValueError, OSError):
            return None
