"""Each timed call's inputs lie somewhere else in GPU memory (grader.timing.Placements), so
that a trial's median is not the figure of one placement of its inputs."""

from __future__ import annotations

import torch

from grader import timing
from grader.sandbox.replayer import ReplayWorker
from grader.speed.trial import Trial


def test_spacers_come_from_the_large_pool_in_its_steps_and_vary():
    place = timing.Placements("cpu")
    sizes = [place().numel() for _ in range(50)]
    assert all(timing.PLACEMENT_MIN <= s <= timing.PLACEMENT_MIN + timing.PLACEMENT_SPREAD
               for s in sizes)
    assert all(s % timing.PLACEMENT_STEP == 0 for s in sizes)
    assert len(set(sizes)) > 40  # a repeated size would put inputs back where they were


def test_each_call_is_drawn_after_its_own_spacer_which_lives_until_it_has_run(monkeypatch):
    events, alive = [], set()

    class Spacer:
        count = 0

        def __init__(self):
            Spacer.count += 1
            self.number = Spacer.count
            alive.add(self.number)
            events.append(f"place {self.number}")

        def __del__(self):
            alive.discard(self.number)

    class Event:
        def __init__(self, enable_timing):
            pass

        def record(self):
            pass

    monkeypatch.setattr(timing, "_Event", Event)
    monkeypatch.setattr(timing, "_synchronize", lambda: None)
    monkeypatch.setattr(timing, "_sleep", lambda cycles: None)
    monkeypatch.setattr(timing, "_elapsed_time", lambda start, end: 1.0)

    def prepare(i):
        events.append(f"draw {i}")
        return i

    def call(i):
        assert i + 1 in alive, "the call's spacer was freed before the call ran"
        events.append(f"call {i}")

    times, _ = timing.run_batch(prepare, call, 3, lambda: None, Spacer)
    assert times == [1.0] * 3
    assert events == ["place 1", "draw 0", "call 0", "place 2", "draw 1", "call 1",
                      "place 3", "draw 2", "call 2"]


def test_both_sides_of_a_trial_move_their_inputs(monkeypatch):
    """The baseline's batches in the grader and the replay's in its process alike, so that
    neither side times one placement while the other averages over many."""
    given = []
    monkeypatch.setattr(timing, "run_batch", lambda prepare, call, count, flush, place:
                        given.append(place) or ([], []))
    monkeypatch.setattr(timing, "synchronize", lambda: None)
    monkeypatch.setattr(timing, "L2Flush", lambda device: (lambda: None))
    trial = Trial.__new__(Trial)
    trial.device, trial.baseline, trial.problem = "cpu", None, None
    trial.baseline_batch([], key=3)
    worker = ReplayWorker.__new__(ReplayWorker)
    worker.device, worker.between, worker.kept = "cpu", None, []
    worker.time_batch("vector_add", {}, "float32", [], 1, {})
    assert [type(p) for p in given] == [timing.Placements, timing.Placements]
    assert isinstance(given[0](), torch.Tensor)
