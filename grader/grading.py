"""Grading a stage: load the submission, run its cases through pytest, collect a StageResult.

pytest is driven programmatically on the grader's own check modules (grader/checks), with
plugin autoloading off and the grader's own ini file, so neither installed plugins nor a
student's configuration can change how a stage is checked. The plugin below feeds pytest
the cases from course.toml and keeps the structured verdict of each one.
"""

from __future__ import annotations

import io
import os
import time
from contextlib import contextmanager, nullcontext, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Callable

import pytest
import torch

from grader import speed
from grader.backends import Selection
from grader.compare import Verdict, compare
from grader.course import Case, Course, Stage
from grader.poison import Guarded, guarded_copy
from grader.problems import DTYPES, Call
from grader.results import CaseResult, SpeedResult, StageResult, Status
from grader.runner import Runner, SubmissionError
from grader.skeletons import todo_state
from grader.speed import SpeedCheck

CHECKS = Path(__file__).parent / "checks"

OnCase = Callable[[CaseResult], None]


class StageCheck:
    """Checks the cases of one stage against one loaded submission."""

    def __init__(self, stage: Stage, selection: Selection, runner: Runner):
        self.stage = stage
        self.backend = selection.backend
        self.runner = runner
        self.results: dict[str, CaseResult] = {}

    def check(self, case: Case) -> Verdict:
        start = time.perf_counter()
        problem = self.stage.problem
        generator = torch.Generator().manual_seed(case.seed)
        call = problem.make_call(case.params, DTYPES[case.dtype], generator)
        call, inputs = _guarded_inputs(call, problem.arg_names, self.backend.device)
        expected = problem.reference(call)  # before the call: a submission may scribble on inputs
        outcome = self.runner.call(call.args, call.kwargs)
        overruns = [g.describe() for g in inputs + outcome.allocations if g.overrun()]
        if outcome.error:
            verdict = Verdict(False, f"raised {outcome.error}")
        elif overruns:
            verdict = Verdict(False, "wrote out of bounds: " + "; ".join(overruns),
                              ["a load or store is missing its mask, or its mask is too loose"])
        else:
            verdict = compare(
                outcome.output,
                expected,
                DTYPES[case.dtype],
                self.backend.device,
                self.stage.tolerance[case.dtype],
                self.stage.tiles.get(self.backend.track),
                outcome.launches,
            )
        self.results[case.id] = CaseResult(
            id=case.id,
            dtype=case.dtype,
            params=dict(case.params),
            seed=case.seed,
            passed=verdict.passed,
            summary=verdict.summary,
            details=verdict.details,
            stats=verdict.stats,
            seconds=round(time.perf_counter() - start, 3),
        )
        return verdict


def _guarded_inputs(call: Call, names: list[str], device: str) -> tuple[Call, list[Guarded]]:
    """Move the inputs to the device, each followed by a poisoned guard region."""
    guards: list[Guarded] = []

    def move(value, name):
        if not isinstance(value, torch.Tensor):
            return value
        guards.append(guarded_copy(value.to(device), f"input `{name}`"))
        return guards[-1].tensor

    args = tuple(move(a, n) for a, n in zip(call.args, names))
    kwargs = {k: move(v, k) for k, v in call.kwargs.items()}
    return Call(args, kwargs), guards


class _CasePlugin:
    """Parametrizes a check module with cases and reports each case as it ends."""

    def __init__(self, cases, results: dict, on_case: OnCase | None):
        self.cases = cases
        self.results = results  # case id -> result, filled by the check object
        self.on_case = on_case
        self.failures: dict[str, str] = {}  # nodeid -> pytest's text, for checks that broke

    def pytest_generate_tests(self, metafunc):
        if "case" in metafunc.fixturenames:
            metafunc.parametrize("case", self.cases, ids=[c.id for c in self.cases])

    def pytest_runtest_logreport(self, report):
        if report.failed and report.when != "call":
            self.failures[report.nodeid] = str(report.longrepr)
        if report.when == "call":
            result = self.results.get(report.nodeid.rpartition("[")[2].rstrip("]"))
            if result is not None and self.on_case:
                self.on_case(result)


class _CorrectnessPlugin(_CasePlugin):
    def __init__(self, check: StageCheck, on_case: OnCase | None):
        super().__init__(check.stage.cases, check.results, on_case)
        self.check = check

    @pytest.fixture
    def grading(self) -> StageCheck:
        return self.check


class _SpeedPlugin(_CasePlugin):
    def __init__(self, check: SpeedCheck, on_case: OnCase | None):
        super().__init__(check.speed.cases, check.results, on_case)
        self.check = check

    @pytest.fixture
    def speed(self) -> SpeedCheck:
        return self.check


@contextmanager
def _isolated_pytest():
    # Plugins installed in the environment (xdist, randomly, ...) must not reorder or
    # re-run grading; the grader loads exactly what it needs.
    saved = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = saved


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
        "-p", "no:cacheprovider",
        "-p", "no:terminal",
        "-p", "no:warnings",
        *extra,
    ]
    sink = io.StringIO()
    with _isolated_pytest(), redirect_stdout(sink) if quiet else nullcontext(), \
            redirect_stderr(sink) if quiet else nullcontext():
        code = pytest.main(args, plugins=[plugin])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or plugin.failures:
        broken = "\n".join(plugin.failures.values())
        return f"the grader's checks could not run (pytest exit {int(code)}). {broken}"
    return None


def grade_stage(
    course: Course,
    stage: Stage,
    selection: Selection,
    solutions: bool = False,
    on_case: OnCase | None = None,
    module: Path | None = None,
    benchmark_json: Path | None = None,
) -> StageResult:
    """Grade one stage; `module` overrides the exercise or solution file course.toml names.

    Speed is timed only after every correctness case passed; `benchmark_json` receives
    pytest-benchmark's record of the timed cases.
    """
    backend = selection.backend
    path = module or course.module_path(stage, backend.track, solutions)
    no_speed = speed.not_graded_reason(stage, selection)
    result = StageResult(
        number=stage.number,
        id=stage.id,
        title=stage.title,
        backend=backend.name,
        module=_shown(path, course.root),
        max_points=stage.points,
    )
    result.speed = SpeedResult(False, no_speed or "needs all correctness cases to pass first")
    if not path.is_file():
        result.message = f"{result.module} is missing; restore it from the course handout."
        return result
    todos = todo_state(path.read_text(encoding="utf-8"))
    if todos.not_started:
        result.status = Status.NOT_STARTED
        numbers = ", ".join(str(n) for n in todos.todos)
        result.message = f"fill in TODO {numbers} in {result.module}"
        return result

    backend.prepare()
    runner = Runner(path, stage.problem.function)
    try:
        runner.load()
    except SubmissionError as exc:
        result.message = str(exc)
        return result

    if todos.unfilled:
        result.message = f"{result.module} {todos.describe()}"
    check = StageCheck(stage, selection, runner)
    broken = _run_checks("test_correctness.py", _CorrectnessPlugin(check, on_case))
    result.cases = [check.results[c.id] for c in stage.cases if c.id in check.results]
    if broken:
        result.message, result.status = broken, Status.ERROR
        return result
    result.conclude(len(stage.cases))
    if no_speed or result.status is not Status.PASS:
        return result

    timer = SpeedCheck(stage, selection, runner)
    extra = ["-p", "pytest_benchmark.plugin", "--benchmark-timer=grader.timing.replay_clock"]
    if benchmark_json:
        extra.append(f"--benchmark-json={benchmark_json}")
    broken = _run_checks("test_speed.py", _SpeedPlugin(timer, on_case), extra, quiet=True)
    result.speed = timer.summary()
    if broken:
        result.speed.reason = broken
    return result


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
