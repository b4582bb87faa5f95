"""The stage files each student handed in, kept beside their result: OUT/files/NAME/.

`grade batch` keeps a copy of the stage files it took from a submission (by its own rule,
grader.intake.upload: triton/stage3_softmax.py and the like, never anything else of the
upload) each time it grades that submission, so that what a later reader of OUT compares
(grader.instructor.similarity) is what was graded, even after the submissions have moved
or changed, and `grade report OUT` needs nothing but OUT. A submission graded again keeps
only its new files; one that gives no stage file keeps none. Every file is written as the
other class files are, readable by the instructor alone (grader.results.write_file).
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from grader.results import write_file

FILES = "files"


def folder(out: Path, name: str) -> Path | None:
    """Where `name`'s files are kept (None for a name that is no single folder's)."""
    if name in ("", ".", "..") or "/" in name or "\\" in name:
        return None
    return out / FILES / name


def keep(out: Path, name: str, files: dict[str, bytes]) -> None:
    """Keep `files` (stage file below exercises/ -> its bytes) as `name`'s, and nothing else."""
    where = folder(out, name)
    if where is None:
        return
    wanted = {target for target in files if _plain(target)}
    for target in sorted(wanted):
        write_file(where / target, files[target])
    if where.is_dir():
        for old in [p for p in where.rglob("*") if p.is_file()]:
            if old.relative_to(where).as_posix() not in wanted:
                old.unlink()


def forget(out: Path, name: str) -> None:
    """No files kept for `name` (their upload gave no stage file)."""
    where = folder(out, name)
    if where is not None and where.is_dir():
        shutil.rmtree(where, ignore_errors=True)


def read(out: Path, name: str) -> dict[str, str]:
    """`name`'s kept files, stage file -> text (bytes that are not UTF-8 replaced)."""
    where = folder(out, name)
    if where is None or not where.is_dir():
        return {}
    found = {}
    for path in sorted(where.rglob("*.py")):
        if path.is_symlink() or not path.is_file():
            continue
        try:
            data = path.read_bytes()
        except OSError:  # unreadable: left out of what is compared, never the end of a report
            continue
        found[path.relative_to(where).as_posix()] = data.decode("utf-8", "replace")
    return found


def _plain(target: str) -> bool:
    """Whether a stage file's path stays below the student's folder (the course names them)."""
    parts = PurePosixPath(target).parts
    return bool(parts) and not PurePosixPath(target).is_absolute() and ".." not in parts
