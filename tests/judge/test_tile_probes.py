"""Experiments on the tiles a kernel loops over: the probe whose value the case's launch gives
(N within one key tile of the BLOCK_N it was launched with), and the guard that lets it speak
only where the tiles are what it changes."""

import torch

from grader.course import FromLaunch, Hypothesis
from grader.judge import experiments
from grader.problems import Call
from grader.problems.evidence import Evidence, across_tiles

ONE_TILE = Hypothesis("across_tiles", "{tiles} tiles of {tile}", experiment="several",
                      probe=(("K", FromLaunch(("BLOCK_K", "TILE_K"), 1)),))
SEVERAL = {"several": lambda ev: across_tiles(ev, ev.call.args[0].shape[1],
                                              ("BLOCK_K", "TILE_K"), "K")}


def matmul_evidence(got, want, constants, k=70):
    a = torch.ones(want.shape[0], k)
    return Evidence(got, want, Call((a, torch.ones(k, want.shape[1]))), torch.float32,
                    1e-4, 1e-4, constants)


def test_a_probe_value_from_the_launch_is_resolved_per_case_and_said_with_its_source():
    asked = []

    def probe(changes):
        asked.append(changes)
        return "K = 31, float32"

    want = torch.ones(4, 3)
    found = experiments.confirmed(matmul_evidence(2 * want, want, {"TILE_K": 32}), [ONE_TILE],
                                  SEVERAL, probe)
    assert asked == [{"K": 31}]
    assert [c.key for c in found] == ["across_tiles"] and found[0].text == "3 tiles of 32"
    assert "your kernel replayed with K = 31 (TILE_K - 1) (K = 31, float32) is right" in \
        found[0].experiment
    assert experiments.shown({"K": 31, "layout": "sliced"}, {"K": "BLOCK_K - 1"}) == \
        "K = 31 (BLOCK_K - 1), layout = sliced"


def test_a_probe_whose_launch_value_is_unknown_is_not_run_and_names_nothing():
    asked = []
    want = torch.ones(4, 3)
    # launched with no K tile the probe names, or one of 1 (K = 0 is no case): no value
    for constants in ({"BLOCK_M": 32}, {"BLOCK_K": 1}):
        assert experiments.resolved(ONE_TILE.probe, constants) == (None, {})
    ev = matmul_evidence(2 * want, want, {"BLOCK_M": 32})
    assert experiments.confirmed(ev, [ONE_TILE], SEVERAL,
                                 lambda changes: asked.append(changes) or "ran") == []
    assert asked == []


def test_the_experiment_behind_a_one_tile_probe_holds_only_where_tiles_are_what_it_changes():
    want = torch.ones(4, 3)
    several = matmul_evidence(2 * want, want, {"BLOCK_K": 32})
    assert across_tiles(several, 70, ("BLOCK_K",), "K").facts == {"tile": 32, "tiles": 3}
    assert across_tiles(several, 32, ("BLOCK_K",), "K") is None  # one tile: nothing to tell
    assert across_tiles(several, 70, ("TILE_K",), "K") is None  # no such launch constant
    overflowed = matmul_evidence(torch.full((4, 3), torch.inf), want, {"BLOCK_K": 32})
    assert across_tiles(overflowed, 70, ("BLOCK_K",), "K") is None  # a shorter K overflows less
    rounded = 1.0 * want
    rounded[0, :2] = 1.5  # a few elements wrong: rounding a shorter K would hide too
    assert across_tiles(matmul_evidence(rounded, want, {"BLOCK_K": 32}), 70,
                        ("BLOCK_K",), "K") is None
    zeros = torch.zeros(4, 3)
    assert across_tiles(matmul_evidence(zeros, want, {"BLOCK_K": 32}), 70,
                        ("BLOCK_K",), "K") is None  # rows of zeros are only observed
