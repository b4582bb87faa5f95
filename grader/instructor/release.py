"""`grade release OUTDIR`: the student handout, built from the instructor's course.

The handout holds what a student needs to work and to grade themselves: the exercises,
the grader, course.toml (public cases only: hidden cases live in course.hidden.toml, which
is never copied), the students' README (exercises/README.md, as the handout's README.md),
pyproject.toml, and the CI files that grade a student's repository on each push (from
templates/). It never holds solutions/, tests/ (they read the solutions) or the scripts that
time the references. After copying, every file of
the handout is scanned for lines of reference code, and the release fails if one is found.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from grader.course import HIDDEN_FILE, Course
from grader.errors import GradeError
from grader.instructor.backups import is_backup
from grader.instructor.notebook import write_notebook
from grader.instructor.skeletons import regions

COPIED = ("exercises", "grader", "course.toml", "pyproject.toml", ".gitignore")
# The students' README is course content next to their exercises; it becomes the handout's
# README.md (the course's own README is for instructors and developers). A course without
# one hands out its README.md.
STUDENT_README = "exercises/README.md"
# The course's copy of the notebook, next to the exercises; the handout gets it at its root,
# written afresh from the course (grader.instructor.notebook).
STUDENT_NOTEBOOK = "exercises/tilecourse.ipynb"
# The CI files a student's repository runs (templates/ -> the handout), where each host
# looks for them: GitHub Actions and GitLab CI. A course without templates/ hands out none.
CI_TEMPLATES = {"templates/github/grade.yml": ".github/workflows/grade.yml",
                "templates/gitlab/gitlab-ci.yml": ".gitlab-ci.yml"}


class ReleaseError(GradeError):
    """The handout cannot be built, or would give the solutions away."""


def release(course: Course, out: Path, force: bool = False) -> list[Path]:
    """Write the handout into `out`; returns the files written."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ReleaseError(f"{out} exists and is not a folder.")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ReleaseError(f"{out} is not empty. Choose an empty folder, or pass --force to "
                           "write the handout over what is there.")
    if out.resolve() == course.root.resolve() or course.root.resolve() in out.resolve().parents:
        raise ReleaseError(f"{out} is inside the course itself; choose a folder outside it.")
    written = []
    for name in COPIED:
        source = course.root / name
        if not source.exists():
            continue
        files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
        for file in files:
            relative = file.relative_to(course.root)
            if "__pycache__" in relative.parts or file.suffix == ".pyc" \
                    or relative.name == HIDDEN_FILE or is_backup(relative.name) \
                    or relative.as_posix() in (STUDENT_README, STUDENT_NOTEBOOK):
                continue
            written.append(_copy(file, out / relative))
    written.append(write_notebook(course, out))
    written += [_copy(course.root / template, out / target)
                for template, target in CI_TEMPLATES.items() if (course.root / template).is_file()]
    readme = next((p for p in (course.root / STUDENT_README, course.root / "README.md")
                   if p.is_file()), None)
    if readme is not None:
        written.append(_copy(readme, out / "README.md"))
    leaks = solution_leaks(course, written)
    if leaks:
        raise ReleaseError("The handout would contain reference code, so nothing should be "
                           "handed out from " + str(out) + ":\n" + "\n".join(f"  - {x}" for x in leaks[:10]))
    return written


AUTOGRADER_TEMPLATES = "templates/gradescope"
AUTOGRADER_SCRIPTS = ("setup.sh", "run_autograder")  # Gradescope runs these from the zip's top
EXECUTABLE, READABLE = 0o755, 0o644


def autograder(course: Course, out: Path, force: bool = False) -> list[str]:
    """Gradescope's autograder zip at `out`: the handout (as `release` writes it), the
    hidden cases, and templates/gradescope's setup.sh and run_autograder, all at the zip's
    top, which Gradescope unpacks into /autograder/source. Returns the zip's member names."""
    out = Path(out)
    if out.suffix != ".zip":
        raise ReleaseError(f"{out} does not end in .zip; Gradescope takes the autograder as a zip.")
    if out.exists() and not force:
        raise ReleaseError(f"{out} exists. Choose another name, or pass --force to replace it.")
    templates = course.root / AUTOGRADER_TEMPLATES
    missing = [name for name in AUTOGRADER_SCRIPTS if not (templates / name).is_file()]
    if missing:
        raise ReleaseError(f"{templates} lacks {', '.join(missing)}: the autograder zip is "
                           "built from the course's Gradescope templates.")
    with tempfile.TemporaryDirectory(prefix="tilecourse-autograder-") as tmp:
        source = Path(tmp) / "source"
        release(course, source)
        if course.hidden_file is not None:  # graded on Gradescope, never in the handout
            _copy(course.hidden_file, source / HIDDEN_FILE)
        for name in AUTOGRADER_SCRIPTS:
            _copy(templates / name, source / name)
        return _zip_folder(source, out)


def _zip_folder(folder: Path, out: Path) -> list[str]:
    """Zip `folder`'s files at the zip's top, the scripts executable; written beside `out`
    and renamed into place, so a failure never leaves half a zip (nor an old one damaged)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    os.close(fd)
    names = []
    try:
        with zipfile.ZipFile(scratch, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(p for p in folder.rglob("*") if p.is_file()):
                name = file.relative_to(folder).as_posix()
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                mode = EXECUTABLE if name in AUTOGRADER_SCRIPTS else READABLE
                info.external_attr = (0o100000 | mode) << 16  # a regular file, with its mode
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, file.read_bytes())
                names.append(name)
        os.replace(scratch, out)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
    return names


def _copy(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
    return target


MIN_LENGTH = 16  # shorter lines (`return out`) are too generic to count as a leak


# The parts of a solution (grader.instructor.skeletons.regions) that no exercise shows: a
# TODO block's reference lines, both configurations of a tuned block inside one, and the
# reference's tuned lines of a TUNE place (the exercise shows its plain lines instead).
HIDDEN_PARTS = {"solution", "solution-tuned", "solution-plain", "tuned"}
# The parts written as comments in the solution (placeholders and plain lines).
COMMENTED_PARTS = {"exercise", "plain", "solution-plain"}


def split_solution(source: str, origin: str = "<solution>") -> tuple[set[str], set[str]]:
    """(code lines of the reference that the exercise drops, lines a student sees in it).

    Raises MarkerError for markers out of order, as `grade skeletons` does.
    """
    hidden, visible = set(), set()
    for part, _, line in regions(source, origin):
        line = line.strip()
        if part in COMMENTED_PARTS:  # un-commented in the exercise or the plain solution
            line = line.removeprefix("#").strip()
        if part in HIDDEN_PARTS:
            if line and not line.startswith("#"):
                hidden.add(line)
        elif part != "tune":
            visible.add(line)
    return hidden, visible


def secret_lines(solution_files: list[Path]) -> set[str]:
    """Lines of reference code that no exercise shows (given code, placeholders)."""
    hidden, visible = set(), set()
    for path in solution_files:
        h, v = split_solution(path.read_text(encoding="utf-8"), str(path))
        hidden |= h
        visible |= v
    return {line for line in hidden - visible if len(line) >= MIN_LENGTH}


def solution_leaks(course: Course, files: list[Path]) -> list[str]:
    """'file: line' for every handout line that is a line of reference code."""
    solutions = course.root / "solutions"
    secret = secret_lines(sorted(solutions.rglob("*.py"))) if solutions.is_dir() else set()
    leaks = []
    for file in files:
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        leaks += [f"{file}: {line.strip()}" for line in lines if line.strip() in secret]
    return leaks
