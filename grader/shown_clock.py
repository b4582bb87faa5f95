"""The clock every time a student sees is read from: the grader's own, less the time of the
work done with a hidden case's inputs.

A hidden case shows whether it passed and nothing else, yet its time would tell its inputs
as plainly as its parameters: a wrapper that slept 0.1 s for each row of any size it had
not been shown made a stage's "record the call" read 12.44 s, and so gave the hidden case's
123 rows. The judge therefore does all work with a hidden case's inputs inside `withheld()`
(the call recorded, the replay, the judging, the ending of the processes that saw them),
and every figure a student sees is read from `now()`, which stands still meanwhile: the
phases of `grade --profile` (`phase`, `add_seconds`), a case's, a stage's and the run's
seconds, and so JUnit's times, Gradescope's execution time and the progress line. A span
measured by `now()` holds none of the withheld work, however spans and blocks nest.

One account for the whole process: the judge grades one case at a time, and nothing else
of the grading runs beside a hidden case (grader.judge.hidden settles the builds and the
stages readied beside it first). Work beside it would go on while its time is withheld, and
end that much sooner on this clock: a wait for it afterwards would tell the time.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, ContextManager, Iterator


class ShownClock:
    """Seconds on `clock`, less those spent inside `withheld` blocks (the outermost one
    counts when they nest); it stands still while one runs."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        self.lock = threading.Lock()
        self.left_out = 0.0  # seconds of the blocks that have ended
        self.depth = 0  # blocks open now
        self.since = 0.0  # when the outermost block open now began

    def now(self) -> float:
        with self.lock:
            return (self.since if self.depth else self.clock()) - self.left_out

    def withheld_seconds(self) -> float:
        """The seconds left out so far, of the block open now too."""
        with self.lock:
            return self.left_out + (self.clock() - self.since if self.depth else 0.0)

    @contextmanager
    def withheld(self) -> Iterator[None]:
        """Leave the block's seconds out of every span this clock measures."""
        with self.lock:
            if not self.depth:
                self.since = self.clock()
            self.depth += 1
        try:
            yield
        finally:
            with self.lock:
                self.depth -= 1
                if not self.depth:
                    self.left_out += self.clock() - self.since


CLOCK = ShownClock()


def now() -> float:
    """The grading's shown clock, in seconds (only differences mean anything)."""
    return CLOCK.now()


def withheld() -> ContextManager[None]:
    """The block's seconds left out of every time a student sees (work with a hidden case's
    inputs)."""
    return CLOCK.withheld()


def withheld_seconds() -> float:
    """The seconds this process has left out so far."""
    return CLOCK.withheld_seconds()


@contextmanager
def phase(phases: dict[str, float], name: str) -> Iterator[None]:
    """Add the seconds the block takes on the shown clock to `phases[name]`: where a
    grading's time goes (`grade --profile`)."""
    start = now()
    try:
        yield
    finally:
        add_seconds(phases, name, now() - start)


def add_seconds(phases: dict[str, float], name: str, seconds: float) -> None:
    """Add `seconds` to `phases[name]` (what `phase` adds, for a span measured elsewhere on
    the shown clock)."""
    phases[name] = round(phases.get(name, 0.0) + seconds, 3)
