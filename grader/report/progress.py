"""Progress while cases run: a live line on a terminal, plain lines in a log or a notebook.

Grading runs pytest in this process, and while a case runs pytest's output capture points
file descriptors 1 and 2 at temporary files: a display that wrote to sys.stdout would freeze
at its last frame (and per-case lines would vanish). Progress therefore writes through a
copy of the descriptor, made before pytest starts, that keeps reaching the terminal.

A stage's clocks read the clock they are given: the grading's shown clock
(grader.shown_clock), which stands still while a hidden case runs, so that neither a case's
time nor the stage's tells how long a hidden one took.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

from grader.quoting import single_line
from grader.results import CaseResult

# Set in the processes a Jupyter kernel starts (`!grade 1` in a cell) and in Colab, whose
# cells show cursor codes as garbage or not at all even where the output is a pseudo-terminal.
NOTEBOOK_VARIABLES = ("JPY_PARENT_PID", "COLAB_RELEASE_TAG")
REFRESHES_PER_SECOND = 4  # the running case's clock moves every second
NAME_CHARS, ERROR_CHARS = 120, 400  # of a submission's name and why it was not graded


def in_notebook(console: Console) -> bool:
    """Whether the output ends up in a notebook cell (in this process or a child of one)."""
    return console.is_jupyter or any(os.environ.get(name) for name in NOTEBOOK_VARIABLES)


def animated(console: Console) -> bool:
    """Whether a display that redraws itself in place can be shown."""
    return console.is_interactive and not in_notebook(console)


@contextmanager
def beside_capture(console: Console) -> Iterator[Console]:
    """A console that writes where `console` writes now, and keeps doing so while pytest
    captures this process's output: through its own copy of the file descriptor, or, where
    the output has none (a notebook's stream, a test's buffer), bound to the stream itself."""
    stream = console.file
    stream.flush()  # what was printed before comes first
    fd = _descriptor(stream) if not console.is_jupyter else None
    if fd is None:
        yield _console_like(console, stream)
        return
    copy = os.fdopen(os.dup(fd), "w", encoding=getattr(stream, "encoding", None) or "utf-8",
                     errors="replace")
    try:
        yield _console_like(console, copy)
    finally:
        copy.close()


def _descriptor(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None


def _console_like(console: Console, file) -> Console:
    # A terminal's width is read at each redraw (it may be resized); a log's is fixed.
    return Console(file=file, width=None if console.is_terminal else console.width,
                   highlight=False,
                   force_terminal=console.is_terminal, force_interactive=console.is_interactive,
                   force_jupyter=False, color_system=console.color_system or None)


def _verdict(result) -> str:
    """A finished case in a word or two: ok, or the kind of its failure."""
    if result.passed:
        return "ok"
    failure = getattr(result, "failure", None)
    return failure.value if failure is not None else "FAIL"


# Seconds on the clock a stage's progress is shown by (grader.shown_clock.now).
Clock = Callable[[], float]


class _Lines:
    """Not a terminal (a CI log, a pipe, a notebook cell): one plain line per finished case."""

    def __init__(self, console: Console, clock: Clock):
        self.console, self.clock = console, clock
        self.since: float | None = None

    def start(self, case_id: str) -> None:
        self.since = self.clock()

    def end(self, result: CaseResult) -> None:
        # a hidden case's time is withheld like its inputs: a call can sleep them into it
        took = (f" ({self.clock() - self.since:.1f} s)"
                if self.since is not None and not getattr(result, "hidden", False) else "")
        self.console.print(f"  {result.id}: {_verdict(result)}{took}", markup=False,
                           highlight=False, soft_wrap=True)
        self.since = None


class _StageLine(ProgressColumn):
    """The whole line, fitted to the terminal's width: the stage, cases done, the running
    case with its clock (a hang shows as a clock that keeps going), the stage's time. Rich
    would wrap or cut columns where they fall; here the clock is never cut."""

    def __init__(self, console: Console, clock: Clock):
        super().__init__()
        self.console, self.clock = console, clock

    def render(self, task) -> Text:
        running, since = task.fields.get("running"), task.fields.get("since")
        case, clock = task.fields.get("last", ""), ""
        if running and since is not None:
            case, clock = running, f"{self.clock() - since:.0f} s"
        return fit_line(self.console.width - 1, task.description,
                        f"{task.completed:.0f}/{task.total:.0f}", case, clock,
                        _minutes(task.elapsed or 0.0))


def _minutes(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def fit_line(width: int, label: str, done: str, case: str, clock: str, elapsed: str) -> Text:
    """`label  done  case: clock  elapsed` in at most `width` columns: the case's name is
    shortened first, then the label; the counts and clocks always show."""
    mark = ": " if clock else " "
    fixed = len(done) + len(mark) + len(clock) + len(elapsed) + 6  # with the separators
    room = max(width - fixed, 0)
    label_room = max(room - len(case), min(len(label), room // 2))
    label = _shorten(label, label_room)
    case = _shorten(case, room - len(label))
    return Text.assemble(label, "  ", (done, "green"), "  ", case, mark, (clock, "yellow"),
                         "  ", (elapsed, "dim"), no_wrap=True, overflow="crop")


def _shorten(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    return text[:room - 1] + "…" if room > 0 else ""


class _LiveLine:
    """A terminal: one line redrawn in place, told of each case as it starts and ends."""

    def __init__(self, progress: Progress, task, clock: Clock):
        self.progress, self.task, self.clock = progress, task, clock

    def start(self, case_id: str) -> None:
        self.progress.update(self.task, running=case_id, since=self.clock())

    def end(self, result: CaseResult) -> None:
        self.progress.update(self.task, advance=1, running=None,
                             last=f"{result.id} {_verdict(result)}")


@contextmanager
def stage_progress(console: Console, label: str, total: int,
                   clock: Clock) -> Iterator[_LiveLine | _Lines]:
    """Yields what to tell as each case of the stage starts and ends; its times are read
    from `clock`."""
    with beside_capture(console) as screen:
        if not animated(console):
            cases = f"{total} case" + ("" if total == 1 else "s")
            screen.print(f"grading {label} ({cases}) ...", markup=False, highlight=False)
            yield _Lines(screen, clock)
            return
        # The live line redraws from its own thread, so it moves while the main thread
        # waits on a slow case; nothing else prints during a stage, hence no redirection.
        with Progress(_StageLine(screen, clock), console=screen, transient=True,
                      refresh_per_second=REFRESHES_PER_SECOND, redirect_stdout=False,
                      redirect_stderr=False, get_time=clock) as progress:
            task = progress.add_task(label, total=total, last="starting", running=None,
                                     since=None)
            yield _LiveLine(progress, task, clock)


@contextmanager
def batch_progress(console: Console, total: int) -> Iterator[Callable[[object], None]]:
    """Yields a callback to call after each submission; shows the time left on a terminal."""
    if not animated(console):
        count = iter(range(1, total + 1))
        # One line per submission: a name or an error (a zip's members are named by the
        # student) has its newlines escaped with the rest.
        yield lambda graded: console.print(
            f"[{next(count)}/{total}] {single_line(graded.name, NAME_CHARS)}: "
            f"{single_line(graded.error or 'graded', ERROR_CHARS)}", markup=False, soft_wrap=True)
        return
    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("batch", total=total)
        yield lambda graded: progress.update(task, advance=1)


@contextmanager
def slurm_progress(console: Console, total: int) -> Iterator[Callable[[dict[str, int]], None]]:
    """Yields a callback for each look at a Slurm array: the students done, running,
    pending and failed, as Slurm's own state says; on a terminal a bar, else a line at
    each change."""
    def line(counts: dict[str, int]) -> str:
        return ", ".join(f"{counts.get(k, 0)} {k}" for k in ("done", "running", "pending",
                                                              "failed"))

    if not animated(console):
        last = [""]

        def tell(counts: dict[str, int]) -> None:
            if line(counts) != last[0]:
                last[0] = line(counts)
                console.print(f"slurm: {last[0]} (of {total})", markup=False)

        yield tell
        return
    columns = (TextColumn("slurm"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[line]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("slurm", total=total, line="")
        yield lambda counts: progress.update(
            task, completed=counts.get("done", 0) + counts.get("failed", 0), line=line(counts))
