"""A stage's proposals compiled ahead on a GPU (grader.sandbox.ahead, through
ReplayProcess.build_ahead): side by side, each proposal once, by builders that take the
next one queued once loaded and free; a case takes its binaries from there, and builds
again itself whatever failed or was never taken there; the builders are all gone once the
replay is closed. The builders here are stand-ins: what is
tested is the bookkeeping, not compiling."""

import threading
import time

import pytest

from grader.replay.binaries import proposal_key
from grader.sandbox import ahead, replayer
from grader.sandbox.confined import Failed
from grader.results import Failure


class FakeBuilder:
    made: list["FakeBuilder"] = []
    slow = threading.Event()  # set: each build waits until it is cleared
    held = threading.Event()  # set: a proposal with "hold" waits until it is cleared
    load_seconds = 0.0  # how long a builder takes to load
    loads_fail = False
    alive, most_alive = 0, 0  # builders started and not ended, now and at most

    def __init__(self, *args):
        self.built, self.retired, self.closed, self.spawned = [], False, False, False
        self.loaded = False
        FakeBuilder.made.append(self)

    def spawn(self):
        if not self.running:
            FakeBuilder.alive += 1
            FakeBuilder.most_alive = max(FakeBuilder.most_alive, FakeBuilder.alive)
        self.spawned, self.closed = True, False

    def load(self):
        if not self.running:
            self.spawn()  # as a process's load starts it
        if FakeBuilder.loads_fail:
            raise replayer.SubmissionError("loading stage.py crashed: stand-in")
        if not self.loaded:
            time.sleep(FakeBuilder.load_seconds)
            self.loaded = True

    @property
    def running(self):
        return self.spawned and not self.closed

    def build(self, problem_id, params, dtype, seed, proposal):
        if self.retired:
            raise Failed(Failure.CRASHED, "ended")
        while FakeBuilder.slow.is_set() and not self.retired:
            time.sleep(0.01)
        while proposal.get("hold") and FakeBuilder.held.is_set() and not self.retired:
            time.sleep(0.01)
        if self.retired:
            raise Failed(Failure.CRASHED, "ended")
        if proposal.get("broken"):
            raise Failed(Failure.TIMED_OUT, "timed out")
        self.built.append(proposal["n"])
        return f"binaries of {proposal['n']}"

    def output(self):
        return f"[builder {FakeBuilder.made.index(self)}]"

    def retire(self):
        self.retired = True

    def close(self):
        if self.running:
            FakeBuilder.alive -= 1
        self.closed = True


@pytest.fixture
def replay(monkeypatch, tmp_path):
    FakeBuilder.made = []
    FakeBuilder.slow.clear()
    FakeBuilder.held.clear()
    monkeypatch.setattr(FakeBuilder, "load_seconds", 0.0)
    monkeypatch.setattr(FakeBuilder, "loads_fail", False)
    monkeypatch.setattr(replayer, "BuilderProcess", FakeBuilder)
    monkeypatch.setattr(ahead, "AHEAD_BUILDERS", 3)
    monkeypatch.setattr(ahead, "CORES", ahead.Cores(8))
    FakeBuilder.alive = FakeBuilder.most_alive = 0
    process = replayer.ReplayProcess(tmp_path / "stage.py", "f", "cuda", timeout=5.0)
    yield process
    FakeBuilder.slow.clear()
    FakeBuilder.held.clear()
    process._builds.stop()


def _builds(*ns, broken=(), held=()):
    return [ahead.Build("softmax", {"n": n}, "float32", n, _proposal(n, broken, held))
            for n in ns]


def _proposal(n, broken=(), held=()):
    return {"n": n, **({"broken": True} if n in broken else {}),
            **({"hold": True} if n in held else {})}


def _ahead(replay, key):
    """What a case's replay would take from the builds begun ahead (no waiting past 5 s)."""
    return replay._builds.ahead(key, 5.0)


def test_proposals_are_compiled_once_each_by_builders_side_by_side(replay):
    FakeBuilder.slow.set()  # every builder finds a build left for it
    replay.build_ahead(_builds(1, 2, 3, 4, 5, 1, 2))  # two cases share a proposal
    time.sleep(0.2)
    FakeBuilder.slow.clear()
    keys = [proposal_key({"n": n}) for n in (1, 2, 3, 4, 5)]
    assert [_ahead(replay, k) for k in keys] == [f"binaries of {n}" for n in range(1, 6)]
    assert len(FakeBuilder.made) == 3 and all(b.spawned for b in FakeBuilder.made)
    assert sorted(n for b in FakeBuilder.made for n in b.built) == [1, 2, 3, 4, 5]
    assert all(b.built == sorted(b.built) for b in FakeBuilder.made)  # taken in case order
    replay.build_ahead(_builds(1, 6))  # later: only what is new
    assert _ahead(replay, proposal_key({"n": 6})) == "binaries of 6"
    assert len(FakeBuilder.made) == 4  # a builder for it (one still serving may take it)
    assert [n for b in FakeBuilder.made for n in b.built].count(6) == 1
    replay.close()
    assert all(b.closed for b in FakeBuilder.made)
    assert "[builder 0]" in replay.output()  # what the builders printed is the stage's


def test_the_first_builder_ahead_starts_with_the_stage_and_builds_the_first_case(replay):
    """The stage's first processes start one builder, which loads while the child records
    the stage's calls and then takes the first case's build (the others are still loading);
    started again later (a crash, a hidden case), the processes start the replay's own
    builder instead, for what was not built ahead."""
    FakeBuilder.load_seconds = 0.2
    replay._builds.spawn()  # as ReplayProcess.spawn does on a GPU
    first, = FakeBuilder.made
    first.loaded = True  # it loaded while the child recorded the calls
    FakeBuilder.slow.set()
    replay.build_ahead(_builds(1, 2, 3, 4))
    time.sleep(0.4)  # the others loaded, and each took a build
    FakeBuilder.slow.clear()
    for n in (1, 2, 3, 4):
        assert _ahead(replay, proposal_key({"n": n})) == f"binaries of {n}"
    assert first.built[0] == 1 and len(FakeBuilder.made) == 3
    replay.close()
    replay._builds.spawn()
    assert len(FakeBuilder.made) == 4 and FakeBuilder.made[3] is replay._builds.own
    assert replay._builds.own.running and replay._builds.own.built == []


def test_a_free_builder_takes_the_next_build_rather_than_wait_behind_a_slow_one(replay):
    """One queue, in case order: while one builder is held by a slow compile, the others
    build everything after it (a share fixed in advance would keep some of it waiting)."""
    FakeBuilder.held.set()
    replay.build_ahead(_builds(1, 2, 3, 4, 5, 6, 7, held=(2,)))
    for n in (1, 3, 4, 5, 6, 7):
        assert _ahead(replay, proposal_key(_proposal(n))) == f"binaries of {n}"
    assert sorted(n for b in FakeBuilder.made for n in b.built) == [1, 3, 4, 5, 6, 7]
    FakeBuilder.held.clear()
    assert _ahead(replay, proposal_key(_proposal(2, held=(2,)))) == "binaries of 2"


def test_builds_nobody_can_take_are_left_to_their_cases_at_once(replay):
    """Builders that cannot load leave their builds queued; the last to leave cancels
    them, so that a case builds its own at once rather than wait out a time limit."""
    FakeBuilder.loads_fail = True
    replay.build_ahead(_builds(1, 2, 3, 4))
    start = time.monotonic()
    assert _ahead(replay, proposal_key({"n": 4})) is None
    assert time.monotonic() - start < 2.0 and not replay._builds.queue
    assert all(b.closed for b in FakeBuilder.made)


def test_a_build_that_failed_ahead_is_built_again_by_its_case(replay):
    replay.build_ahead(_builds(1, 2, broken=(2,)))
    assert _ahead(replay, proposal_key({"n": 1})) == "binaries of 1"
    assert _ahead(replay, proposal_key({"n": 2, "broken": True})) is None
    assert _ahead(replay, proposal_key({"n": 9})) is None  # never asked ahead


def test_closing_the_replay_ends_every_builder_and_thread_even_mid_build(replay):
    FakeBuilder.slow.set()
    replay.build_ahead(_builds(1, 2, 3, 4, 5, 6))
    time.sleep(0.1)
    replay.close()  # as ReplayProcess.close does
    assert all(b.retired and b.closed for b in FakeBuilder.made)
    assert not replay._builds.threads
    assert not any(t.name == "tilecourse-build-ahead" for t in threading.enumerate())
    # what never began is not waited for: its case builds it itself
    assert _ahead(replay, proposal_key({"n": 6})) is None


def test_on_a_cpu_nothing_is_built_ahead(tmp_path, monkeypatch):
    monkeypatch.setattr(replayer, "BuilderProcess", FakeBuilder)
    FakeBuilder.made = []
    process = replayer.ReplayProcess(tmp_path / "stage.py", "f", "cpu", timeout=5.0)
    process.build_ahead(_builds(1, 2))
    assert FakeBuilder.made == [] and process._builds.builds == {}


def test_builds_are_kept_for_a_later_process_but_none_made_after_a_hidden_case(replay,
                                                                              monkeypatch):
    """A replay process started again (after a hidden case, for the speed cases) installs
    what was built before rather than compile it again; what a builder made once a hidden
    case's inputs were given is never kept: it could carry them into a later process."""
    builds, installed = [], []
    monkeypatch.setattr(replay, "_loaded", True)
    monkeypatch.setattr(replay, "_process", object())
    monkeypatch.setattr(replay._builds, "own", FakeBuilder())
    monkeypatch.setattr(replay._builds.own, "build", lambda *a: builds.append(a[-1]["n"]) or
                        replayer.protocol.Message({"value": a[-1]["n"]}))
    monkeypatch.setattr(replay, "_ask", lambda op, *a, **k: installed.append(k["value"]))

    def install(n):
        replay._install("softmax", {}, "float32", 0, {"n": n})

    install(1)
    replay._installed_in = None  # a new process: it holds nothing yet
    install(1)
    assert builds == [1] and len(installed) == 2  # built once, installed in both
    replay._builds.hidden_given = True  # as withhold_output sets it
    install(2)
    replay._installed_in = None
    install(2)
    assert builds == [1, 2, 2]  # the hidden-time build was made again


# --- what a stage records ahead (grader.judge.stage.StageCheck.build_ahead) ---------------


class FakeChild:
    def __init__(self, failing_after: int | None = None):
        self.recorded, self.failing_after = [], failing_after
        self.replay_process = self
        self.builds = None

    def record_ahead(self, problem_id, params, dtype, seed):
        from grader.sandbox.outcomes import Proposed

        self.recorded.append((dict(params), dtype, seed))
        if self.failing_after is not None and len(self.recorded) > self.failing_after:
            return Proposed(error="it hung", failure=Failure.TIMED_OUT)
        launch = {"op": "launch", "language": "triton", "kernel": "k", "grid": [1]}
        return Proposed(proposal={"steps": [launch], "n": len(self.recorded)}, launches=1)

    def build_ahead(self, builds):
        self.builds = builds


def _stage_check(course, child, monkeypatch, device="cuda"):
    from types import SimpleNamespace

    from grader.judge import stage
    from grader.judge.stage import StageCheck

    # a GPU that has every dtype
    monkeypatch.setattr(stage, "dtype_unsupported", lambda dtype, device: None)

    backend = SimpleNamespace(device=device, track="triton", name="triton")
    selection = SimpleNamespace(backend=backend)
    return StageCheck(course.select("flash_attention"), selection, child, run_seed=77)


def test_a_stage_records_its_calls_ahead_in_order_and_compiles_them_meanwhile(course,
                                                                            monkeypatch):
    from grader.judge.stage import REPLAY_DRAW

    stage = course.select("flash_attention")
    assert stage.memory_growth and stage.speed  # the stage that has all three kinds
    child = FakeChild()
    _stage_check(course, child, monkeypatch).build_ahead()
    shown = [c for c in stage.cases if not c.hidden]
    memory = [stage.memory_growth.small, stage.memory_growth.large]
    expected = ([(dict(c.params), c.dtype, c.seed_in_run(77)) for c in shown]
                + [(dict(c.params), c.dtype, 77) for c in memory]
                + [(dict(c.params), c.dtype, c.seed_in_run(77)) for c in stage.speed.cases])
    assert child.recorded == expected  # each later `record` of these calls takes it
    assert len(child.builds) == len(expected)
    # a case's replay draws from another seed than its recorded call; the layout is the same
    assert child.builds[0].seed == shown[0].seed_in_run(77) ^ REPLAY_DRAW
    assert child.builds[-1].seed == stage.speed.cases[-1].seed_in_run(77)


def test_a_stage_readied_beside_another_keeps_its_recording_seconds_apart(course, monkeypatch):
    """grade --profile: recorded while an earlier stage was graded, the calls' seconds go to
    the phases the readying names, not to the stage's own cases."""
    check = _stage_check(course, FakeChild(), monkeypatch)
    beside: dict[str, float] = {}
    check.build_ahead(beside)
    assert "record the call" in beside and "record the call" not in check.phases
    own = _stage_check(course, FakeChild(), monkeypatch)
    own.build_ahead()
    assert "record the call" in own.phases


def test_recording_ahead_stops_at_a_call_that_gave_no_proposal(course, monkeypatch):
    child = FakeChild(failing_after=2)
    _stage_check(course, child, monkeypatch).build_ahead()
    assert len(child.recorded) == 3 and len(child.builds) == 2  # not one more time limit


def test_on_a_cpu_no_call_is_recorded_ahead(course, monkeypatch):
    child = FakeChild()
    _stage_check(course, child, monkeypatch, device="cpu").build_ahead()
    assert child.recorded == [] and child.builds is None


def test_a_call_recorded_ahead_is_taken_once_by_the_record_that_asks_for_it(tmp_path,
                                                                           monkeypatch):
    from grader.sandbox import ChildProcess

    child = ChildProcess(tmp_path / "stage.py", "f", "cpu")
    asked = []
    monkeypatch.setattr(child, "_ask", lambda op, *a, **k: asked.append(k) or (_ for _ in ()
                                                                              ).throw(
        Failed(Failure.CRASHED, "crashed: stand-in")))
    ahead = child.record_ahead("softmax", {"M": 2}, "float32", 5)
    assert len(asked) == 1
    assert child.record("softmax", {"M": 2}, "float32", 5) is ahead and len(asked) == 1
    child.record("softmax", {"M": 2}, "float32", 5)  # taken already: recorded again
    child.record("softmax", {"M": 3}, "float32", 5)  # another call
    assert len(asked) == 3


def test_settling_waits_for_the_builds_and_stops_what_outlasts_its_time(replay):
    """Before the stage before a readied one is timed: every build ahead done; one still
    compiling after the time given is stopped (its case builds it in its own turn), its
    builder ended, so that nothing draws inputs on the GPU beside the timing."""
    replay._builds.spawn()  # the builder started with the processes: nothing recorded yet
    first = replay._builds.first
    replay._builds.settle(1.0)  # a stage that recorded nothing: its idle builder ended too
    assert first.closed and replay._builds.first is None
    replay.build_ahead(_builds(1, 2, 3))
    replay._builds.settle(5.0)
    assert all(b.done() and not b.cancelled() for b in replay._builds.builds.values())
    assert not any(t.is_alive() for t in replay._builds.threads)
    FakeBuilder.held.set()
    replay.build_ahead(_builds(4, 5, held=(4,)))
    start = time.monotonic()
    replay._builds.settle(0.3)
    assert time.monotonic() - start < 3.0
    assert _ahead(replay, proposal_key({"n": 5})) == "binaries of 5"
    assert _ahead(replay, proposal_key(_proposal(4, held=(4,)))) is None  # its case builds it
    assert not replay._builds.threads and all(b.closed for b in FakeBuilder.made)


def test_builders_of_several_stages_share_the_cores_the_first_stage_first(replay, tmp_path,
                                                                          monkeypatch):
    """Every later stage builds ahead at once (grader.grading.session): their builders
    together never outnumber the cores given to building, and the stage that asked first
    (the one graded next) has its builders first."""
    monkeypatch.setattr(ahead, "CORES", ahead.Cores(2))
    later = replayer.ReplayProcess(tmp_path / "later.py", "f", "cuda", timeout=5.0)
    FakeBuilder.slow.set()
    replay.build_ahead(_builds(1, 2, 3, 4))
    time.sleep(0.1)
    later.build_ahead(_builds(5, 6, 7, 8))
    time.sleep(0.3)
    assert len(FakeBuilder.made) == 2  # the later stage's builders wait for a core
    FakeBuilder.slow.clear()
    for n in range(1, 9):
        ahead_of = replay if n < 5 else later
        assert _ahead(ahead_of, proposal_key({"n": n})) == f"binaries of {n}"
    assert FakeBuilder.most_alive == 2
    assert sorted(FakeBuilder.made[0].built + FakeBuilder.made[1].built)[:4] == [1, 2, 3, 4]
    later.close()
    assert ahead.CORES.free == 2  # every core given back


def test_a_stage_stopped_while_its_builders_wait_for_cores_gives_up_at_once(replay, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(ahead, "CORES", ahead.Cores(1))
    later = replayer.ReplayProcess(tmp_path / "later.py", "f", "cuda", timeout=5.0)
    FakeBuilder.slow.set()
    replay.build_ahead(_builds(1, 2))
    time.sleep(0.1)
    later.build_ahead(_builds(3, 4))
    start = time.monotonic()
    later.close()  # its threads were waiting for the one core
    assert time.monotonic() - start < 2.0 and not later._builds.threads
    assert _ahead(later, proposal_key({"n": 3})) is None  # its case builds it itself
    assert len(FakeBuilder.made) == 1
    FakeBuilder.slow.clear()
    assert _ahead(replay, proposal_key({"n": 2})) == "binaries of 2"


def test_cores_are_taken_in_the_order_asked():
    cores, order, never = ahead.Cores(1), [], threading.Event()
    assert cores.take_now() and not cores.take_now()

    def taker(name):
        assert cores.take(never)
        order.append(name)

    threads = [threading.Thread(target=taker, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    assert not cores.take_now()  # others wait: a core freed goes to them first
    cores.give()
    threads[0].join(2)
    assert order == ["first"]
    cores.give()
    threads[1].join(2)
    assert order == ["first", "second"] and cores.free == 0
    given_up = threading.Event()
    given_up.set()
    assert not cores.take(given_up)


def test_a_builder_ended_by_its_thread_and_by_its_stage_at_once_ends_once(tmp_path,
                                                                          monkeypatch):
    """A builder's own thread closes it as the stage stops its builders: both end the same
    process at once, one does, the other waits and finds it ended (it once raised in the
    stage's thread, failing the stage)."""
    from grader.sandbox import confined as processes_module
    from grader.sandbox.builder import BuilderProcess

    class SlowToDie:
        pid, ended = 2 ** 22 + 7, 0

        def poll(self):
            return None if not SlowToDie.ended else 0

        def send_signal(self, sig):
            time.sleep(0.2)

        def wait(self, timeout=None):
            SlowToDie.ended += 1
            return 0

    monkeypatch.setattr(processes_module.processes, "kill_group", lambda pid: None)
    builder = BuilderProcess(tmp_path / "stage.py", "f", "cuda")
    builder._process = SlowToDie()
    errors = []

    def end(how):
        try:
            how()
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=end, args=(how,))
               for how in (builder.close, builder.retire)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert errors == [] and SlowToDie.ended == 1 and builder._process is None
