"""The grader's checks as plain pytest: `pytest --pyargs grader.checks --stage softmax`.

A pytest plugin, installed with the package (the `pytest11` entry point in pyproject.toml),
that does nothing unless --stage is given. `grade` runs the check modules itself
(grader.grading, with plugin autoloading off and a plugin of its own), so this module never
takes part in grading. It is for a student or an instructor who
wants pytest's own view of one stage: one test item per case of course.toml, the verdict as
its assertion message, and pytest's options as usual (-k, -x, --lf, -v, --junitxml). With
the same --seed, the verdicts are those `grade` gives.

  --course PATH       the course.toml (default: course.toml in the current folder)
  --stage NAME        the stage to check (`stage3`, `3` or `softmax`); required
  --backend NAME      as `grade --backend` (default auto); --track as `grade --track`
  --solutions         check the reference solutions instead of exercises/
  --submission=PATH   check a student's submission, read as `grade --submission` reads it
                      (grader.intake.upload: a folder, a zip or one stage file, laid over
                      the course's exercises); with `=`: a path given apart would also
                      count as a path to test
  --seed N            the run seed `grade` printed (default: a fresh one, in the header)

The speed items need a GPU and every correctness case passed first; otherwise each is
skipped with the reason it is not graded. `grade` also checks GPU memory growth, which
is not a test item here.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import ExitStack
from pathlib import Path

import pytest

from grader.backends import selection as backends
from grader.course import load_course
from grader.errors import GradeError
from grader.grading.request import GradingRequest
from grader.grading.session import StageSession, grader_threads
from grader.intake import NotRun
from grader.intake.overlay import lay_out
from grader.judge.stage import StageCheck
from grader.sandbox.submission import SubmissionError
from grader.speed.check import SpeedCheck
from grader.tracks import TRACKS


def pytest_addoption(parser):
    group = parser.getgroup("tilecourse", "tilecourse: check one stage of a course")
    group.addoption("--course", default="course.toml", help="the course.toml (default: ./course.toml)")
    group.addoption("--stage", help="the stage to check: stage3, 3 or softmax")
    group.addoption("--backend", default=backends.AUTO, help="as `grade --backend` (default auto)")
    group.addoption("--track", choices=list(TRACKS), help="as `grade --track`")
    group.addoption("--solutions", action="store_true", help="check the reference solutions")
    group.addoption("--submission", help="a student's submission: a folder, a zip or one "
                                         "stage file, read as `grade --submission` reads it")
    group.addoption("--seed", type=int, help="the run seed (default: a fresh one)")


def pytest_configure(config):
    if config.getoption("stage") is None:
        if any(arg.replace("/", ".").rstrip(".").endswith("grader.checks") for arg in config.args):
            raise pytest.UsageError(
            "name the stage to check, e.g. `pytest --pyargs grader.checks --stage softmax "
                "--backend triton-interpret`; `grade list` shows the stages")
        return
    config.pluginmanager.register(_StageUnderTest(config), "tilecourse-stage")


class _StageUnderTest:
    """One stage of one course on one backend, as the fixtures of the check modules."""

    def __init__(self, config):
        option = config.getoption
        try:
            course = load_course(Path(option("course")))
            submission = Path(option("submission")) if option("submission") else None
            if submission is not None:  # the one rule of what a submission gives
                self._scratch = Path(tempfile.mkdtemp(prefix="tilecourse-submission-"))
                submission = lay_out(course, submission, self._scratch).exercises
            # The same request as `grade`'s, resolved the same way: the same track, backend,
            # file and seed.
            self.resolved = GradingRequest(
                course, (course.select(option("stage")),), option("backend"), option("track"),
                option("solutions"), submission, seed=option("seed")).resolve()
        except GradeError as exc:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
            raise pytest.UsageError(str(exc)) from None
        self.stage = self.resolved.stages[0]

    def pytest_report_header(self, config):
        selection, path = self.resolved.selection, self.resolved.file(self.stage).path
        return (f"tilecourse: {self.stage.name} {self.stage.id}, {path}, backend "
                f"{selection.backend.name} ({selection.reason}), seed {self.resolved.seed} "
                f"(--seed {self.resolved.seed} reproduces the inputs)")

    def pytest_generate_tests(self, metafunc):
        if "case" in metafunc.fixturenames:
            timed = metafunc.function.__name__ == "test_speed"
            cases = (self.stage.speed.cases if self.stage.speed else ()) if timed else self.stage.cases
            metafunc.parametrize("case", cases, ids=[c.id for c in cases])

    # Function-scoped fixtures over state kept here: one session (its processes, its
    # StageCheck) for the whole pytest session (a class's session-scoped fixtures would be a
    # new instance each time).
    _session: StageSession | None = None
    _refused: str | None = None
    _scratch: Path | None = None  # where a --submission is laid out
    _threads: ExitStack | None = None  # the grader's own threads while the session is open

    @pytest.fixture
    def grading(self) -> StageCheck:
        if self._session is None and self._refused is None:
            self._refused = self._open()
        if self._refused:
            pytest.fail(self._refused, pytrace=False)
        return self._session.check

    def _open(self) -> str | None:
        self._threads = ExitStack()  # as `grade` runs beside its builders (grader_threads)
        self._threads.enter_context(grader_threads(self.resolved.selection.backend.device))
        self._session = StageSession(self.resolved, self.stage)
        try:
            self._session.open()
        except NotRun as exc:
            return f"{exc.status.value}: {exc.message}"
        except SubmissionError as exc:
            return str(exc)
        return None

    def pytest_terminal_summary(self, terminalreporter):
        """What was not graded, and why, even without -rs: a skip is never silent."""
        reasons = {str(r.longrepr[-1]).removeprefix("Skipped: ")
                   for r in terminalreporter.stats.get("skipped", []) if isinstance(r.longrepr, tuple)}
        if self.stage.memory_growth:
            reasons.add("memory growth: not graded here (`grade` checks it, on a GPU)")
        for reason in sorted(reasons):
            terminalreporter.write_line(f"tilecourse: {reason}")

    def pytest_sessionfinish(self, session):
        if self._session is not None:
            self._session.close()  # every process of the submission ends with the session
        if self._threads is not None:
            self._threads.close()
        if self._scratch is not None:  # only once no process uses the laid-out files
            shutil.rmtree(self._scratch, ignore_errors=True)

    @pytest.fixture
    def speed(self, grading) -> SpeedCheck:
        # The same decision as `grade`'s (grader.grading.session), on the cases checked so far.
        reason = self._session.not_timed(list(grading.results.values()))
        if reason:
            pytest.skip(f"not graded: {reason}")
        return self._session.speed_check()
