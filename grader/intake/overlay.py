"""A submission laid over the course's exercises, and its report in the names its student
knows.

What the rule of grader.intake.upload takes is written over a copy of the course's
exercises in a scratch folder: a stage file the submission lacks stays the handout's
skeleton (NOT STARTED). The report of that folder then names the stage files as the
student's exercises/<track>/<file>, never the scratch folder nor a path outside the
submission, and says of a stage graded from the skeleton why its file was not there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.course import Course
from grader.intake.upload import SCRATCH, TOOLS_OWN, Taken, read_upload
from grader.results import Report, Status


@dataclass
class Unpacked:
    """A submission laid over the course's exercises: what is graded, in `exercises`."""

    exercises: Path  # the course's exercises with the submission's stage files over them
    ignored: list[str] = field(default_factory=list)  # "member: why", for the feedback
    taken: list[Taken] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # what was taken: target -> bytes

    def read_as(self) -> list[str]:
        """Each stage file taken from another place than its own (a bare file, a nested
        folder), and where it was graded."""
        return [n for n in (t.note() for t in self.taken) if n]

    def notes(self) -> list[str]:
        """What a student should know of how their submission was read."""
        return self.read_as() + [f"{item} (not graded)" for item in self.ignored]

    def absent(self, target: str) -> bool:
        """Whether the stage file `target` came from the handout, not the submission."""
        return all(t.target != target for t in self.taken)


def lay_out(course: Course, source: Path, into: Path) -> Unpacked:
    """The course's exercises overlaid with the submission's stage files, in
    `into`/exercises: a stage file the submission lacks stays the handout's skeleton."""
    upload = read_upload(course, source)
    exercises = into / SCRATCH
    if (course.root / "exercises").is_dir():  # a course of its solutions only has none
        shutil.copytree(course.root / "exercises", exercises,
                        ignore=shutil.ignore_patterns(*TOOLS_OWN))
    for target, data in upload.files.items():
        (exercises / target).parent.mkdir(parents=True, exist_ok=True)
        (exercises / target).write_bytes(data)
    return Unpacked(exercises, upload.ignored, upload.taken, upload.files)


@contextmanager
def laid_out(course: Course, source: Path) -> Iterator[Unpacked]:
    """`lay_out` into a scratch folder of its own, removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="tilecourse-submission-"))
    try:
        yield lay_out(course, source, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def student_text(text: str, scratch: Path) -> str:
    """`text` with the scratch folder `scratch` taken out of every path: a path to the
    laid-out submission, at any depth below it (as in the scratch folder of a grading process
    that `grade batch` runs in its own), starts at exercises/
    ("exercises/triton/stage1_vector_add.py"); anything else below it is shown as <tmp>/..."""
    # The longer spelling first, as it may hold the other (/private/tmp/x and /tmp/x on macOS).
    for root in sorted({str(scratch), os.path.realpath(scratch)}, key=len, reverse=True):
        text = re.sub(re.escape(root) + r"(/[^\s'\"]*?)?/" + SCRATCH + "/", SCRATCH + "/", text)
        text = text.replace(root, "<tmp>")
    return text


def as_submitted(report: Report, unpacked: Unpacked, name: str) -> Report:
    """`report` (graded from `unpacked`) as the student knows their submission, `name`."""
    scratch = unpacked.exercises.parent
    data = json.loads(student_text(json.dumps(report.to_json()), scratch))
    shown = Report.from_json({**data, "target": name})
    for stage, graded in zip(shown.stages, report.stages):
        stage.sandbox = graded.sandbox  # records of protections, not kept by from_json
        for case, judged in zip(stage.cases, graded.cases):
            case.picture = judged.picture  # a drawing of numbers, kept out of the JSON
        if stage.status is Status.NOT_STARTED:
            stage.message = from_the_handout(stage.module, unpacked) or stage.message
    return shown


def from_the_handout(module: str, unpacked: Unpacked) -> str:
    """Why the stage file `module` (exercises/<track>/<file>, as a report names it) was graded
    from the handout's skeleton, where the submission did not give it; "" where it did."""
    target = module.removeprefix(f"{SCRATCH}/")
    return _absent(PurePosixPath(target).name, unpacked.ignored) if unpacked.absent(target) else ""


def _absent(file: str, ignored: list[str]) -> str:
    """Why a stage was graded from the handout's skeleton: its file was not in the
    submission, or it was and could not be taken (the first reason)."""
    graded = "so the handout's untouched skeleton was graded"
    for item in ignored:
        member, _, why = item.partition(": ")
        if PurePosixPath(member).name == file:
            return f"{member} was not taken ({why}), {graded}"
    return f"{file} is not in the submission, {graded}: fill in its TODOs and submit it"
