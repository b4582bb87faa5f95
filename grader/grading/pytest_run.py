"""The grader's check modules (grader/checks) run through pytest, isolated.

pytest is driven programmatically with plugin autoloading off, no conftest files, no cache,
the grader's own ini file and rootdir, and none of the PYTEST_* variables of the
environment, so neither installed plugins nor a file planted next to the checks can change
how a stage is checked. A plugin of the grader's own feeds pytest the stage's cases and
tells the progress display as each ends; the results themselves are the check's, read from
it after pytest has run.
"""

from __future__ import annotations

import functools
import io
import os
import platform
from contextlib import contextmanager, nullcontext, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Callable, ContextManager, Protocol

import pytest

from grader import shown_clock
from grader.quoting import single_line
from grader.results import CaseResult

CHECKS = Path(__file__).resolve().parents[1] / "checks"


class CaseProgress(Protocol):
    """What a progress display hears of a stage's cases."""

    def start(self, case_id: str) -> None: ...

    def end(self, result: CaseResult) -> None: ...


# The part of a phase spent in pytest itself, outside the cases it ran (grade --profile):
# starting, collecting, the plugins' reports (pytest-benchmark's record) and finishing.
PYTEST_OWN = "pytest's own work"


# A stage's progress display: given its label and the number of cases, the context in which
# it is graded, yielding the CaseProgress told as each case starts and ends.
Progress = Callable[[str, int], ContextManager[CaseProgress | None]]


class CasePlugin:
    """Parametrizes a check module with `cases` and tells `progress` as each case starts
    and as its result (in the check's `results`) is in."""

    def __init__(self, cases, check, progress: CaseProgress | None):
        self.cases, self.check, self.progress = cases, check, progress
        self.failures: dict[str, str] = {}  # nodeid -> what happened, for checks that broke
        self.running = None  # the case whose item pytest runs now
        self.in_items = 0.0  # seconds pytest spent running the items (set-up to teardown)
        self.own_seconds = 0.0  # seconds of the whole run outside them (run_checks)

    def pytest_generate_tests(self, metafunc):
        if "case" in metafunc.fixturenames:
            metafunc.parametrize("case", self.cases, ids=[c.id for c in self.cases])

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        start = shown_clock.now()
        yield
        self.in_items += shown_clock.now() - start

    def pytest_runtest_setup(self, item):
        case = item.callspec.params.get("case") if hasattr(item, "callspec") else None
        self.running = case
        if case is not None and self.progress:
            self.progress.start(case.id)

    def pytest_runtest_logreport(self, report):
        result = self.check.results.get(self.running.id) if self.running is not None else None
        if report.when == "call" and result is not None:
            if self.progress:
                self.progress.end(result)
        elif report.failed:  # set-up, or the check itself, broke before it judged the case
            self.failures[report.nodeid] = broke_on(self.running, report.longrepr)

    def results(self) -> list:
        """The check's results of the cases pytest ran, in the cases' order."""
        return [self.check.results[c.id] for c in self.cases if c.id in self.check.results]


class CorrectnessPlugin(CasePlugin):
    """test_correctness.py's cases, judged by a grader.judge.stage.StageCheck."""

    def __init__(self, check, progress: CaseProgress | None):
        super().__init__(check.stage.cases, check, progress)

    @pytest.fixture
    def grading(self):
        return self.check


class SpeedPlugin(CasePlugin):
    """test_speed.py's cases, timed by a grader.speed.check.SpeedCheck."""

    def __init__(self, check, progress: CaseProgress | None):
        super().__init__(check.speed.cases, check, progress)

    @pytest.fixture
    def speed(self):
        return self.check

    # pytest-benchmark describes the machine and the commit in every JSON record it writes
    # (--benchmark-json), and pytest runs once a stage: both are the same all through a
    # grading, read once.
    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_benchmark_generate_machine_info(self, config):
        return dict(benchmark_machine_info())

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_benchmark_generate_commit_info(self, config):
        return dict(benchmark_commit_info(config.getoption("benchmark_project_name", None)))


@functools.cache
def benchmark_machine_info() -> dict:
    """The machine as pytest-benchmark's records describe it (its own fields), read once a
    process, with the CPU read from /proc/cpuinfo: pytest-benchmark asks py-cpuinfo, which
    starts a Python process of its own that runs lscpu and dmesg and forks once more for
    cpuid, 1.35 s of the first stage's speed check on the H200's host. What the timings
    depend on, the GPU and the versions, is in the grading's own record (grade --json)."""
    return {
        "node": platform.node(),
        "processor": platform.processor(),
        "machine": platform.machine(),
        "python_compiler": platform.python_compiler(),
        "python_implementation": platform.python_implementation(),
        "python_implementation_version": platform.python_version(),
        "python_version": platform.python_version(),
        "python_build": list(platform.python_build()),
        "release": platform.release(),
        "system": platform.system(),
        "cpu": cpu_description(),
    }


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict:
    """The CPU's model and its count of logical CPUs, in py-cpuinfo's field names (what
    pytest-benchmark writes under "cpu"); the model is None where /proc/cpuinfo does not
    say it (not Linux, or an Arm CPU that names no model)."""
    brand = None
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model") and value.strip():
                brand = value.strip()
                break
    except OSError:
        pass
    return {"brand_raw": brand, "count": os.cpu_count(), "arch_string_raw": platform.machine()}


@functools.cache
def benchmark_commit_info(project: str | None) -> dict:
    """pytest-benchmark's description of the commit, read once a process."""
    from pytest_benchmark.utils import get_commit_info

    return get_commit_info(project)


@contextmanager
def isolated_pytest():
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


def run_checks(module: str, plugin: CasePlugin, extra: list[str] = (),
               quiet: bool = False) -> str | None:
    """Run one check module through pytest; returns why it broke, or None. The plugin keeps
    the seconds pytest spent outside the cases (`own_seconds`).

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
        # They turn exceptions raised where nothing catches them into warnings, which the
        # grader shows nowhere; pytest collects garbage twice a run for them, 0.2 s in a
        # process holding PyTorch (two runs a stage: the cases, then speed).
        "-p", "no:unraisableexception",
        "-p", "no:threadexception",
        *extra,
    ]
    sink = io.StringIO()
    start = shown_clock.now()
    with isolated_pytest(), redirect_stdout(sink) if quiet else nullcontext(), \
            redirect_stderr(sink) if quiet else nullcontext():
        code = pytest.main(args, plugins=[plugin])
    plugin.own_seconds = max(0.0, shown_clock.now() - start - plugin.in_items)
    if code == pytest.ExitCode.INTERRUPTED:
        raise KeyboardInterrupt  # pytest caught the Ctrl-C: it stops grading, not one stage
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or plugin.failures:
        return "\n".join([f"the grader's checks could not run (pytest exit {int(code)}).",
                          *plugin.failures.values()])
    return None


def broke_on(case, longrepr) -> str:
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
