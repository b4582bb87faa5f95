"""The later stages readied beside the one graded (grader.grading.session.StageSession
.ready_beside): on a GPU every later stage is opened, and its calls recorded and compiled,
while the first judges its correctness cases; each child is ended at once; every stage's
cases are judged before any stage's speed is timed, and nothing of a stage runs while
another is timed. Graded this way, a stage gets the same result as graded in its own turn,
and one that cannot be graded says so in its own turn.
Here on Triton's interpreter, readying forced (a CPU does not ready stages beside each
other)."""

import json
import threading
from contextlib import contextmanager

import pytest
import torch
from conftest import fewer_cases

from grader.grading import session as sessions
from grader.grading import stages as grading
from grader.grading.request import GradingRequest, Outputs
from grader.intake import NotRun
from grader.results import PHASE_PART, READIED, Status
from grader.sandbox.replayer import ReplayProcess


@pytest.fixture
def three_stages(course):
    course = fewer_cases(course, 3)  # what readying changes shows in any case
    request = GradingRequest(course, tuple(course.select(s) for s in
                                           ("vector_add", "fused_gelu", "softmax")),
                             "triton-interpret", solutions=True, seed=11)
    return request.resolve()


@pytest.fixture
def two_stages(course):
    course = fewer_cases(course, 3)
    request = GradingRequest(course, (course.select("vector_add"), course.select("fused_gelu")),
                             "triton-interpret", solutions=True, seed=11)
    return request.resolve()


def _watched(monkeypatch):
    """Where each stage's file was read and its processes started (the thread), and where
    every child ended."""
    read, opened, ended = [], [], []
    read_now, start_now = sessions.StageSession._read, sessions.StageSession._start

    def watched_read(self):
        read.append((self.stage.id, threading.current_thread().name))
        return read_now(self)

    def watched_start(self, todos):
        opened.append((self.stage.id, threading.current_thread().name))
        return start_now(self, todos)

    monkeypatch.setattr(sessions.StageSession, "_read", watched_read)
    monkeypatch.setattr(sessions.StageSession, "_start", watched_start)
    end = sessions.ChildProcess.end
    monkeypatch.setattr(sessions.ChildProcess, "end",
                        lambda self: ended.append(threading.current_thread().name) or end(self))
    return read, opened, ended


def test_every_later_stage_readied_beside_the_first_is_graded_as_in_its_own_turn(
        three_stages, monkeypatch):
    alone = grading.grade(three_stages)
    read, opened, ended = _watched(monkeypatch)
    monkeypatch.setattr(sessions, "readied_beside", lambda device: True)
    beside = grading.grade(three_stages)
    # every file read (parsed) in the main thread: a parse beside another thread's can fail
    assert sorted(read) == [("fused_gelu", "MainThread"), ("softmax", "MainThread"),
                            ("vector_add", "MainThread")]
    # each stage opened once: the first in its turn, both later ones beside it
    assert opened[0] == ("vector_add", "MainThread")
    assert sorted(opened[1:]) == [("fused_gelu", "tilecourse-later-stage"),
                                  ("softmax", "tilecourse-later-stage")]
    assert ended.count("tilecourse-later-stage") >= 2  # their children ended once readied
    assert [(s.status, s.points, [c.passed for c in s.cases]) for s in beside.stages] == \
        [(s.status, s.points, [c.passed for c in s.cases]) for s in alone.stages], \
        [s.message for s in beside.stages]
    assert all(s.status is Status.PASS for s in beside.stages)
    assert not any(t.name == "tilecourse-later-stage" for t in threading.enumerate())
    # grade --profile: the readying's seconds apart from each later stage's own turn
    first, *later = beside.stages
    assert READIED not in first.phases
    for stage in later:
        start = stage.phases[f"{READIED}{PHASE_PART}start processes, load"]
        assert 0 < start <= stage.phases[READIED]


def test_a_stage_readied_beside_that_cannot_be_graded_says_so_in_its_own_turn(two_stages,
                                                                            monkeypatch):
    read_now = sessions.StageSession._read

    def refused(self):
        if self.stage.id == "fused_gelu":
            raise NotRun(Status.NOT_STARTED, "stage2_fused_gelu.py: every TODO is still open")
        return read_now(self)

    monkeypatch.setattr(sessions.StageSession, "_read", refused)
    monkeypatch.setattr(sessions, "readied_beside", lambda device: True)
    report = grading.grade(two_stages)
    first, second = report.stages
    assert first.status is Status.PASS
    assert second.status is Status.NOT_STARTED and "every TODO" in second.message


def test_settling_a_stage_readied_beside_waits_for_its_readying_and_its_builds(two_stages,
                                                                             monkeypatch):
    """What the stage before waits for before its speed is timed: the readying over (the
    child recorded and ended) and every build ahead done, none left running."""
    gate, order = threading.Event(), []
    start_now = sessions.StageSession._start

    def slow_start(self, todos):
        gate.wait(5)
        order.append("opened")
        return start_now(self, todos)

    monkeypatch.setattr(sessions.StageSession, "_start", slow_start)
    monkeypatch.setattr(sessions, "readied_beside", lambda device: True)
    monkeypatch.setattr(ReplayProcess, "settle_builds",
                        lambda self: order.append("builds settled"))
    session = sessions.StageSession(two_stages, two_stages.stages[1])
    session.ready_beside()
    threading.Timer(0.2, gate.set).start()
    session.settle()
    assert order == ["opened", "builds settled"] and not session.readying.is_alive()
    assert session.child is not None and not session.child.running  # the wrapper's process
    session.close()
    assert session.readying is None


@pytest.mark.parametrize("device, cores, readied", [("cpu", 16, False), ("cuda", 16, True),
                                                    ("cuda", 4, True), ("cuda", 2, False)])
def test_stages_are_readied_beside_each_other_only_on_a_gpu_with_cores_to_spare(
        monkeypatch, device, cores, readied):
    monkeypatch.setattr(sessions.os, "cpu_count", lambda: cores)
    assert sessions.readied_beside(device) is readied


def test_a_stage_is_timed_only_once_every_later_stage_settled(two_stages, monkeypatch):
    """The later stages are readied, in order, once the stage's own calls are recorded, and
    every one of them is settled (its builders done, its child ended) before the stage's
    first batch is timed."""
    order = []

    class Later:
        def __init__(self, name):
            self.name = name

        def ready_beside(self):
            order.append(("readied", self.name))

        def settle(self):
            order.append(("settled", self.name))

    def speed_check(self):
        order.append(("timed", self.stage.id))
        raise RuntimeError("the test stops here")

    monkeypatch.setattr(sessions.StageSession, "not_timed", lambda self, cases, checks=(): None)
    monkeypatch.setattr(sessions.StageSession, "speed_check", speed_check)
    first = sessions.StageSession(two_stages, two_stages.stages[0])
    result = grading.grade_session(first, None, [Later("second"), Later("third")])
    assert order == [("readied", "second"), ("readied", "third"), ("settled", "second"),
                     ("settled", "third"), ("timed", "vector_add")]
    assert result.status is Status.ERROR and "the test stops here" in result.message


def test_every_stage_is_judged_before_any_is_timed_and_settled_once_before_the_first(
        course, tmp_path, monkeypatch):
    """`grade` judges the correctness of every stage first (the later stages' cases run while
    their kernels are still being built), then settles every stage once, then times each
    stage to be timed, in order. A stage not to be timed is whole after its cases; the
    report, and the so-far file written as each stage becomes whole, list the stages in
    the request's order."""
    course = fewer_cases(course, 2)
    so_far = tmp_path / "so-far.json"
    request = GradingRequest(course, (course.select("vector_add"), course.select("fused_gelu"),
                                      course.select("softmax")), "triton-interpret",
                             solutions=True, seed=11, outputs=Outputs(so_far=so_far))
    order, written = [], []

    def not_timed(self, cases, checks=()):
        order.append(("judged", self.stage.id))
        return "not timed here" if self.stage.id == "fused_gelu" else None

    def speed_check(self):
        written.append([s["id"] for s in json.loads(so_far.read_text())["stages"]]
                       if so_far.exists() else [])
        order.append(("timed", self.stage.id))
        raise RuntimeError("the test stops here")

    settle = sessions.StageSession.settle
    monkeypatch.setattr(sessions.StageSession, "not_timed", not_timed)
    monkeypatch.setattr(sessions.StageSession, "speed_check", speed_check)
    monkeypatch.setattr(sessions.StageSession, "settle",
                        lambda self: order.append(("settled", self.stage.id)) or settle(self))
    shown = []

    @contextmanager
    def progress(label, cases):  # what a progress display is told, stage by stage
        shown.append((label, cases))
        yield None

    report = grading.grade(request.resolve(), progress)
    assert shown == [("stage1 vector_add [triton-interpret]", 2),
                     ("stage2 fused_gelu [triton-interpret]", 2),
                     ("stage3 softmax [triton-interpret]", 2),
                     ("stage1 vector_add [triton-interpret]: speed", 1),
                     ("stage3 softmax [triton-interpret]: speed", 3)]
    assert order == [("judged", "vector_add"), ("judged", "fused_gelu"), ("judged", "softmax"),
                     ("settled", "vector_add"), ("settled", "softmax"),
                     ("timed", "vector_add"), ("timed", "softmax")]
    assert written == [["fused_gelu"], ["vector_add", "fused_gelu"]]
    assert [s.id for s in report.stages] == ["vector_add", "fused_gelu", "softmax"]
    first, second, third = report.stages
    assert second.status is Status.PASS and not second.speed.graded
    for timed in (first, third):  # a stage that broke while timed is an ERROR of its own
        assert timed.status is Status.ERROR and "the test stops here" in timed.message
        assert len(timed.cases) == 2 and all(c.passed for c in timed.cases)
    assert [s["id"] for s in json.loads(so_far.read_text())["stages"]] == \
        ["vector_add", "fused_gelu", "softmax"]
    assert all(s.seconds >= sum(v for k, v in s.phases.items() if " / " not in k) - 0.05
               for s in report.stages)


@pytest.mark.parametrize("device, inside", [("cuda", 1), ("cpu", None)])
def test_on_a_gpu_the_grader_works_on_one_thread_beside_its_builders(device, inside):
    """Builders compile on the cores beside the grader; PyTorch's threads that wait for a
    core a builder holds spin (grader.grading.session.grader_threads). A CPU backend builds
    nothing: its threads are left as they are."""
    before = torch.get_num_threads()
    with sessions.grader_threads(device):
        assert torch.get_num_threads() == (before if inside is None else inside)
    assert torch.get_num_threads() == before


def test_a_grading_runs_under_the_threads_of_its_backend(three_stages, monkeypatch):
    entered = []

    @contextmanager
    def threads(device):
        entered.append(device)
        yield

    monkeypatch.setattr(grading, "grader_threads", threads)
    grading.grade(three_stages)
    grading.grade_stage(three_stages, three_stages.stages[0])
    assert entered == ["cpu", "cpu"]
