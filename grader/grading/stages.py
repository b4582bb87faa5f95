"""Grading: the stages of a resolved request, each through pytest, into a Report (`grade`).

Each stage is opened as a session (grader.grading.session), its correctness cases run
through the check module test_correctness.py, its stage-wide checks follow, and, once every
case passed on a GPU with thresholds, its speed cases run through test_speed.py
(grader.grading.pytest_run runs both). A stage the grader itself fails to grade is an
ERROR of that stage; the run goes on with the next.

`grade` judges the correctness of every stage first, in order, and then times the speed of
each stage to be timed, in order. On a GPU the later stages are opened, and their kernels
compiled, beside the first stage's cases (StageSession.ready_beside); nothing of another
stage may run while one is timed, so with each stage timed right after its own cases the
first stage's timing waited for every later stage's builds (8.3 s of a 34.8 s grading on
the H200, BENCHMARKS.md). Judged first, the later stages' cases run while those builds
finish, and every stage is settled once, before the first stage is timed.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone

from grader import shown_clock
from grader.backends import selection as backends
from grader.course import Stage, matching_hints
from grader.course.todos import TodoState
from grader.errors import one_line
from grader.grading.pytest_run import (PYTEST_OWN, CaseProgress, CorrectnessPlugin, Progress,
                                       SpeedPlugin, run_checks)
from grader.grading.request import Grading
from grader.grading.session import NEEDS_CORRECTNESS, START, StageSession, grader_threads
from grader.intake import NotRun
from grader.judge.memory_growth import memory_check
from grader.results import Report, SpeedResult, StageResult, Status
from grader.sandbox import keep_warm
from grader.sandbox.submission import SubmissionError
from grader.speed import check as speed


# The part of speed (grade --profile) that waited, before the first stage was timed, for
# every stage to settle: the later stages' kernels built, every child ended.
SETTLED = "every stage settled"


class Interrupted(Exception):
    """Ctrl-C during grading: `report` holds the stages whole before it (judged, and timed
    if they were to be), none half-graded."""

    def __init__(self, report: Report, stage: str):
        super().__init__(f"interrupted while grading {stage}")
        self.report, self.stage = report, stage


def grade_stage(grading: Grading, stage: Stage, progress: CaseProgress | None = None
                ) -> StageResult:
    """Grade one stage of the resolved request. Speed is timed only after every correctness
    case passed; the request's benchmark file receives pytest-benchmark's record of it."""
    with grader_threads(grading.selection.backend.device):
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
    result = new_result(session)
    try:
        if judge_correctness(session, result, progress, later):
            settle(later, result)
            time_speed(session, result, progress)
    finally:
        close(session, result)
    return result


def new_result(session: StageSession) -> StageResult:
    """The result of the session's stage before anything is graded."""
    return session.grading.new_result(session.stage)


def judge_correctness(session: StageSession, result: StageResult,
                      progress: CaseProgress | None, later: Sequence[StageSession]) -> bool:
    """Open the session's stage and judge its correctness cases and checks into `result`,
    `later` readied beside the cases; whether its speed is to be timed (`time_speed`). The
    session stays open."""
    result.speed = SpeedResult(False, session.no_speed or NEEDS_CORRECTNESS)
    try:
        with shown_clock.phase(result.phases, START):
            todos = session.open()
        result.add_readied(session.beside)
        return _judged(session, result, todos, progress, later)
    except NotRun as exc:
        result.status, result.message = exc.status, exc.message
    except SubmissionError as exc:
        result.message = str(exc)
    except Exception as exc:  # noqa: BLE001 - one stage's failure must not end the run
        _broke(result, exc)
    return False


def _judged(session: StageSession, result: StageResult, todos: TodoState,
            progress: CaseProgress | None, later: Sequence[StageSession]) -> bool:
    stage, check = session.stage, session.check
    if todos.unfilled:
        result.message = f"{result.module} {todos.describe()}"
    plugin = CorrectnessPlugin(check, progress)
    check.hidden.alongside = later  # settled before a hidden case (grader.judge.hidden)
    with shown_clock.phase(result.phases, "correctness cases"):
        check.build_ahead()
        for readied in later:  # in order: their builders take cores behind this stage's own
            readied.ready_beside()
        broken = run_checks("test_correctness.py", plugin)
    result.add_parts("correctness cases",
                     {**check.phases, PYTEST_OWN: round(plugin.own_seconds, 3)})
    result.cases = plugin.results()
    # Processes that saw the hidden cases' inputs could print or say them at any later
    # call: what follows (memory, speed) runs in fresh ones.
    with shown_clock.phase(result.phases, "end processes"):
        check.forget_hidden()
    if broken:
        result.message, result.status = broken, Status.ERROR
        return False
    with shown_clock.phase(result.phases, "compile check"):
        compiles = check.compile_check()
    if compiles:
        result.checks.append(compiles)
    if stage.memory_growth:
        with shown_clock.phase(result.phases, "memory check"):
            result.checks.append(memory_check(stage, session.grading.selection, session.child,
                                              session.grading.seed))
    result.hints = matching_hints(stage.hints, result.cases)
    result.conclude(len(stage.cases))
    return not session.not_timed(result.cases, result.checks)


def settle(sessions: Sequence[StageSession], result: StageResult) -> None:
    """Return once nothing of `sessions` runs (StageSession.settle): the wait is a part of
    the speed of `result`, the stage timed next."""
    if not sessions:
        return
    settled: dict[str, float] = {}
    with shown_clock.phase(result.phases, "speed"), shown_clock.phase(settled, SETTLED):
        for session in sessions:
            session.settle()
    result.add_parts("speed", settled)


def time_speed(session: StageSession, result: StageResult, progress: CaseProgress | None
               ) -> None:
    """Time the speed cases of the session's stage (its correctness all passed) into
    `result`."""
    try:
        timer = session.speed_check()
        extra = ["-p", "pytest_benchmark.plugin"]
        if part := _benchmark_part(session.grading, session.stage):
            extra.append(f"--benchmark-json={part}")
        plugin = SpeedPlugin(timer, progress)
        with shown_clock.phase(result.phases, "speed"):
            broken = run_checks("test_speed.py", plugin, extra, quiet=True)
        result.add_parts("speed", {**timer.phases, PYTEST_OWN: round(plugin.own_seconds, 3)})
        result.speed = timer.summary(plugin.results())
        if broken:
            result.speed.reason = broken
    except Exception as exc:  # noqa: BLE001 - one stage's failure must not end the run
        _broke(result, exc)


def close(session: StageSession, result: StageResult) -> None:
    """End every process of the session's stage (before its result is kept), and keep in
    `result` what they ran under and printed."""
    try:
        with shown_clock.phase(result.phases, "end processes"):
            session.close()
    except Exception as exc:  # noqa: BLE001 - one stage's failure must not end the run
        _broke(result, exc)
    if session.child is not None:
        result.sandbox = session.child.protections
        result.output = session.child.output()


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


@dataclass
class _Judged:
    """A stage whose correctness was judged: its session (open while its speed is still to
    be timed), its result so far, and the seconds it took."""

    session: StageSession
    result: StageResult
    timed: bool  # its speed is to be timed
    seconds: float
    whole: bool = False  # judged, and timed if it was to be: the result is final


def grade(grading: Grading, progress: Progress = _silent) -> Report:
    """Grade every stage of the resolved request into a Report: the correctness of each
    stage, one after another, then the speed of each whose correctness all passed."""
    with grader_threads(grading.selection.backend.device):
        return _graded(grading, progress)


def _graded(grading: Grading, progress: Progress) -> Report:
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
    start = shown_clock.now()
    parts = [p for p in (_benchmark_part(grading, s) for s in grading.stages) if p]
    keep_warm()  # each stage's processes are forks of one that imported PyTorch once
    sessions = [StageSession(grading, stage) for stage in grading.stages]
    judged: list[_Judged] = []
    label = ""
    try:
        for index, session in enumerate(sessions):
            label = _label(session)
            started = shown_clock.now()
            result = new_result(session)
            with progress(label, session.stage.case_count) as cases:
                timed = judge_correctness(session, result, cases, sessions[index + 1:])
            if not timed:  # whole already: nothing of it stays
                close(session, result)
            judged.append(_Judged(session, result, timed, shown_clock.now() - started))
            if not timed:
                _keep(report, judged, grading, start, judged[-1])
        waiting = [j.session for j in judged if j.timed]
        for stage in (j for j in judged if j.timed):
            label = _label(stage.session)
            started = shown_clock.now()
            settle(waiting, stage.result)  # before the first: every build done, every child ended
            waiting = []
            with progress(f"{label}: speed", len(stage.session.stage.speed.cases)) as cases:
                time_speed(stage.session, stage.result, cases)
            close(stage.session, stage.result)
            stage.seconds += shown_clock.now() - started
            _keep(report, judged, grading, start, stage)
    except KeyboardInterrupt:
        # The stages whole so far are the report; every process of the others is ended here,
        # and what they had graded is dropped, so nothing half-graded looks like a result.
        for session in sessions:
            session.close()
        report.seconds = round(shown_clock.now() - start, 2)
        for written in parts:  # pytest-benchmark's records of the stages graded so far
            written.unlink(missing_ok=True)
        raise Interrupted(report, label) from None
    if grading.outputs.benchmark_json:
        speed.merge_benchmark_files(parts, grading.outputs.benchmark_json)
    report.seconds = round(shown_clock.now() - start, 2)
    return report


def _label(session: StageSession) -> str:
    return session.grading.label(session.stage)


def _keep(report: Report, judged: list[_Judged], grading: Grading, start: float,
          stage: _Judged) -> None:
    """`stage` is whole: the report's stages are those whole, in the request's order
    (written to the request's so-far file)."""
    stage.whole = True
    stage.result.seconds = round(stage.seconds, 2)
    report.stages = [j.result for j in judged if j.whole]
    if grading.outputs.so_far:  # whole stages only: one cut short leaves no trace
        report.seconds = round(shown_clock.now() - start, 2)
        report.write_json(grading.outputs.so_far)
