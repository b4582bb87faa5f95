"""Grading: the stages of a course, each through pytest, into a Report (`grade`).

pytest is driven programmatically on the grader's own check modules (grader/checks), with
plugin autoloading off, no conftest files, no cache, the grader's own ini file and rootdir,
and none of the PYTEST_* variables of the environment, so neither installed plugins nor a
file planted next to the checks can change how a stage is checked. The plugin below feeds
pytest the cases from course.toml and keeps the structured verdict of each one.
"""

from __future__ import annotations

import io
import os
import secrets
import time
from contextlib import contextmanager, nullcontext, redirect_stderr, redirect_stdout
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, ContextManager, Protocol

import pytest

from grader.backends import selection as backends
from grader.backends.selection import Selection
from grader.course import Course, Stage, matching_hints
from grader.course.todos import TodoState
from grader.errors import GradeError, one_line
from grader.intake import NotRun
from grader.judge.stage import StageCheck, memory_check
from grader.quoting import single_line
from grader.report.results import CaseResult, CheckResult, Report, SpeedResult, StageResult, Status
from grader.sandbox import keep_warm
from grader.sandbox.submission import SubmissionError
from grader.session import NEEDS_CORRECTNESS, StageSession
from grader.speed import check as speed
from grader.speed.check import SpeedCheck

CHECKS = Path(__file__).parent / "checks"

RESULT = "result"  # the user property under which a check item leaves its case's result


class CaseProgress(Protocol):
    """What a progress display hears of a stage's cases."""

    def start(self, case_id: str) -> None: ...

    def end(self, result: CaseResult) -> None: ...


# A stage's progress display: given its label and the number of cases, the context in which
# it is graded, yielding the CaseProgress told as each case starts and ends.
Progress = Callable[[str, int], ContextManager[CaseProgress | None]]


class _CasePlugin:
    """Parametrizes a check module with cases and reports each case as it ends."""

    def __init__(self, cases, progress: CaseProgress | None):
        self.cases = cases
        self.progress = progress
        self.collected: list = []  # each test item's result, from pytest's reports
        self.failures: dict[str, str] = {}  # nodeid -> what happened, for checks that broke
        self.running = None  # the case whose item pytest runs now

    def pytest_generate_tests(self, metafunc):
        if "case" in metafunc.fixturenames:
            metafunc.parametrize("case", self.cases, ids=[c.id for c in self.cases])

    def pytest_runtest_setup(self, item):
        case = item.callspec.params.get("case") if hasattr(item, "callspec") else None
        self.running = case
        if case is not None and self.progress:
            self.progress.start(case.id)

    def pytest_runtest_logreport(self, report):
        # Each check item records its case's result (record_property) before it asserts.
        result = dict(report.user_properties).get(RESULT)
        if report.when == "call" and result is not None:
            self.collected.append(result)
            if self.progress:
                self.progress.end(result)
        elif report.failed:  # set-up, or the check itself, broke before it judged the case
            self.failures[report.nodeid] = _broke_on(self.running, report.longrepr)


class _CorrectnessPlugin(_CasePlugin):
    def __init__(self, check: StageCheck, progress: CaseProgress | None):
        super().__init__(check.stage.cases, progress)
        self.check = check

    @pytest.fixture
    def grading(self) -> StageCheck:
        return self.check


class _SpeedPlugin(_CasePlugin):
    def __init__(self, check: SpeedCheck, progress: CaseProgress | None):
        super().__init__(check.speed.cases, progress)
        self.check = check

    @pytest.fixture
    def speed(self) -> SpeedCheck:
        return self.check


@contextmanager
def _isolated_pytest():
    # Neither plugins installed in the environment (xdist, randomly, ...) nor any PYTEST_
    # variable (options, plugins, PYTEST_XDIST_WORKER that switches pytest-benchmark off)
    # may change how a stage is checked: the grader loads exactly what it needs.
    saved = {name: os.environ.pop(name) for name in list(os.environ) if name.startswith("PYTEST_")}
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        for name in [name for name in os.environ if name.startswith("PYTEST_")]:
            del os.environ[name]
        os.environ.update(saved)


def _run_checks(module: str, plugin: _CasePlugin, extra: list[str] = (),
                quiet: bool = False) -> str | None:
    """Run one check module through pytest; returns why it broke, or None.

    `quiet` swallows what pytest and its plugins print (pytest-benchmark announces the files
    it writes); correctness runs keep it, so a student's debug prints still show.
    """
    args = [
        str(CHECKS / module),
        "-c", str(CHECKS / "pytest.ini"),
        "--rootdir", str(CHECKS),
        "--import-mode=importlib",
        "--noconftest",
        "-p", "no:cacheprovider",
        "-p", "no:terminal",
        "-p", "no:warnings",
        *extra,
    ]
    sink = io.StringIO()
    with _isolated_pytest(), redirect_stdout(sink) if quiet else nullcontext(), \
            redirect_stderr(sink) if quiet else nullcontext():
        code = pytest.main(args, plugins=[plugin])
    if code == pytest.ExitCode.INTERRUPTED:
        raise KeyboardInterrupt  # pytest caught the Ctrl-C: it stops grading, not one stage
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or plugin.failures:
        return "\n".join([f"the grader's checks could not run (pytest exit {int(code)}).",
                          *plugin.failures.values()])
    return None


def _broke_on(case, longrepr) -> str:
    """One line on a check item that broke: the case, the exception and where it was raised,
    no traceback. For a hidden case only the exception's type: its text could hold the
    case's inputs."""
    crash = getattr(longrepr, "reprcrash", None)
    what = crash.message if crash else str(longrepr)
    what = single_line(next((line for line in what.splitlines() if line.strip()), "it failed"),
                       300)
    where = f" ({Path(crash.path).name}, line {crash.lineno})" if crash else ""
    if case is not None and case.hidden:
        what = what.split(":", 1)[0] + " (its text is withheld: a hidden case)"
    return f"case {case.id}: {what}{where}" if case is not None else f"{what}{where}"


def _broke(result: StageResult, exc: Exception) -> StageResult:
    """A stage the grader itself failed to grade: ERROR, no points, what happened in a line
    (no traceback); the run goes on with the next stage."""
    result.status, result.points = Status.ERROR, 0.0
    result.speed = SpeedResult(False, "not graded: the stage could not be graded")
    result.message = (f"the grader failed while grading {result.module}: {one_line(exc)}. "
                      "Nothing was graded for this stage; grading it again may help, else "
                      "show this message to the course staff.")
    return result


class Interrupted(Exception):
    """Ctrl-C during grading: `report` holds the stages graded before it, none after."""

    def __init__(self, report: Report, stage: str):
        super().__init__(f"interrupted while grading {stage}")
        self.report, self.stage = report, stage


def grade_stage(
    course: Course,
    stage: Stage,
    selection: Selection,
    solutions: bool = False,
    progress: CaseProgress | None = None,
    module: Path | None = None,
    benchmark_json: Path | None = None,
    seed: int = 0,
    timeout: float | None = None,
    keep_going: bool = False,
) -> StageResult:
    """Grade one stage; `module` overrides the exercise or solution file course.toml names.

    Speed is timed only after every correctness case passed; `benchmark_json` receives
    pytest-benchmark's record of the timed cases.
    """
    backend = selection.backend
    path = module or course.module_path(stage, backend.track, solutions)
    result = StageResult(
        number=stage.number,
        id=stage.id,
        title=stage.title,
        backend=backend.name,
        module=_shown(path, course.root),
        max_points=stage.points,
    )
    try:
        return _grade_file(course, stage, selection, path, result, progress, benchmark_json,
                           seed, timeout, keep_going)
    except Exception as exc:  # noqa: BLE001 - one stage's failure must not end the run
        return _broke(result, exc)


def _grade_file(course: Course, stage: Stage, selection: Selection, path: Path,
                result: StageResult, progress: CaseProgress | None, benchmark_json: Path | None,
                seed: int, timeout: float | None, keep_going: bool) -> StageResult:
    no_speed = speed.not_graded_reason(stage, selection)
    result.speed = SpeedResult(False, no_speed or NEEDS_CORRECTNESS)
    session = StageSession(course, stage, selection, path, result.module, seed, timeout,
                           keep_going)
    try:
        todos = session.open()
        return _grade_loaded(session, result, todos, progress, benchmark_json)
    except NotRun as exc:
        result.status, result.message = exc.status, exc.message
        return result
    except SubmissionError as exc:
        result.message = str(exc)
        return result
    finally:
        session.close()  # every process of the submission is gone before a result is kept
        if session.runner is not None:
            result.sandbox = session.runner.protections
            result.output = session.runner.output()


def _grade_loaded(session: StageSession, result: StageResult, todos: TodoState,
                  progress: CaseProgress | None, benchmark_json: Path | None) -> StageResult:
    stage, runner, check = session.stage, session.runner, session.check
    if todos.unfilled:
        result.message = f"{result.module} {todos.describe()}"
    plugin = _CorrectnessPlugin(check, progress)
    broken = _run_checks("test_correctness.py", plugin)
    result.cases = plugin.collected
    # Processes that saw the hidden cases' inputs could print or say them at any later
    # call: what follows (memory, speed) runs in fresh ones.
    check.forget_hidden()
    if broken:
        result.message, result.status = broken, Status.ERROR
        return result
    if compiles := check.compile_check():
        result.checks.append(compiles)
    if stage.memory_growth:
        result.checks.append(memory_check(stage, session.selection, runner, session.seed))
    result.hints = matching_hints(stage.hints, result.cases)
    result.conclude(len(stage.cases))
    if session.not_timed(result.cases, result.checks):
        return result

    timer = session.speed_check()
    extra = ["-p", "pytest_benchmark.plugin"]
    if benchmark_json:
        extra.append(f"--benchmark-json={benchmark_json}")
    plugin = _SpeedPlugin(timer, progress)
    broken = _run_checks("test_speed.py", plugin, extra, quiet=True)
    result.speed = timer.summary(plugin.collected)
    if broken:
        result.speed.reason = broken
    return result


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


@contextmanager
def _silent(label: str, cases: int):
    yield None  # no display: the plugins tell nobody


def grade(course: Course, stages: list[Stage], selection: Selection, solutions: bool = False,
          submission: Path | None = None, seed: int | None = None, timeout: float | None = None,
          benchmark_json: Path | None = None, progress: Progress = _silent,
          keep_going: bool = False) -> Report:
    """Grade `stages` of `course` on `selection`'s backend: the solutions, the exercises in
    `submission` (a folder laid out like exercises/, or one holding exercises/), or else the
    course's own exercises/. Raises GradeError for a request that cannot be graded."""
    if solutions and not (course.root / "solutions").is_dir():
        raise GradeError(f"{course.root} has no solutions/ folder (a student handout?): "
                         "--solutions needs the instructor's copy of the course.")
    if solutions and submission:
        raise GradeError("Use --solutions or --submission, not both.")
    if submission and (submission / "exercises").is_dir():
        submission = submission / "exercises"
    seed = secrets.randbelow(2**31) if seed is None else seed
    report = Report(
        course=course.title,
        target="solutions" if solutions else str(submission) if submission else "exercises",
        backend=selection.backend.name,
        backend_reason=selection.reason,
        machine=backends.machine_info(),
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        seed=seed,
    )
    start = time.perf_counter()
    parts = []
    if selection.backend.interpret:  # not on a GPU: the timed runs' CPU
        keep_warm()  # each stage's processes are forks of one that imported PyTorch once
    for stage in stages:
        label = f"{stage.name} {stage.id} [{selection.backend.name}]"
        timed = 0 if speed.not_graded_reason(stage, selection) else len(stage.speed.cases)
        part = benchmark_json.with_name(f"{benchmark_json.name}.{stage.id}") if benchmark_json else None
        parts += [part] if part else []
        started = time.perf_counter()
        try:
            with progress(label, len(stage.cases) + timed) as cases:
                module = submission / stage.modules[selection.backend.track] if submission else None
                result = grade_stage(course, stage, selection, solutions, cases, module=module,
                                     benchmark_json=part, seed=seed, timeout=timeout,
                                     keep_going=keep_going)
        except KeyboardInterrupt:
            # The stage's child is already ended (grade_stage's finally); what it had graded
            # is dropped, so nothing half-graded looks like a result.
            report.seconds = round(time.perf_counter() - start, 2)
            for written in parts:  # pytest-benchmark's records of the stages graded so far
                written.unlink(missing_ok=True)
            raise Interrupted(report, label) from None
        result.seconds = round(time.perf_counter() - started, 2)
        report.stages.append(result)
    if benchmark_json:
        speed.merge_benchmark_files(parts, benchmark_json)
    report.seconds = round(time.perf_counter() - start, 2)
    return report
