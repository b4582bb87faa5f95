"""Each timed call's tensors lie somewhere else in GPU memory (grader.placement), so that a
trial's median is not the figure of one placement of its tensors."""

from __future__ import annotations

import pytest
import torch

from grader import placement, timing
from grader.problems import PROBLEMS
from grader.sandbox.outcomes import Batch
from grader.sandbox.replayer import ReplayWorker
from grader.speed import trial as trial_module
from grader.speed.trial import TimedCase, Trial


def test_spacers_come_from_the_large_pool_in_its_steps_and_vary():
    place = placement.Placements("cpu")
    sizes = [place().numel() for _ in range(50)]
    assert all(placement.PLACEMENT_MIN <= s <= placement.PLACEMENT_MIN + placement.PLACEMENT_SPREAD
               for s in sizes)
    assert all(s % placement.PLACEMENT_STEP == 0 for s in sizes)
    assert len(set(sizes)) > 40  # a repeated size would put inputs back where they were


def test_a_move_gives_the_cache_back_then_takes_a_ballast_of_whole_pages(monkeypatch):
    steps = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: steps.append("empty cache"))
    real_empty = torch.empty

    def empty(size, dtype, device):  # a GPU's allocation, made on the CPU here
        steps.append(f"ballast {size >> 21} pages")
        return real_empty(size, dtype=dtype)

    monkeypatch.setattr(torch, "empty", empty)
    place = placement.Placements("cuda")
    place.random.randrange = lambda n: n - 1  # the largest ballast
    place.move()
    assert steps == ["empty cache", f"ballast {placement.BALLAST_PAGES} pages"]
    assert place.ballast.numel() == placement.BALLAST_PAGES << 21
    steps.clear()
    placement.Placements("cpu").move()  # nothing to move on a CPU
    assert steps == []


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


def test_both_sides_of_a_trial_move_their_tensors(monkeypatch):
    """The baseline's batches in the grader and the replay's in its process alike, so that
    neither side times one placement while the other averages over many."""
    given, moved = [], []
    monkeypatch.setattr(timing, "run_batch", lambda prepare, call, count, flush, place:
                        given.append(place) or ([], []))
    monkeypatch.setattr(timing, "synchronize", lambda: None)
    monkeypatch.setattr(timing, "L2Flush", lambda device: (lambda: None))
    monkeypatch.setattr(placement.Placements, "move", lambda self: moved.append(self))
    trial = Trial.__new__(Trial)
    trial.device, trial.baseline, trial.problem = "cpu", None, None
    trial.placements = placement.Placements("cpu")
    trial.baseline_batch([], key=3)
    worker = ReplayWorker.__new__(ReplayWorker)
    worker.device, worker.between, worker.kept = "cpu", None, []
    worker.time_batch("vector_add", {}, "float32", [], 1, {})
    assert moved == []  # a batch moves nothing unless asked
    worker.time_batch("vector_add", {}, "float32", [], 1, {}, move=True)
    assert given[0] is trial.placements and type(given[1]) is placement.Placements
    assert moved == [given[1]]


@pytest.mark.parametrize("counted, every", [(5, 2), (8, 2), (5, 1), (8, 0)])
def test_a_trial_moves_both_sides_memory_every_few_counted_batches(monkeypatch, counted,
                                                                   every):
    """The first batch on each side follows a move, and every MOVE_EVERY counted batches
    another (0: none after the first); a batch after a move is not counted, on either
    side."""
    order = []

    class Replay:
        def time_batch(self, problem_id, params, dtype, seeds, key, proposal, move=False):
            order.append("replay moved" if move else "replay")
            return Batch([0.01] * len(seeds), [None] * len(seeds), 0.01 * len(seeds))

    monkeypatch.setattr(Trial, "replay_process", Replay())
    monkeypatch.setattr(Trial, "baseline_batch", lambda self, seeds, key: (
        order.append("baseline") or [0.02] * len(seeds), 0.02 * len(seeds)))
    monkeypatch.setattr(Trial, "_check_one", lambda self, *args: None)
    monkeypatch.setattr(placement.Placements, "move", lambda self: order.append("moved here"))
    monkeypatch.setattr(trial_module, "MIN_BATCHES", counted)
    monkeypatch.setattr(trial_module, "MOVE_EVERY", every)
    monkeypatch.setattr(trial_module, "precise", lambda student, baseline: True)
    problem = PROBLEMS["vector_add"]
    case = TimedCase(problem, {"n": 100}, "float32", problem.baselines["torch"], None, "cpu")
    trial = Trial(case, None, timing.Budget())
    trial.proposal = {}
    result = trial._batches(trial_module.TrialResult(), 400)
    assert len(result.student) == counted
    moves = 1 + ((counted - 1) // every if every else 0)
    assert order.count("moved here") == order.count("replay moved") == moves
    assert order[:3] == ["moved here", "baseline", "replay moved"]
    assert order.count("replay") == counted  # the batches after a move are not among them
    pairs = [order[i:i + 2] for i in range(len(order)) if order[i] == "moved here"]
    assert all(p == ["moved here", "baseline"] for p in pairs)
