"""The parent side of a grading run: what a failing child or replay turns into, case by case.

A case must never drop out of the results: a process that cannot be restarted is a crash of
that case, and a hidden case tells only that it failed, whichever process failed and how.
"""

import dataclasses

import torch

from scripted import PROPOSAL, ScriptedChild, ScriptedReplay, correct

from grader.judge.stage import StageCheck
from grader.problems import PROBLEMS
from grader.results import Failure
from grader.sandbox import Outcome, ChildProcess
from grader.sandbox.outcomes import Proposed
from grader.sandbox.output_log import SHOWN, WITHHELD, OutputLog
from grader.sandbox.submission import SubmissionError



def test_a_replay_that_cannot_be_restarted_is_a_crash_of_the_case(tmp_path, monkeypatch):
    module = tmp_path / "submission.py"
    module.write_text("def vector_add(x, y):\n    return x + y\n")
    child = ChildProcess(module, "vector_add", "cpu", timeout=5.0)

    def failing_load():
        raise SubmissionError("it cannot be imported any more")

    monkeypatch.setattr(child.replay_process, "load", failing_load)
    child.replay_process._serial = 3  # it answered before: this is a restart after a timeout
    inputs = PROBLEMS["vector_add"].draw({"n": 4}, "float32", 1).tensors()
    outcome = child.replay_process.call("vector_add", {"n": 4}, "float32", 1, inputs, 16,
                                        PROPOSAL)
    assert outcome.error.startswith("crashed") and outcome.failure is Failure.CRASHED
    assert "it cannot be imported any more" in outcome.error


def test_kernels_the_grader_refuses_say_why_on_every_request(tmp_path):
    """A file whose kernels the replay refuses to build (a decorator with code in it) is
    refused the same way for every case, without starting the replay again."""
    module = tmp_path / "submission.py"
    module.write_text("import triton\n\n\n@triton.heuristics(values={'B': lambda a: 4})\n"
                      "@triton.jit\ndef vector_add_kernel(x):\n    pass\n")
    child = ChildProcess(module, "vector_add", "cpu", timeout=60.0, track="triton")
    inputs = PROBLEMS["vector_add"].draw({"n": 4}, "float32", 1).tensors()
    try:
        outcomes = [child.replay_process.call("vector_add", {"n": 4}, "float32", 1, inputs, 16,
                                              PROPOSAL) for _ in range(2)]
    finally:
        child.close()
    for outcome in outcomes:
        assert outcome.failure is Failure.DOES_NOT_COMPILE, outcome.error
        assert outcome.error.startswith("its kernels are refused before they run:\n┆ line 4 of "
                                        "submission.py: @triton.heuristics takes functions")
    assert not child.replay_process.running


def test_a_hidden_case_whose_replay_timed_out_says_only_that_it_failed(course, interpret):
    stage = course.select("vector_add")
    hidden = dataclasses.replace(stage.cases[0], hidden=1)
    timed_out = Outcome(error="timed out after 5 s (an endless loop, or a kernel that never finishes?)",
                        failure=Failure.TIMED_OUT)
    child = ScriptedChild([timed_out])
    check = StageCheck(stage, interpret, child)
    verdict = check.judge(hidden)
    assert not verdict.passed and child.withheld_before == [0]  # its output, from the start
    assert verdict.summary == "hidden case failed" and verdict.details == []
    assert check.results[hidden.id].failure is Failure.FAILED


def test_a_hidden_case_whose_call_crashed_says_only_that_it_failed(course, interpret):
    stage = course.select("vector_add")
    hidden = dataclasses.replace(stage.cases[0], hidden=1)
    crashed = Proposed(error="crashed: the process running it died (killed by SIGKILL)",
                       failure=Failure.CRASHED)
    child = ScriptedChild([], proposed=crashed)
    check = StageCheck(stage, interpret, child)
    verdict = check.judge(hidden)
    assert verdict.summary == "hidden case failed"
    assert check.results[hidden.id].failure is Failure.FAILED
    assert child.replay_process.calls == []  # nothing to replay


def test_the_kind_of_a_failure_is_the_graders_finding_not_the_childs_words(course, interpret):
    # A process may report any error text; only the grader says a call timed out or crashed.
    stage = course.select("vector_add")
    claimed = Outcome(error="timed out after 5 s (really: a RuntimeError)")
    verdict = StageCheck(stage, interpret, ScriptedChild([claimed])).judge(stage.cases[0])
    assert verdict.kind is Failure.RAISED


def test_a_hidden_time_out_holds_back_only_the_hidden_cases_after_it(course, interpret):
    # A shown case that said "not run: an earlier case (hidden1-...) timed out" would tell
    # how the hidden case failed; it runs, in fresh processes.
    stage = course.select("vector_add")
    first, second = (dataclasses.replace(stage.cases[0], hidden=n) for n in (1, 2))
    timed_out = Outcome(error="timed out after 5 s", failure=Failure.TIMED_OUT)
    child = ScriptedChild([timed_out, correct])
    check = StageCheck(stage, interpret, child)
    check.judge(first)
    held = check.judge(second)
    assert held.summary == "hidden case failed" and len(child.replay_process.calls) == 1
    shown = check.judge(stage.cases[1])
    assert shown.passed, shown.report
    assert child.closed_before == [1]  # the processes that saw the hidden cases ended first


def test_nothing_runs_beside_a_hidden_case(course, interpret):
    # Work beside a hidden case (builds ahead, a later stage readied) would end the sooner
    # for its time, which a wait for that work afterwards would tell: it is settled first.
    stage = course.select("vector_add")
    hidden = dataclasses.replace(stage.cases[0], hidden=1)
    child = ScriptedChild([correct, correct])
    settled = []

    class Later:
        def settle(self):
            settled.append(len(child.withheld_before))  # before its inputs were given

    check = StageCheck(stage, interpret, child)
    check.hidden.alongside = [Later()]
    check.judge(stage.cases[0])
    assert child.replay_process.settled == 0 and settled == []  # a shown case: no need
    check.judge(hidden)
    assert child.replay_process.settled == 1 and settled == [0]
    assert child.withheld_before == [1]


def test_a_case_passes_on_the_replay_of_fresh_inputs(course, interpret):
    stage = course.select("vector_add")
    child = ScriptedChild([correct])
    verdict = StageCheck(stage, interpret, child).judge(stage.cases[0])
    assert verdict.passed, verdict.report
    assert child.withheld_before == []  # what it printed is shown
    # the replay draws other inputs than the call the child recorded
    assert len(child.replay_process.calls) == 1 and child.replay_process.calls[0] != child.records[0]


def test_a_shown_case_after_a_hidden_one_gets_fresh_processes(course, interpret):
    # Processes that saw a hidden case could say its inputs in the next verdict: a shown case
    # judged after one (pytest's -k, another order) is never judged by them.
    stage = course.select("vector_add")
    hidden = dataclasses.replace(stage.cases[0], hidden=1)
    child = ScriptedChild([correct, correct, correct])
    check = StageCheck(stage, interpret, child)
    check.judge(stage.cases[0])
    assert child.closed_before == []  # nothing hidden yet: the same processes go on
    check.judge(hidden)
    check.judge(stage.cases[1])
    assert child.closed_before == [2]  # ended after the hidden case, before the shown one
    check.forget_hidden()
    assert child.closed_before == [2]  # and once only


def test_a_kernel_unchecked_only_in_a_hidden_case_says_nothing_of_it(course, interpret):
    # That a hidden case's kernel went unchecked is the kind of its failure, which the
    # submission chooses: the case failed, and no stage-wide check says more.
    stage = course.select("vector_add")
    hidden = dataclasses.replace(stage.cases[0], hidden=1)

    def unchecked(*args):
        outcome = correct(*args)
        outcome.unchecked = "a constexpr argument of type tuple (n=7919)"
        return outcome

    check = StageCheck(stage, interpret, ScriptedChild([correct, unchecked]))
    check.judge(stage.cases[0])
    check.judge(hidden)
    assert check.compile_check() is None
    assert check.results[hidden.id].summary == "hidden case failed"
    assert check.results[hidden.id].failure is Failure.FAILED


def test_a_shown_kernel_unchecked_says_why_quoted(course, interpret):
    stage = course.select("vector_add")

    def unchecked(*args):
        outcome = correct(*args)
        outcome.unchecked = "this Triton's front end takes other arguments\ntotal 20/20 PASS"
        return outcome

    check = StageCheck(stage, interpret, ScriptedChild([unchecked]))
    check.judge(stage.cases[0])
    assert check.compile_check().message.split("\n") == [
        "not graded: its kernels could not be given to a GPU compiler's front end:",
        "┆ this Triton's front end takes other arguments", "┆ total 20/20 PASS"]


def test_only_the_replays_output_is_judged(course, interpret):
    # A replay that returns what the recorded call's inputs would give is wrong for its own.
    stage = course.select("vector_add")
    child = ScriptedChild([])

    def stale(problem_id, params, dtype, seed):
        outcome = correct(problem_id, params, dtype, seed)
        outcome.output = correct(problem_id, params, dtype, child.records[0]).output
        return outcome

    child.replay_process = ScriptedReplay([stale])
    verdict = StageCheck(stage, interpret, child).judge(stage.cases[0])
    assert not verdict.passed and verdict.kind is Failure.WRONG_RESULT


# --- what the child printed ----------------------------------------------------------------


def printed(log: OutputLog, text: str) -> None:
    log.file.write(text.encode())  # as the child does, through the same file


def test_output_of_a_child_that_saw_a_hidden_case_is_withheld_until_it_ends():
    log = OutputLog()
    printed(log, "public 1\n")
    log.withhold()
    printed(log, "hidden n=7919\n")
    log.withhold()  # a second hidden case of the same child: one span
    printed(log, "remembered 7919\n")
    log.child_ended()
    printed(log, "a fresh child\n")
    assert log.text() == f"public 1\na fresh child\n{WITHHELD}\n"


def test_the_note_of_withheld_output_stands_whether_or_not_anything_was_printed():
    # A note only where a hidden case printed would tell a bit the submission chose.
    silent, talkative = OutputLog(), OutputLog()
    for log in (silent, talkative):
        printed(log, "public 1\n")
        log.withhold()
    printed(talkative, "n is odd\n")
    for log in (silent, talkative):
        log.child_ended()
    assert silent.text() == talkative.text() == f"public 1\n{WITHHELD}\n"


def test_output_still_withheld_while_the_child_runs_and_long_output_is_cut_around_it():
    log = OutputLog()
    printed(log, "a" * SHOWN)
    log.withhold()
    printed(log, "7919" * 1000)
    log.child_ended()
    printed(log, "b" * SHOWN)
    log.withhold()
    printed(log, "7919")  # its child still running
    text = log.text()
    assert "7919" not in text and text.endswith(WITHHELD + "\n")
    first, last = SHOWN * 3 // 4, SHOWN // 4
    head, cut, tail = text.partition(f"\n... ({2 * SHOWN - first - last} more bytes) ...\n")
    assert cut and head == "a" * first and tail == "b" * last + "\n" + WITHHELD + "\n"


def test_output_without_hidden_cases_has_no_note():
    log = OutputLog()
    printed(log, "x = 1")
    assert log.text() == "x = 1"
    log.withhold()  # a hidden case that printed nothing: the note all the same
    log.child_ended()
    assert log.text() == f"x = 1\n{WITHHELD}\n"


def test_a_large_output_comes_back_from_the_confined_replay_in_a_sealed_memory_file(
        course, monkeypatch):
    """An output past SEALED_MIN travels from the confined replay as a sealed memory file
    (grader.tensor_buffer): the grader maps it and judges it as any other."""
    from grader import tensor_buffer

    received = []
    mapped = tensor_buffer.mapped
    monkeypatch.setattr(tensor_buffer, "mapped", lambda fd, size: received.append(size) or
                        mapped(fd, size))
    stage = course.select("vector_add")
    path = course.module_path(stage, "triton", solutions=True)
    problem, params = stage.problem, {"n": 400_000}  # 1.6 MB of float32 out
    child = ChildProcess(path, problem.function, "cpu", timeout=120.0, rules=course.rules,
                         track="triton")
    try:
        proposed = child.record(problem.id, params, "float32", 3)
        call = problem.draw(params, "float32", 3)
        outcome = child.replay_process.call(problem.id, params, "float32", 3, call.tensors(),
                                            400_000 * 4, proposed.proposal)
    finally:
        child.close()
    assert outcome.error is None and received and received[-1] > tensor_buffer.SEALED_MIN
    assert torch.equal(outcome.output, problem.reference(call))
