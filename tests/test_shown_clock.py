"""The clock every figure a student sees is read from (grader.shown_clock): what is done
inside a withheld block is left out of every span it measures, however they nest."""

from grader import shown_clock
from grader.shown_clock import ShownClock


class Ticks:
    """A clock moved by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_shown_clock_stands_still_inside_a_withheld_block():
    ticks = Ticks()
    clock = ShownClock(ticks)
    start = clock.now()
    ticks.now += 2
    with clock.withheld():
        ticks.now += 5
        assert clock.now() == start + 2  # still, while it runs
        with clock.withheld():  # nested: the outermost block counts, once
            ticks.now += 1
        assert clock.withheld_seconds() == 6
    ticks.now += 3
    assert clock.now() == start + 5 and clock.withheld_seconds() == 6


def test_a_phase_holds_none_of_the_withheld_work_inside_it(monkeypatch):
    ticks = Ticks()
    monkeypatch.setattr(shown_clock, "CLOCK", ShownClock(ticks))
    phases = {}
    with shown_clock.phase(phases, "cases"):
        ticks.now += 1
        with shown_clock.phase(phases, "record the call"), shown_clock.withheld():
            ticks.now += 7
        with shown_clock.withheld(), shown_clock.phase(phases, "replay"):
            ticks.now += 4
    assert phases == {"record the call": 0.0, "replay": 0.0, "cases": 1.0}
