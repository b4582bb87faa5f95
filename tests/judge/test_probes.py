"""The probe replays a failing case's hypotheses ask for (StageCheck._probe), played against
scripted processes (tests/scripted.py): what a probe may run, what it leaves behind."""

import dataclasses

from scripted import ScriptedChild, correct

from grader.judge.stage import StageCheck


def unchecked(*args):
    """A replay whose kernels no GPU compiler's front end saw."""
    outcome = correct(*args)
    outcome.unchecked = "a constexpr argument of type tuple"
    return outcome


def test_a_probe_whose_kernels_went_unchecked_leaves_the_stage_wide_check_alone(course,
                                                                                  interpret):
    stage = course.select("vector_add")
    child = ScriptedChild([unchecked])
    check = StageCheck(stage, interpret, child)
    case = stage.cases[0]
    assert check._probe(case, case.seed)({"n": 64}) is None  # not graded: the probe fails
    assert len(child.replay_process.calls) == 1
    assert check.compile_check() is None and check.unchecked is None


def test_a_hidden_case_gets_no_probe_not_even_one_a_shown_case_ran(course, interpret):
    stage = course.select("vector_add")
    child = ScriptedChild([correct])
    check = StageCheck(stage, interpret, child)
    shown = stage.cases[0]
    hidden = dataclasses.replace(shown, hidden=1)
    assert check._probe(shown, shown.seed)({"n": 64})  # it passed: the parameters in words
    assert check._probe(hidden, hidden.seed)({"n": 64}) is None
    assert check._probe(hidden, hidden.seed)({"n": 128}) is None
    assert len(child.records) == len(child.replay_process.calls) == 1
