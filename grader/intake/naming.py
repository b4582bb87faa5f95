"""A laid-out submission's report in the names its student knows: its stage files as
exercises/<track>/<file>, never the scratch folder it was graded in nor a path outside the
submission, and a stage file it lacked said to be the handout's skeleton."""

from __future__ import annotations

import json
import os
from pathlib import PurePosixPath

from grader.intake.upload import SCRATCH, Unpacked
from grader.results import Report, Status


def student_text(text: str, unpacked: Unpacked) -> str:
    """`text` with the scratch folder taken out of every path: the laid-out files are named
    as the student's exercises/ ("exercises/triton/stage1_vector_add.py"), anything else
    below the scratch folder as <tmp>/..."""
    scratch = unpacked.exercises.parent
    for root in dict.fromkeys((str(scratch), os.path.realpath(scratch))):
        text = text.replace(f"{root}/{SCRATCH}/", f"{SCRATCH}/").replace(root, "<tmp>")
    return text


def as_submitted(report: Report, unpacked: Unpacked, name: str) -> Report:
    """`report` (graded from `unpacked`) as the student knows their submission, `name`."""
    data = json.loads(student_text(json.dumps(report.to_json()), unpacked))
    shown = Report.from_json({**data, "target": name})
    for stage, graded in zip(shown.stages, report.stages):
        stage.sandbox = graded.sandbox  # records of protections, not kept by from_json
        target = stage.module.removeprefix(f"{SCRATCH}/")
        if stage.status is Status.NOT_STARTED and unpacked.absent(target):
            stage.message = _absent(PurePosixPath(target).name, unpacked.ignored)
    return shown


def _absent(file: str, ignored: list[str]) -> str:
    """Why a stage was graded from the handout's skeleton: its file was not in the
    submission, or it was and could not be taken (the first reason)."""
    graded = "so the handout's untouched skeleton was graded"
    for item in ignored:
        member, _, why = item.partition(": ")
        if PurePosixPath(member).name == file:
            return f"{member} was not taken ({why}), {graded}"
    return f"{file} is not in the submission, {graded}: fill in its TODOs and submit it"
