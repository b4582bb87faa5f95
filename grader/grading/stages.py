"""Grading: the stages of a resolved request, each through pytest, into a Report (`grade`).

Each stage is opened as a session (grader.grading.session), its correctness cases run
through the check module test_correctness.py, its stage-wide checks follow, and, once every
case passed on a GPU with thresholds, its speed cases run through test_speed.py
(grader.grading.pytest_run runs both). A stage the grader itself fails to grade is an
ERROR of that stage; the run goes on with the next.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import contextmanager
from datetime import datetime, timezone

from grader.backends import selection as backends
from grader.course import Stage, matching_hints
from grader.course.todos import TodoState
from grader.errors import one_line
from grader.grading.pytest_run import (PYTEST_OWN, CaseProgress, CorrectnessPlugin, Progress,
                                       SpeedPlugin, run_checks)
from grader.grading.request import Grading
from grader.grading.session import NEEDS_CORRECTNESS, StageSession
from grader.intake import NotRun
from grader.judge.memory import memory_check
from grader.results import Report, SpeedResult, StageResult, Status
from grader.sandbox import keep_warm
from grader.sandbox.submission import SubmissionError
from grader.speed import check as speed
from grader.timing import phase


class Interrupted(Exception):
    """Ctrl-C during grading: `report` holds the stages graded before it, none after."""

    def __init__(self, report: Report, stage: str):
        super().__init__(f"interrupted while grading {stage}")
        self.report, self.stage = report, stage


def grade_stage(grading: Grading, stage: Stage, progress: CaseProgress | None = None
                ) -> StageResult:
    """Grade one stage of the resolved request. Speed is timed only after every correctness
    case passed; the request's benchmark file receives pytest-benchmark's record of it."""
    result = grade_session(StageSession(grading, stage), progress)
    if grading.outputs.benchmark_json:
        speed.merge_benchmark_files([_benchmark_part(grading, stage)],
                                    grading.outputs.benchmark_json)
    return result


def grade_session(session: StageSession, progress: CaseProgress | None,
                  later: Sequence[StageSession] = ()) -> StageResult:
    """Grade the stage a session holds (not yet opened, or readied beside an earlier stage);
    it is closed when this returns. `later`, the sessions of the stages graded after it, are
    readied beside this one's correctness cases (StageSession.ready_beside; those readied
    already are left as they are), and settled before this one's speed is timed."""
    stage, grading = session.stage, session.grading
    result = StageResult(number=stage.number, id=stage.id, title=stage.title,
                         backend=grading.selection.backend.name, module=session.file.shown,
                         max_points=stage.points)
    try:
        return _graded(session, result, progress, later)
    except Exception as exc:  # noqa: BLE001 - one stage's failure must not end the run
        return _broke(result, exc)


def _graded(session: StageSession, result: StageResult, progress: CaseProgress | None,
            later: Sequence[StageSession]) -> StageResult:
    result.speed = SpeedResult(False, session.no_speed or NEEDS_CORRECTNESS)
    try:
        with phase(result.phases, "start processes, load"):
            todos = session.open()
        return _grade_loaded(session, result, todos, progress, later)
    except NotRun as exc:
        result.status, result.message = exc.status, exc.message
        return result
    except SubmissionError as exc:
        result.message = str(exc)
        return result
    finally:
        with phase(result.phases, "end processes"):
            session.close()  # every process of the submission is gone before a result is kept
        if session.child is not None:
            result.sandbox = session.child.protections
            result.output = session.child.output()


def _grade_loaded(session: StageSession, result: StageResult, todos: TodoState,
                  progress: CaseProgress | None, later: Sequence[StageSession]
                  ) -> StageResult:
    stage, check = session.stage, session.check
    if todos.unfilled:
        result.message = f"{result.module} {todos.describe()}"
    plugin = CorrectnessPlugin(check, progress)
    with phase(result.phases, "correctness cases"):
        check.build_ahead()
        for readied in later:  # in order: their builders take cores behind this stage's own
            readied.ready_beside()
        broken = run_checks("test_correctness.py", plugin)
    result.add_parts("correctness cases", {**check.phases, PYTEST_OWN: round(plugin.own_seconds, 3)})
    result.cases = plugin.results()
    # Processes that saw the hidden cases' inputs could print or say them at any later
    # call: what follows (memory, speed) runs in fresh ones.
    with phase(result.phases, "end processes"):
        check.forget_hidden()
    if broken:
        result.message, result.status = broken, Status.ERROR
        return result
    with phase(result.phases, "compile check"):
        compiles = check.compile_check()
    if compiles:
        result.checks.append(compiles)
    if stage.memory_growth:
        with phase(result.phases, "memory check"):
            result.checks.append(memory_check(stage, session.grading.selection, session.child,
                                              session.grading.seed))
    result.hints = matching_hints(stage.hints, result.cases)
    result.conclude(len(stage.cases))
    if session.not_timed(result.cases, result.checks):
        return result

    if later:
        settled: dict[str, float] = {}
        with phase(result.phases, "speed"), phase(settled, "the later stages settled"):
            for readied in later:  # nothing of a later stage runs while this one is timed
                readied.settle()
        result.add_parts("speed", settled)
    timer = session.speed_check()
    extra = ["-p", "pytest_benchmark.plugin"]
    if part := _benchmark_part(session.grading, stage):
        extra.append(f"--benchmark-json={part}")
    plugin = SpeedPlugin(timer, progress)
    with phase(result.phases, "speed"):
        broken = run_checks("test_speed.py", plugin, extra, quiet=True)
    result.add_parts("speed", {**timer.phases, PYTEST_OWN: round(plugin.own_seconds, 3)})
    result.speed = timer.summary(plugin.results())
    if broken:
        result.speed.reason = broken
    return result


def _benchmark_part(grading: Grading, stage: Stage):
    """Where pytest-benchmark writes one stage's record (pytest runs once per stage); the
    parts are merged into the file asked for at the end."""
    whole = grading.outputs.benchmark_json
    return whole.with_name(f"{whole.name}.{stage.id}") if whole else None


def _broke(result: StageResult, exc: Exception) -> StageResult:
    """A stage the grader itself failed to grade: ERROR, no points, what happened in a line
    (no traceback); the run goes on with the next stage."""
    result.status, result.points = Status.ERROR, 0.0
    result.speed = SpeedResult(False, "not graded: the stage could not be graded")
    result.message = (f"the grader failed while grading {result.module}: {one_line(exc)}. "
                      "Nothing was graded for this stage; grading it again may help, else "
                      "show this message to the course staff.")
    return result


@contextmanager
def _silent(label: str, cases: int):
    yield None  # no display: the plugins tell nobody


def grade(grading: Grading, progress: Progress = _silent) -> Report:
    """Grade every stage of the resolved request, one after another, into a Report."""
    selection = grading.selection
    report = Report(
        course=grading.course.title,
        target=grading.target,
        backend=selection.backend.name,
        backend_reason=selection.reason,
        machine=backends.machine_info(),
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        seed=grading.seed,
    )
    start = time.perf_counter()
    parts = [p for p in (_benchmark_part(grading, s) for s in grading.stages) if p]
    keep_warm()  # each stage's processes are forks of one that imported PyTorch once
    sessions = [StageSession(grading, stage) for stage in grading.stages]
    for index, session in enumerate(sessions):
        later = sessions[index + 1:]
        stage = session.stage
        label = f"{stage.name} {stage.id} [{selection.backend.name}]"
        timed = 0 if session.no_speed else len(stage.speed.cases)
        started = time.perf_counter()
        try:
            with progress(label, len(stage.cases) + timed) as cases:
                result = grade_session(session, cases, later)
        except KeyboardInterrupt:
            # The stage's child is already ended (grade_stage's finally), and the later
            # stages', readied beside it, are ended here; what it had graded is dropped, so
            # nothing half-graded looks like a result.
            for readied in later:
                readied.close()
            report.seconds = round(time.perf_counter() - start, 2)
            for written in parts:  # pytest-benchmark's records of the stages graded so far
                written.unlink(missing_ok=True)
            raise Interrupted(report, label) from None
        result.seconds = round(time.perf_counter() - started, 2)
        report.stages.append(result)
        if grading.outputs.so_far:  # whole stages only: one cut short leaves no trace
            report.seconds = round(time.perf_counter() - start, 2)
            report.write_json(grading.outputs.so_far)
    if grading.outputs.benchmark_json:
        speed.merge_benchmark_files(parts, grading.outputs.benchmark_json)
    report.seconds = round(time.perf_counter() - start, 2)
    return report
