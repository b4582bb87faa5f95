"""Stages answered from their files alone. Where every stage asked for still holds only its
TODOs and a CPU backend grades them, the report is the one grader.grading.stages makes: each
stage NOT STARTED, with what to fill in and why its speed is not graded. Made here without
what grading loads (PyTorch, pytest, the judge, the sandbox's processes), it comes at once: a
student who asks for a stage before starting it is told so without waiting for them.

Anything else is graded: a started, missing or unreadable file, or a GPU backend (whose
words and speed verdicts need PyTorch).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from grader import shown_clock
from grader.course.todos import todo_state
from grader.grading.request import Grading, StageFile
from grader.intake import NotRun, not_started
from grader.results import Report, SpeedResult
from grader.speed.scope import not_graded_reason

if TYPE_CHECKING:
    from grader.grading.pytest_run import Progress


def unstarted_report(grading: Grading, progress: Progress) -> Report | None:
    """The report of a resolved request whose every stage is NOT STARTED on a CPU backend,
    each stage shown by `progress` as the grading shows it; None where any is to be graded."""
    if grading.selection.backend.device != "cpu":
        return None
    found = [_not_started(grading.file(stage)) for stage in grading.stages]
    if not found or None in found:
        return None
    selection = grading.selection
    report = Report(course=grading.course.title, target=grading.target,
                    backend=selection.backend.name, backend_reason=selection.reason,
                    # the versions grading records, for --verbose and the result files: a
                    # request that asks for either is graded
                    machine={},
                    started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    seed=grading.seed)
    start = shown_clock.now()
    for stage, unstarted in zip(grading.stages, found):
        started = shown_clock.now()
        result = grading.new_result(stage)
        with progress(grading.label(stage), stage.case_count):
            # on a CPU backend always a reason ("needs a GPU"), as the grading finds it
            result.speed = SpeedResult(False, not_graded_reason(stage, selection))
            result.status, result.message = unstarted.status, unstarted.message
        result.seconds = round(shown_clock.now() - started, 2)
        report.stages.append(result)
    report.seconds = round(shown_clock.now() - start, 2)
    return report


def _not_started(file: StageFile) -> NotRun | None:
    """NOT STARTED for a stage file that holds only its TODOs; None for any other (started,
    missing or unreadable: the grading says which)."""
    try:
        source = file.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return not_started(todo_state(source), file.shown)
