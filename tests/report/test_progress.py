"""The progress display while a stage is graded: a line that moves on a terminal, even while
pytest (which grading runs in-process) captures the output; one plain line per finished case
in a log or a notebook."""

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest
from conftest import ROOT, broken, vector_add_course
from rich.console import Console

from grader.report.progress import fit_line, stage_progress
from grader.results import CaseResult, Failure

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# What redraws a line in place: cursor moves, erasing, hiding the cursor, a bare return.
CURSOR_CODES = re.compile(r"\x1b\[[0-9;?]*[A-HJKhl]|\r(?!\n)")


def _case(case_id: str, passed: bool = True) -> CaseResult:
    return CaseResult(case_id, "float32", {}, 0, passed, "", failure=None if passed else
                      Failure.WRONG_RESULT)


def _graded_in_a_terminal(args: list[str], columns: int = 100, env: dict | None = None,
                          limit: float = 240) -> tuple[int, list[tuple[float, str]]]:
    """Run `grade ARGS` with a pseudo-terminal as its stdin, stdout and stderr; returns its exit
    code and what it wrote, chunk by chunk, with the second at which each chunk arrived."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("PYTEST_") and k not in ("JPY_PARENT_PID", "COLAB_RELEASE_TAG",
                                                          "COLUMNS", "NO_COLOR")}
    process = subprocess.Popen([sys.executable, "-m", "grader", *args], stdin=follower,
                               stdout=follower, stderr=follower, close_fds=True, cwd=ROOT,
                               env={**clean, "TERM": "xterm-256color", **(env or {})})
    os.close(follower)
    start, chunks = time.monotonic(), []
    try:
        while time.monotonic() - start < limit:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # the child closed the terminal: it has ended
                break
            if not data:
                break
            chunks.append((time.monotonic() - start, data.decode("utf-8", "replace")))
        return process.wait(timeout=30), chunks
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
        os.close(leader)


@pytest.fixture
def slow_submission(tmp_path):
    """A one-case course whose vector add is right but slow (its one call sleeps for
    seconds), and the submission."""
    course = tmp_path / "course.toml"
    course.write_text(vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]'),
                      encoding="utf-8")
    source = broken("triton", "stage1_vector_add.py", "    return out\n",
                    "    time.sleep(2.5)\n    return out\n")
    folder = tmp_path / "submission" / "triton"
    folder.mkdir(parents=True)
    (folder / "stage1_vector_add.py").write_text("import time\n" + source, encoding="utf-8")
    return course, folder.parent


def test_on_a_terminal_the_running_cases_clock_moves_while_it_runs(slow_submission):
    """The case sleeps for seconds inside pytest's capture: the line still shows it with a clock
    that reads at least two different seconds, redrawn in place."""
    course, submission = slow_submission
    code, chunks = _graded_in_a_terminal(["--course", str(course), "1", "--backend",
                                          "triton-interpret", f"--submission={submission}"])
    text = "".join(c for _, c in chunks)
    assert code == 0, text
    readings = {}  # the clock's reading -> when it was first seen
    for at, chunk in chunks:
        for seconds in re.findall(r"n=1000-float32: (\d+) s", ANSI.sub("", chunk)):
            readings.setdefault(int(seconds), at)
    assert len(readings) >= 2, text
    assert max(readings.values()) - min(readings.values()) >= 0.9  # it moved with time
    assert "\r\x1b[2K" in text  # redrawn in place, not printed line after line
    assert "PASS" in text and "Traceback" not in text


def test_in_a_notebook_a_terminal_gets_plain_lines(slow_submission):
    """Colab runs `!grade 1` in a pseudo-terminal, but its cell cannot redraw a line: with
    the notebook's variables set, one plain line per case and no cursor codes."""
    course, submission = slow_submission
    code, chunks = _graded_in_a_terminal(["--course", str(course), "1", "--backend",
                                          "triton-interpret", f"--submission={submission}"],
                                         env={"COLAB_RELEASE_TAG": "release-colab-test"})
    text = "".join(c for _, c in chunks)
    assert code == 0, text
    progress = text[:text.index("scorecard")]
    assert "grading stage1 vector_add [triton-interpret] (1 case) ..." in progress
    assert re.search(r"\n  n=1000-float32: ok \(\d+\.\d s\)", progress.replace("\r", ""))
    assert not CURSOR_CODES.search(progress), repr(progress)


def test_lines_reach_a_log_while_pytest_captures_the_descriptor(tmp_path):
    """Not a terminal: one line per finished case, written while the output's descriptor
    points elsewhere, as it does under pytest's capture while a case runs."""
    log = open(tmp_path / "log.txt", "w", encoding="utf-8")
    console = Console(file=log, width=120)
    with stage_progress(console, "stage1 vector_add [triton-interpret]", 2,
                        time.monotonic) as cases:
        sink = open(tmp_path / "captured.txt", "w", encoding="utf-8")
        saved = os.dup(log.fileno())
        os.dup2(sink.fileno(), log.fileno())  # what pytest's capture does
        try:
            cases.start("n=1-float32")
            cases.end(_case("n=1-float32"))
            cases.start("n=7-float32")
            cases.end(_case("n=7-float32", passed=False))
        finally:
            os.dup2(saved, log.fileno())
            os.close(saved)
            sink.close()
    log.close()
    lines = (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "grading stage1 vector_add [triton-interpret] (2 cases) ..."
    assert re.fullmatch(r"  n=1-float32: ok \(\d+\.\d s\)", lines[1])
    assert re.fullmatch(r"  n=7-float32: wrong result \(\d+\.\d s\)", lines[2])
    assert len(lines) == 3 and "\x1b" not in "".join(lines)
    assert (tmp_path / "captured.txt").read_text(encoding="utf-8") == ""


def test_a_cases_time_is_read_from_the_clock_it_is_given(tmp_path):
    """`grade` hands the display the grading's shown clock (grader.shown_clock), which
    stands still while a hidden case runs: a case's time is what that clock says."""
    readings = iter([10.0, 12.5, 12.5, 12.5])  # the second case: a hidden one, no time
    log = open(tmp_path / "log.txt", "w", encoding="utf-8")
    with stage_progress(Console(file=log, width=120), "stage1", 2,
                        lambda: next(readings)) as cases:
        cases.start("n=1-float32")
        cases.end(_case("n=1-float32"))
        cases.start("hidden1-float32")
        cases.end(CaseResult("hidden1-float32", "float32", {}, 0, False, "hidden case failed",
                             hidden=True, failure=Failure.FAILED))
    log.close()
    lines = (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()
    assert lines[1:] == ["  n=1-float32: ok (2.5 s)", "  hidden1-float32: failed"]


def test_a_notebook_kernel_child_gets_plain_lines(monkeypatch, tmp_path):
    """`!grade 1` in Jupyter: a child of the kernel (JPY_PARENT_PID set) prints lines even
    where its output looks like a terminal."""
    monkeypatch.setenv("JPY_PARENT_PID", "1")
    log = open(tmp_path / "log.txt", "w", encoding="utf-8")
    console = Console(file=log, force_terminal=True, width=100)
    with stage_progress(console, "stage3 softmax", 1, time.monotonic) as cases:
        cases.start("M=1,N=1-float32")
        cases.end(_case("M=1,N=1-float32"))
    log.close()
    text = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert text.startswith("grading stage3 softmax (1 case) ...\n  M=1,N=1-float32: ok (")
    assert "\r" not in text and "\x1b[2K" not in text


@pytest.mark.parametrize("width", [40, 60, 100])
def test_the_live_line_fits_the_terminal_and_keeps_its_clocks(width):
    line = fit_line(width, "stage4 matmul [triton-interpret]", "3/11",
                    "M=4099,N=3001,K=77-bfloat16", "12 s", "1:02").plain
    assert len(line) <= width
    assert "3/11" in line and line.endswith(": 12 s  1:02")
    if width >= 100:
        assert line.startswith("stage4 matmul [triton-interpret]  3/11  M=4099,N=3001,K=77-bf")
    else:
        assert "…" in line
