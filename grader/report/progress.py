"""Progress while cases run: a live bar on a terminal, one line per stage in a CI log."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from grader.report.results import CaseResult


@contextmanager
def stage_progress(console: Console, label: str, total: int) -> Iterator[Callable[[CaseResult], None]]:
    """Yields a callback to call after each case of the stage."""
    if not console.is_terminal:
        console.print(f"grading {label} ({total} cases) ...", markup=False)
        yield lambda result: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[last]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(escape(label), total=total, last="")

        def advance(result: CaseResult) -> None:
            mark = "ok" if result.passed else "FAIL"
            progress.update(task, advance=1, last=f"{result.id} {mark}")

        yield advance


@contextmanager
def batch_progress(console: Console, total: int) -> Iterator[Callable[[object], None]]:
    """Yields a callback to call after each submission; shows the time left on a terminal."""
    if not console.is_terminal:
        count = iter(range(1, total + 1))
        yield lambda graded: console.print(
            f"[{next(count)}/{total}] {graded.name}: {graded.error or 'graded'}", markup=False)
        return
    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("batch", total=total)
        yield lambda graded: progress.update(task, advance=1)
