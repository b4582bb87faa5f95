"""A hidden case's time (grader.judge.hidden): everything done with its inputs is left out
of the clock every figure a student sees is read from (grader.shown_clock), the ending of
the processes that saw them too. The whole of `grade` is held to it by
tests/grading/test_what_hidden_cases_tell.py."""

import dataclasses
import time

from scripted import ScriptedChild, correct

from grader import shown_clock
from grader.judge.stage import StageCheck

# A hidden case's work, slept here, far above what the judge's own steps take.
SLEPT = 0.3


def _sleeping(*args):
    time.sleep(SLEPT)  # a replay that takes the hidden case's size in time
    return correct(*args)


class SlowToEnd(ScriptedChild):
    """A child whose processes end slowly, as a submission can make its own end."""

    def close(self):
        time.sleep(SLEPT)
        super().close()


def test_a_hidden_cases_replay_and_the_end_of_its_processes_take_no_shown_time(course,
                                                                                interpret):
    stage = course.select("vector_add")
    hidden = dataclasses.replace(stage.cases[0], hidden=1)
    child = SlowToEnd([correct, _sleeping])
    check = StageCheck(stage, interpret, child)
    check.judge(stage.cases[0])
    shown_before, withheld_before = dict(check.phases), shown_clock.withheld_seconds()
    start = shown_clock.now()
    assert check.judge(hidden).passed
    check.forget_hidden()
    assert child.closed_before == [2]
    assert shown_clock.now() - start < SLEPT / 2  # two sleeps, neither shown
    assert shown_clock.withheld_seconds() - withheld_before >= 2 * SLEPT
    assert check.results[hidden.id].seconds == 0.0
    grown = {k: v - shown_before.get(k, 0.0) for k, v in check.phases.items()}
    assert max(grown.values()) < SLEPT / 2, grown
