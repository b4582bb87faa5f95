"""A course's outline: what `grade list` shows, and what a stage that is not started is
answered with (grader.grading.unstarted), kept from the course's last check.

Checking course.toml takes pydantic and every problem, and the problems take PyTorch: 1-2 s
before `grade list` could print a line. The outline is made from the checked Course (the
course is described once, by the checker) and kept on this machine (grader.cache) under a
key of everything the check read: course.toml and course.hidden.toml byte for byte, the
grader's own sources, and the Python and pydantic it ran with. A course or a grader that
changed is checked again, and says what is wrong as it always did; one unchanged since its
last check here is not checked again to be listed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader import cache
from grader.course.naming import HIDDEN_FILE, named, stage_name

if TYPE_CHECKING:  # the dataclasses, and the loading: for a course that is checked
    from grader.course.model import Course

CACHE_FILE = cache.ROOT / "courses.json"
KEPT = 16  # outlines kept: a student has one course, an instructor's tests write many
PACKAGE = Path(__file__).resolve().parents[1]  # grader/


@dataclass(frozen=True)
class StageOutline:
    number: int
    id: str
    title: str
    points: float
    modules: dict[str, str]  # track -> path below exercises/ and solutions/
    case_count: int  # its correctness cases, the hidden ones included

    @property
    def name(self) -> str:
        return stage_name(self.number)


@dataclass(frozen=True)
class CourseOutline:
    path: Path
    title: str
    stages: tuple[StageOutline, ...]

    @property
    def root(self) -> Path:
        return self.path.parent

    def named(self, selectors) -> list[StageOutline]:
        """The stages named, as Course.named chooses them (with its errors)."""
        return named(self.stages, selectors)


def outline(course: Course) -> CourseOutline:
    """The outline of a checked course."""
    return CourseOutline(course.path, course.title, tuple(
        StageOutline(s.number, s.id, s.title, s.points, dict(s.modules), s.case_count)
        for s in course.stages))


def load_and_keep(path: Path) -> Course:
    """load_course(path), whose outline is kept when it checks (and the files it read did
    not change meanwhile)."""
    from grader.course.loading import load_course

    before = key(path)
    course = load_course(path)
    if before is not None and key(path) == before:
        made = outline(course)
        cache.remember(CACHE_FILE, before, {
            "title": made.title, "stages": [asdict(s) for s in made.stages]}, keep=KEPT)
    return course


def kept(path: Path) -> CourseOutline | None:
    """The outline of the course.toml at `path` from its last check on this machine; None
    where it was not checked here as it is now (or its record cannot be read)."""
    found = key(path)
    entry = cache.lookup(CACHE_FILE, found) if found else None
    try:
        return CourseOutline(path.resolve(), entry["title"],
                             tuple(StageOutline(**stage) for stage in entry["stages"]))
    except (KeyError, TypeError):  # none kept, or not in this grader's shape
        return None


def key(path: Path) -> str | None:
    """What a check of the course.toml at `path` depends on, as one digest; None where it
    cannot be read (the check says why)."""
    digest = hashlib.sha256()
    try:
        digest.update(Path(path).read_bytes())
        hidden = Path(path).with_name(HIDDEN_FILE)
        digest.update(hidden.read_bytes() if hidden.is_file() else b"no hidden cases")
    except OSError:
        return None
    digest.update(sys.version.encode())
    pydantic = importlib.util.find_spec("pydantic")
    for source in [*_sources(), *([Path(pydantic.origin)] if pydantic and pydantic.origin else [])]:
        try:
            stat = source.stat()
        except OSError:
            continue
        digest.update(f"{source}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _sources() -> list[Path]:
    """The grader's own modules, in a fixed order."""
    found = []
    for folder, subfolders, files in os.walk(PACKAGE):
        subfolders[:] = sorted(f for f in subfolders if f != "__pycache__")
        found += [Path(folder, f) for f in sorted(files) if f.endswith(".py")]
    return found
