"""Progress while cases run: a live bar on a terminal, one line per stage in a CI log."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

from grader.report.results import CaseResult
from grader.report.text import visible


class _Quiet:
    """Not a terminal: the stage's line says it started; the scorecard says the rest."""

    def start(self, case_id: str) -> None:
        pass

    def end(self, result: CaseResult) -> None:
        pass


class _CaseClock(ProgressColumn):
    """The case that is running and for how long: a hang shows as a clock that keeps going."""

    def render(self, task) -> Text:
        running, since = task.fields.get("running"), task.fields.get("since")
        if not running or since is None:
            return Text(task.fields.get("last", ""))
        return Text(f"{running}: {time.monotonic() - since:.0f} s")


class _Bar:
    def __init__(self, progress: Progress, task):
        self.progress, self.task = progress, task

    def start(self, case_id: str) -> None:
        self.progress.update(self.task, running=case_id, since=time.monotonic())

    def end(self, result: CaseResult) -> None:
        mark = "ok" if result.passed else "FAIL"
        self.progress.update(self.task, advance=1, running=None, last=f"{result.id} {mark}")


@contextmanager
def stage_progress(console: Console, label: str, total: int) -> Iterator[_Bar | _Quiet]:
    """Yields what to tell as each case of the stage starts and ends."""
    if not console.is_terminal:
        console.print(f"grading {label} ({total} cases) ...", markup=False)
        yield _Quiet()
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               _CaseClock(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        yield _Bar(progress, progress.add_task(escape(label), total=total, last="", running=None,
                                               since=None))


@contextmanager
def batch_progress(console: Console, total: int) -> Iterator[Callable[[object], None]]:
    """Yields a callback to call after each submission; shows the time left on a terminal."""
    if not console.is_terminal:
        count = iter(range(1, total + 1))
        yield lambda graded: console.print(
            f"[{next(count)}/{total}] {visible(graded.name)}: {visible(graded.error or 'graded')}",
            markup=False)
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

    if not console.is_terminal:
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
