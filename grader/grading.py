"""Grading a stage: load the submission, run its cases through pytest, collect a StageResult.

pytest is driven programmatically on the grader's own check modules (grader/checks), with
plugin autoloading off, no conftest files, no cache, the grader's own ini file and rootdir,
and none of the PYTEST_* variables of the environment, so neither installed plugins nor a
file planted next to the checks can change how a stage is checked. The plugin below feeds
pytest the cases from course.toml and keeps the structured verdict of each one.
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
from grader.problems import DTYPES, Call
from grader.results import CaseResult, CheckResult, SpeedResult, StageResult, Status
from grader.sandbox import Outcome, Runner
from grader.screening import describe as describe_findings
from grader.screening import screen
from grader.skeletons import todo_state
from grader.speed import SpeedCheck
from grader.submission import SubmissionError

CHECKS = Path(__file__).parent / "checks"

OnCase = Callable[[CaseResult], None]


# A second call of every case with fresh inputs: a submission that caches results fails.
SECOND_DRAW = 0x5EED


class StageCheck:
    """Checks the cases of one stage against one submission running in a child process."""

    def __init__(self, stage: Stage, selection: Selection, runner: Runner, run_seed: int = 0):
        self.stage = stage
        self.backend = selection.backend
        self.runner = runner
        self.run_seed = run_seed
        self.results: dict[str, CaseResult] = {}
        self.unchecked: str | None = None  # why no GPU compiler's front end saw the kernels

    def check(self, case: Case) -> Verdict:
        start = time.perf_counter()
        seed = case.seed_in_run(self.run_seed)
        verdict = self._call_and_judge(case, seed)
        if verdict.passed:
            again = self._call_and_judge(case, seed ^ SECOND_DRAW)
            if not again.passed:
                verdict = Verdict(False, f"a second call with fresh inputs failed: {again.summary}",
                                  again.details + ["results must be computed from the inputs "
                                                   "of each call, never reused"], again.stats,
                                  again.kind)
        if case.hidden:
            verdict = _withheld(verdict)
        self.results[case.id] = CaseResult(
            id=case.id,
            dtype=case.dtype,
            params={} if case.hidden else dict(case.params),
            seed=0 if case.hidden else seed,  # the run's --seed reproduces it for instructors
            passed=verdict.passed,
            summary=verdict.summary,
            details=verdict.details,
            stats=verdict.stats,
            seconds=round(time.perf_counter() - start, 3),
            hidden=bool(case.hidden),
        )
        return verdict

    def _call_and_judge(self, case: Case, seed: int) -> Verdict:
        problem = self.stage.problem
        dtype = DTYPES[case.dtype]
        call = problem.draw(case.params, case.dtype, seed)
        expected = problem.reference(call.to(self.backend.device))
        outcome = self.runner.call(problem.id, dict(case.params), case.dtype, seed,
                                   call.tensors(), expected.nbytes)
        self.unchecked = self.unchecked or outcome.unchecked
        problem_found = self._misconduct(call, outcome)
        if problem_found:
            return problem_found
        return compare(outcome.output, expected, dtype, "cpu", self.stage.tolerance[case.dtype],
                       self.stage.tiles.get(self.backend.track), outcome.launches)

    def _misconduct(self, call: Call, outcome: Outcome) -> Verdict | None:
        """Everything wrong with the call besides the numbers it returned."""
        if outcome.error:
            for kind in ("timed out", "crashed"):
                if outcome.error.startswith(kind):
                    return Verdict(False, outcome.error, kind=kind)
            return Verdict(False, f"raised {outcome.error}", kind="raised an exception")
        if outcome.compile_errors:
            return Verdict(False, "a kernel does not compile for a GPU (the interpreter ran it, "
                                  "a GPU compiler would not): " + outcome.compile_errors[0],
                           outcome.compile_errors[1:], kind="does not compile")
        track = self.backend.track
        if not any(launch.language == track for launch in outcome.launches):
            language = {"triton": "Triton", "cutile": "cuTile"}.get(track, track)
            return Verdict(False, f"launched no {language} kernel: the stage must be computed by "
                                  "a kernel, not by PyTorch", kind="launched no kernel")
        if outcome.host:
            return Verdict(False, outcome.host[0], outcome.host[1:], kind="host did the work")
        if outcome.overruns:
            return Verdict(False, "wrote out of bounds: " + "; ".join(outcome.overruns),
                           ["a load or store is missing its mask, or its mask is too loose"],
                           kind="wrote out of bounds")
        names = self.stage.problem.tensor_names(call)
        for name, before, after in zip(names, call.tensors(), outcome.inputs_after):
            if not torch.equal(before, after):
                return Verdict(False, f"modified its input `{name}`: a kernel must not write its inputs",
                               kind="modified its inputs")
        if outcome.output is None:
            return Verdict(False, f"returned {outcome.returned}, expected a torch.Tensor")
        if outcome.output_device != torch.device(self.backend.device).type:
            return Verdict(False, f"returned a tensor on {outcome.output_device}, expected it on "
                                  f"{self.backend.device} like the inputs")
        return None


def memory_check(stage: Stage, selection: Selection, runner: Runner, seed: int) -> CheckResult:
    """The extra memory of a call must grow with the problem as the stage intends."""
    name = "memory growth"
    if selection.backend.device != "cuda":
        return CheckResult(name, False, False, "not graded: needs a GPU")
    rule = stage.memory_growth
    small, large, limit = rule.small.params, rule.large.params, rule.max_growth
    sizes = []
    for case in (rule.small, rule.large):
        used, error = runner.memory(stage.problem.id, dict(case.params), case.dtype, seed)
        if error:
            return CheckResult(name, True, False, f"could not be measured: {error}")
        sizes.append(max(used, 1))
    growth = sizes[1] / sizes[0]
    shown = f"{sizes[0] / 2**20:.1f} MiB -> {sizes[1] / 2**20:.1f} MiB ({growth:.1f}x)"
    changed = ", ".join(f"{k} {small[k]} -> {large[k]}" for k in small if small[k] != large[k])
    if growth > limit:
        return CheckResult(name, True, False, f"extra GPU memory grew {shown} for {changed}: more "
                           f"than {limit:g}x means something of size N x N is being stored")
    return CheckResult(name, True, True, f"extra GPU memory grew {shown} for {changed}")


def _withheld(verdict: Verdict) -> Verdict:
    """A hidden case's verdict says pass or fail and the kind of failure, nothing more."""
    if verdict.passed:
        return Verdict(True, "hidden case passed")
    return Verdict(False, f"hidden case failed: {verdict.kind}", kind=verdict.kind)


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
        if report.when != "call":
            if report.failed:
                self.failures[report.nodeid] = str(report.longrepr)
            return
        result = self.results.get(report.nodeid.rpartition("[")[2].rstrip("]"))
        if result is None:
            if report.failed:  # the check itself broke before it could judge the case
                self.failures[report.nodeid] = str(report.longrepr)
        elif self.on_case:
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
    # re-run grading, nor options or plugins named in PYTEST_ADDOPTS / PYTEST_PLUGINS
    # change it; the grader loads exactly what it needs.
    names = ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")
    saved = {name: os.environ.pop(name, None) for name in names}
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


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
    seed: int = 0,
    timeout: float = 120.0,
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
    source = path.read_text(encoding="utf-8")
    todos = todo_state(source)
    if todos.not_started:
        result.status = Status.NOT_STARTED
        numbers = ", ".join(str(n) for n in todos.todos)
        result.message = f"fill in TODO {numbers} in {result.module}"
        return result
    findings = screen(source, path.name, course.rules)
    if findings:
        result.message = describe_findings(findings)
        return result

    backend.prepare()  # before the child starts: it inherits the environment
    runner = Runner(path, stage.problem.function, backend.device, timeout,
                    hidden=course.private_paths, rules=course.rules, track=backend.track)
    try:
        runner.load()
        return _grade_loaded(stage, selection, runner, result, todos, on_case, benchmark_json, seed,
                             no_speed)
    except SubmissionError as exc:
        result.message = str(exc)
        return result
    finally:
        runner.close()  # every process of the submission is gone before a result is kept
        result.sandbox = runner.protections
        result.output = runner.output()


def _grade_loaded(stage, selection, runner, result, todos, on_case, benchmark_json, seed, no_speed):
    if todos.unfilled:
        result.message = f"{result.module} {todos.describe()}"
    check = StageCheck(stage, selection, runner, seed)
    broken = _run_checks("test_correctness.py", _CorrectnessPlugin(check, on_case))
    result.cases = [check.results[c.id] for c in stage.cases if c.id in check.results]
    if broken:
        result.message, result.status = broken, Status.ERROR
        return result
    if check.unchecked:
        result.checks.append(CheckResult("compiles for a GPU", False, False,
                                         f"not graded: {check.unchecked}"))
    if stage.memory_growth:
        result.checks.append(memory_check(stage, selection, runner, seed))
    result.conclude(len(stage.cases))
    if no_speed or result.status is not Status.PASS:
        return result

    timer = SpeedCheck(stage, selection, runner, run_seed=seed)
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
