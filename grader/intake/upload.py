"""One submission as it arrives, read by one rule wherever it arrives: a folder (a checkout,
Gradescope's /autograder/submission), a zip, or one stage file, given to `grade
--submission`, `grade batch` or the Gradescope autograder.

A submission is hostile input. Nothing of it is extracted, followed or run here: its names
are looked at, and only its stage files are read, each within a size limit and all of them
within a total. The rule:

- A stage file is a file named as one of course.toml's stage files (stage1_vector_add.py).
- Its track is the name of its folder where that is a track (triton/, cutile/), at any depth
  and below exercises/ or not. A file at the submission's top, as a drag-and-drop upload
  puts it, is told by what it imports (the two tracks share the file names); the top is the
  submission itself, or the one folder that holds all of it (mywork/ of a zipped folder).
- Of several files for one stage, one in its track's folder is taken before one told by its
  imports, then the shallowest, then the first by name; the others are listed as copies.
- Everything else is not taken and listed with why (another name, a link or special file,
  an absolute name or `..`, too large, a track that cannot be told), except the tools' own
  files (hidden ones such as .git/ and .DS_Store, __MACOSX/, __pycache__/) and the
  handout's own (its README, the grader), which are not even listed.
- A stage file that the submission lacks is the handout's skeleton, NOT STARTED
  (grader.intake.overlay lays the files taken over the course's exercises).
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.course import Course
from grader.errors import GradeError
from grader.quoting import single_line
from grader.tracks import TRACKS

FILE_LIMIT = 256 << 10  # bytes per stage file: the references are under 20 KiB
TOTAL_LIMIT = 2 << 20  # bytes of stage files per submission
# Bytes read in all, copies and files whose track is told by their imports included: a
# submission of many copies of stage files costs no more than this.
READ_LIMIT = 4 * TOTAL_LIMIT
MEMBER_LIMIT = 20_000  # names looked at; a zip may hold millions
NAME_CHARS = 200  # of a member's name in a message
LOOKED_FOR_SHOWN = 3  # stage paths named in "not a submission"
TOOLS_OWN = ("__MACOSX", "__pycache__")  # a macOS zip's metadata, Python's caches
NOT_A_STAGE_FILE = "not a stage file"
SCRATCH = "exercises"  # the laid-out submission's folder, as messages name it
# What reading one file or zip member may raise: a file without permission, a member whose
# data is corrupt (zlib), encrypted (RuntimeError) or compressed in a way Python lacks.
UNREADABLE = (OSError, zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError,
              RuntimeError)


class UploadError(GradeError, ValueError):
    """A submission that cannot be read (a corrupt zip)."""


class NotASubmission(UploadError):
    """A path that holds no stage file: reported under its own name, never graded."""

    def __init__(self, message: str, ignored: list[str] | None = None):
        super().__init__(message)
        self.ignored = ignored or []  # what of it was not taken, for the feedback


@dataclass(frozen=True)
class Taken:
    """A stage file taken from the submission."""

    target: str  # where it is graded, below exercises/ ("triton/stage1_vector_add.py")
    member: str  # its name in the submission ("stage1_vector_add.py")
    told_by: str = ""  # how its track was told, where its folder did not tell it

    def note(self) -> str:
        """A line for the student where the file was not at its place in exercises/."""
        if self.member in (self.target, f"{SCRATCH}/{self.target}") and not self.told_by:
            return ""
        how = f" ({self.told_by})" if self.told_by else ""
        return f"{shown(self.member)}: graded as {SCRATCH}/{self.target}{how}"


@dataclass
class Upload:
    """What one submission gives: its stage files' contents and what was not taken."""

    files: dict[str, bytes] = field(default_factory=dict)  # target -> the file's bytes
    taken: list[Taken] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # "member: why"


@dataclass(frozen=True)
class Member:
    """A name in the submission, and why it cannot be read ("" where it can)."""

    name: str
    refused: str = ""


Reader = Callable[[str, int], "bytes | None"]  # (member, limit) -> its bytes, None past limit


# --- the rule --------------------------------------------------------------------------------


def stage_paths(course: Course) -> list[str]:
    """Every stage file, as it sits below exercises/ ("triton/stage1_vector_add.py")."""
    return [stage.modules[track] for stage in course.stages for track in TRACKS]


def not_a_submission(course: Course, ignored: list[str] | None = None) -> NotASubmission:
    paths = stage_paths(course)
    looked = ", ".join(f"exercises/{p}" for p in paths[:LOOKED_FOR_SHOWN])
    more = " ..." if len(paths) > LOOKED_FOR_SHOWN else ""
    return NotASubmission(f"not a submission: no stage files found (looked for {looked}{more})",
                          ignored)


def shown(name: str) -> str:
    """A name from the submission in a message: one line, escaped, cut (grader.quoting)."""
    return single_line(name, NAME_CHARS)


def unsafe(name: str) -> str:
    """Why a member's name may not be used as a path ("" where it may)."""
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\\" in name:
        return "an absolute path"
    if ".." in PurePosixPath(name).parts:
        return "a path outside the submission (..)"
    return ""


def tools_own(name: str) -> bool:
    """Files an operating system or tool adds, never the student's work: not even listed."""
    return any((part.startswith(".") and part != "..") or part in TOOLS_OWN
               for part in PurePosixPath(name).parts)


def top(names: list[str]) -> tuple[str, ...]:
    """The folders that hold all of the submission, one inside the other (mywork/ of a zipped
    folder): never a track's folder, whose name tells the track of what it holds."""
    parts = [PurePosixPath(n).parts for n in names]
    common: tuple[str, ...] = ()
    while parts and all(len(p) > len(common) + 1 for p in parts):
        head = {p[len(common)] for p in parts}
        if len(head) != 1 or next(iter(head)) in TRACKS:
            break
        common += (head.pop(),)
    return common


def track_of(source: bytes) -> tuple[str | None, str]:
    """The track a file at the submission's top belongs to, told by what it imports: (track,
    how it was told), or (None, why it cannot be told)."""
    if b"\0" in source:
        return None, "not a text file, so its track cannot be told"
    text = source.decode("utf-8", errors="replace").removeprefix("\ufeff")  # Windows' mark
    found = [name for name, track in TRACKS.items() if track.imports.search(text)]
    if len(found) == 1:
        return found[0], f"it imports {TRACKS[found[0]].module}"
    folders = " or ".join(f"{t}/" for t in TRACKS)
    modules = " and ".join(t.module for t in TRACKS.values())
    neither = modules.replace(" and ", " nor ")
    what = f"it imports both {modules}" if found else f"it imports neither {neither}"
    return None, (f"could be either track's ({folders}): {what}; put it in the folder of its "
                  "track, or import only the language its kernels use")


@dataclass(frozen=True)
class Candidate:
    member: str
    name: str  # the stage file's name
    target: str  # the stage path its folder tells; "" where its imports must tell
    rank: tuple


def handout_has(course: Course, member: str, root: tuple[str, ...]) -> bool:
    """Whether a file that is not a stage file is one of the handout's own (its README, the
    grader): a student who hands in the whole handout is not told of each of them."""
    relative = PurePosixPath(*PurePosixPath(member).parts[len(root):])
    try:
        return any((folder / relative).is_file()
                   for folder in (course.root, course.root / "exercises"))
    except (OSError, ValueError):  # a name no file system holds (a NUL, too long)
        return False


def candidate(course: Course, member: str, root: tuple[str, ...]) -> Candidate | str:
    """What a member could be: a Candidate, or why it is not a stage file."""
    parts = PurePosixPath(member).parts
    known = set(stage_paths(course))
    folder_tells = "/".join(parts[-2:])
    if folder_tells in known:
        usual = parts[:-2] in ((), ("exercises",), root, (*root, "exercises"))
        return Candidate(member, parts[-1], folder_tells, (0, not usual, len(parts), member))
    if parts[-1] not in {PurePosixPath(p).name for p in known}:
        return NOT_A_STAGE_FILE
    if parts[:-1] == root:
        return Candidate(member, parts[-1], "", (1, False, len(parts), member))
    tracks = " or ".join(f"{t}/" for t in TRACKS)
    return (f"a stage file's name, but neither at the submission's top nor in a {tracks} "
            "folder; move it to one of them")


def take(course: Course, members: list[Member], read: Reader) -> Upload:
    """The rule, over a submission's members; `read` reads one of them, bounded."""
    upload = Upload()
    listed = [m for m in members if not tools_own(m.name)]
    for member in listed[MEMBER_LIMIT:MEMBER_LIMIT + 1]:
        upload.ignored.append(f"{shown(member.name)} and {len(listed) - MEMBER_LIMIT - 1} more: "
                              f"not looked at (over {MEMBER_LIMIT} files)")
    looked = [m if m.refused else Member(m.name, unsafe(m.name)) for m in listed[:MEMBER_LIMIT]]
    root = top([m.name for m in looked if not m.refused])
    found: list[Candidate] = []
    for member in looked:
        kind = member.refused or candidate(course, member.name, root)
        if isinstance(kind, str):
            if not (kind == NOT_A_STAGE_FILE and handout_has(course, member.name, root)):
                upload.ignored.append(f"{shown(member.name)}: {kind}")
        else:
            found.append(kind)
    _choose(course, sorted(found, key=lambda c: c.rank), read, upload)
    return upload


def _choose(course: Course, found: list[Candidate], read: Reader, upload: Upload) -> None:
    """Take the best candidate of each stage file, within the limits."""
    total = spent = 0
    for cand in found:
        if spent > READ_LIMIT:
            upload.ignored.append(f"{shown(cand.member)}: not read (the submission holds too many "
                                  "copies of stage files)")
            continue
        try:
            data = read(cand.member, FILE_LIMIT)
        except UNREADABLE as exc:
            upload.ignored.append(f"{shown(cand.member)}: cannot be read ({single_line(exc)})")
            continue
        spent += FILE_LIMIT if data is None else len(data)
        target, told = cand.target, ""
        why = f"larger than {FILE_LIMIT >> 10} KiB" if data is None else ""
        if not why and not target:
            track, told = track_of(data)
            target = course_path(course, track, cand.name) if track else ""
            why = "" if track else told
        if not why and target in upload.files:
            took = next(t.member for t in upload.taken if t.target == target)
            why = f"a second copy of {SCRATCH}/{target} (took {shown(took)})"
        elif not why and total + len(data) > TOTAL_LIMIT:
            why = f"over the submission's {TOTAL_LIMIT >> 20} MiB of stage files"
        if why:
            upload.ignored.append(f"{shown(cand.member)}: {why}")
            continue
        total += len(data)
        upload.files[target] = data
        upload.taken.append(Taken(target, cand.member, told))


def course_path(course: Course, track: str, name: str) -> str:
    return next(p for p in stage_paths(course)
                if p.startswith(f"{track}/") and PurePosixPath(p).name == name)


# --- where it comes from -----------------------------------------------------------------------


def read_upload(course: Course, source: Path) -> Upload:
    """One submission's stage files by the rule, from a folder, a zip or one stage file.
    Raises NotASubmission (no stage file) or UploadError (a corrupt zip)."""
    if source.is_dir() and not source.is_symlink():
        members = list(folder_members(source))
        upload = take(course, members, lambda name, limit: _read_file(source / name, limit))
        if not upload.files and (inner := _the_one_zip(members)):
            # A zip left unopened inside an upload (a zip of the zip, on Gradescope, which
            # opens the outer one): read as the submission, one level deep and no more.
            upload = _read_zip(course, source / inner, within=f"{inner}/")
    elif source.suffix == ".zip" and source.is_file():
        upload = _read_zip(course, source)
    elif source.suffix == ".py" and source.is_file() and not source.is_symlink():
        # One stage file alone: an upload of that one file.
        upload = take(course, [Member(source.name)],
                      lambda name, limit: _read_file(source.parent / name, limit))
    else:
        raise NotASubmission(f"not a submission: {source.name} is neither a folder, a .zip "
                             "file nor a stage file")
    if not upload.files:
        raise not_a_submission(course, upload.ignored)
    return upload


def folder_members(root: Path) -> Iterator[Member]:
    """A folder's files, never through a link (a link is a member that is refused)."""
    for folder, dirs, files in os.walk(root):  # os.walk never enters a linked folder
        here = Path(folder)
        for name in sorted(dirs + files):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                yield Member(relative, "a symbolic link; submit the file itself")
            elif name in files:
                yield Member(relative, "" if path.is_file() else "not a regular file")
        dirs[:] = sorted(d for d in dirs if not tools_own(d))


def _read_file(path: Path, limit: int) -> bytes | None:
    with path.open("rb") as handle:  # read, never trusted from stat: a file can grow
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def _the_one_zip(members: list[Member]) -> str | None:
    """The name of the one zip among a folder's readable files, if there is exactly one."""
    zips = [m.name for m in members if not m.refused and m.name.lower().endswith(".zip")]
    return zips[0] if len(zips) == 1 else None


def _read_zip(course: Course, source: Path, within: str = "") -> Upload:
    """`source`'s stage files by the rule; `within` goes before each member's name where
    the zip lies inside the upload (what the student reads names the zip too)."""
    try:
        with zipfile.ZipFile(source) as archive:
            infos = {within + i.filename: i for i in archive.infolist() if not i.is_dir()}
            members = [Member(name, _special(info)) for name, info in infos.items()]

            def read(name: str, limit: int) -> bytes | None:
                # Never more than limit + 1 bytes decompressed: a zip can claim any size.
                with archive.open(infos[name]) as handle:
                    data = handle.read(limit + 1)
                return data if len(data) <= limit else None

            return take(course, members, read)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError,
            OSError) as exc:
        raise UploadError(f"{source.name} is not a valid zip file ({exc})") from None


def _special(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if mode and stat.S_IFMT(mode) and not stat.S_ISREG(mode):
        return "not a regular file"
    return ""
