"""The probe replays a failing case's hypotheses ask for (StageCheck._probe), played against
scripted processes (tests/scripted.py): what a probe may run, what it leaves behind."""

import dataclasses

from scripted import ScriptedChild, correct

from grader.judge.stage import PROBES, StageCheck


def large(stage, dtype="float32"):
    """Cases a probe of n = 64 .. 1024 shrinks (a probe never grows a case)."""
    return [c for c in stage.cases if c.dtype == dtype and c.params["n"] >= 1024]


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
    case = large(stage)[0]
    assert check._probe(case, case.seed)({"n": 64}) is None  # not graded: the probe fails
    assert len(child.replay_process.calls) == 1
    assert check.compile_check() is None and check.unchecked is None


def test_a_hidden_case_gets_no_probe_not_even_one_a_shown_case_ran(course, interpret):
    stage = course.select("vector_add")
    child = ScriptedChild([correct])
    check = StageCheck(stage, interpret, child)
    shown = large(stage)[0]
    hidden = dataclasses.replace(shown, hidden=1)
    assert check._probe(shown, shown.seed)({"n": 64})  # it passed: the parameters in words
    assert check._probe(hidden, hidden.seed)({"n": 64}) is None
    assert check._probe(hidden, hidden.seed)({"n": 128}) is None
    assert len(child.records) == len(child.replay_process.calls) == 1


def test_one_probe_serves_every_case_of_its_dtype_without_replaying_again(course, interpret):
    stage = course.select("vector_add")
    child = ScriptedChild([correct])
    check = StageCheck(stage, interpret, child)
    first, other = large(stage)[:2]
    said = check._probe(first, first.seed)({"n": 64})
    assert said == "n = 64, float32"  # the replay's parameters, worded as its changes are
    assert check._probe(first, first.seed)({"n": 64}) == said
    assert check._probe(other, other.seed)({"n": 64}) == said  # another case, the same dtype
    assert len(child.records) == len(child.replay_process.calls) == 1


def test_a_failed_probe_is_remembered_too(course, interpret):
    stage = course.select("vector_add")
    child = ScriptedChild([unchecked])
    check = StageCheck(stage, interpret, child)
    case = large(stage)[0]
    assert check._probe(case, case.seed)({"n": 64}) is None
    assert check._probe(case, case.seed)({"n": 64}) is None
    assert len(child.replay_process.calls) == 1


def test_a_stage_runs_at_most_PROBES_probes(course, interpret):
    stage = course.select("vector_add")
    child = ScriptedChild([correct] * (PROBES + 1))
    check = StageCheck(stage, interpret, child)
    case = large(stage)[0]
    probe = check._probe(case, case.seed)
    ran = [probe({"n": 64 * (i + 1)}) for i in range(PROBES)]
    assert all(ran) and len(child.replay_process.calls) == PROBES
    assert probe({"n": 1024}) is None  # the stage's probes are spent: not run
    assert len(child.records) == len(child.replay_process.calls) == PROBES
    assert probe({"n": 64}) == ran[0]  # one already run is still answered


def test_a_probe_the_problem_refuses_is_not_run(course, interpret):
    stage = course.select("matmul")
    child = ScriptedChild([])
    check = StageCheck(stage, interpret, child)
    sliced = next(c for c in stage.cases if c.params["layout"] == "sliced")
    # a sliced input with K = 1 is laid out like a contiguous one: the problem refuses it
    assert check._probe(sliced, sliced.seed)({"K": 1}) is None
    assert child.records == [] and check.probes == {}
