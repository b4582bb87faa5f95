"""Slips in a formula (GELU's parts, softmax's online sum), each computed here as a kernel
writes it: on the course's own cases only that slip's hypothesis holds, so a cause is named
for the slip made and for no other."""

import math

import pytest
import torch

from grader.problems.evidence import Evidence, experiment

LOG2E = 1.4426950408889634


def _gelu(z, constant=math.sqrt(2 / math.pi), cube=True, factor=2.0, half=0.5):
    """GELU_tanh(z) with a part of it written otherwise: the sigmoid form z / (1 +
    exp(-factor u)), or where `half` is not 0.5, the tanh form half z (1 + tanh(u))."""
    u = constant * (z + 0.044715 * z * z * (z if cube else 1.0))
    if half != 0.5:
        return half * z * (1.0 + torch.tanh(u))
    return z / (1.0 + torch.exp2(u * (-factor * LOG2E)))


GELU_SLIPS = {  # the experiment that must hold: z from (x, weight, bias), GELU of it
    "z_squared": lambda x, w, b: _gelu(x * w + b, cube=False),
    "sqrt_two_pi": lambda x, w, b: _gelu(x * w + b, constant=math.sqrt(2 * math.pi)),
    "weight_and_bias_swapped": lambda x, w, b: _gelu(x * b + w),
    "sigmoid_of_u": lambda x, w, b: _gelu(x * w + b, factor=1.0),
    "twice_gelu": lambda x, w, b: _gelu(x * w + b, half=1.0),
}


def _holding(stage, ev: Evidence) -> set[str]:
    """The stage's experiments whose findings hold on `ev` (a probe's replay aside)."""
    return {h.experiment for h in stage.hypotheses if h.experiment and
            any(f.holds(ev) for f in experiment(stage.problem.experiments[h.experiment])
                .findings(ev))}


def _cases(stage):
    """The stage's cases but its largest (256 x 1024): the smaller ones hold the same
    kinds of inputs, and each experiment tried on a quarter of a million elements is slow."""
    return [c for c in stage.cases if c.params["M"] * c.params["N"] <= 20000]


def _evidence(stage, case, got_from, constants=None) -> Evidence:
    call = stage.problem.draw(case.params, case.dtype, case.seed)
    tolerance = stage.tolerance[case.dtype]
    # computed in float32, stored in the case's dtype
    got = got_from(*(t.float() for t in call.args)).to(call.args[0].dtype).float()
    return Evidence(got, stage.problem.reference(call), call, getattr(torch, case.dtype),
                    tolerance.atol, tolerance.rtol, constants or {})


@pytest.mark.parametrize("slip", list(GELU_SLIPS))
def test_a_slip_in_gelus_formula_confirms_its_own_hypothesis_and_no_other(slip, course):
    stage = course.select("fused_gelu")
    for case in _cases(stage):
        ev = _evidence(stage, case, GELU_SLIPS[slip])
        if ev.got.numel() == 1:  # one element cannot tell one slip from another: none named
            assert not _holding(stage, ev) & set(GELU_SLIPS), (slip, case.params)
        elif ev.bad.any():
            assert _holding(stage, ev) == {slip}, (slip, case.params)


def _sum_against_old_max(x, tile):
    """The online softmax with each tile's exp summed against the max before it (as a
    kernel loops: lanes past the row padded with -inf)."""
    m, total = torch.full((x.shape[0], 1), -torch.inf), torch.zeros(x.shape[0], 1)
    for start in range(0, x.shape[1], tile):
        part = x[:, start:start + tile]
        part = torch.nn.functional.pad(part, (0, tile - part.shape[1]), value=-torch.inf)
        new = torch.maximum(m, part.amax(-1, keepdim=True))
        total = total * torch.exp2((m - new) * LOG2E) + \
            torch.exp2((part - m) * LOG2E).sum(-1, keepdim=True)
        m = new
    return torch.exp2((x - m) * LOG2E) / total


def test_a_tile_summed_against_the_old_max_confirms_its_own_hypothesis_and_no_other(course):
    """Every element 0 where the first tile is whole; NaN where it is padded, which confirms
    nothing (no finite element to match). The tile is the plain kernels' (at most 1024)."""
    stage = course.select("softmax")
    named = 0
    for case in stage.cases:
        tile = min(1 << (case.params["N"] - 1).bit_length(), 1024)
        ev = _evidence(stage, case, lambda x: _sum_against_old_max(x, tile), {"BLOCK_N": tile})
        holding = _holding(stage, ev)
        assert holding <= {"tile_sum_against_old_max"}, case.params
        wrong = bool(ev.bad.any())  # a bfloat16 row of 5000 zeros is within its atol
        assert bool(holding) == (wrong and bool(torch.isfinite(ev.got).all())), case.params
        named += bool(holding)
    assert named >= 5
