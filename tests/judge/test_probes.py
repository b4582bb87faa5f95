"""The probe replays a failing case's hypotheses ask for (StageCheck._probe), played against
scripted processes (tests/scripted.py): what a probe may run, what it leaves behind."""

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
