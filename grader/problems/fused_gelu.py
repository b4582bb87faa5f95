"""Stage problem: gelu(x * weight + bias) (tanh form), weight and bias broadcast over rows.
The least traffic: x read and the result written once (2MN), weight and bias once (2N).
The lesson promises that any layout of x works (the kernel follows its strides): `layout`
draws x transposed or sliced, `scale` draws x large enough to reach GELU's extremes, and
`bias` = "zero" is the probe that tells a fault of the bias from every other."""

import math

import torch
import torch.nn.functional as F

from grader.problems.evidence import Evidence, Experiment, EvidenceFinding, observed
from grader.problems.base import (Call, Param, Problem, Work, compiled, element_size, in_f32,
                                  layout_check, layout_param, misread_strides, randn, randn_2d)


def _gelu_bias(x, w, b):
    return F.gelu(x * w + b, approximate="tanh")


def _call(p, dtype, gen):
    m, n = p["M"], p["N"]
    x = randn_2d(m, n, p["layout"], dtype, gen, p["scale"])
    weight, bias = randn(n, dtype, gen), randn(n, dtype, gen)  # drawn alike either way
    return Call((x, weight, bias.zero_() if p["bias"] == "zero" else bias))


# --- experiments: the course's hypotheses name them (course.toml) -------------------------

def _inputs(ev: Evidence):
    return tuple(t.float() for t in ev.call.args)


def _recompute(mistake):
    """A recompute of the case's inputs in float32 through `mistake(x, weight, bias)`."""
    def recompute(ev: Evidence) -> torch.Tensor | None:
        return None if ev.call is None else mistake(*_inputs(ev))
    return recompute


# A slip in GELU's formula is told from another only on many elements: one alone (the 1 x 1
# case) can sit where two slips' outputs agree within the tolerance (z^2 for z^3 there gave
# what a bias left out gives).
FEWEST = 8


def _formula(slip):
    """A recompute through `slip(x, weight, bias)`, a slip in GELU's formula, on a case of
    FEWEST elements or more."""
    def recompute(ev: Evidence) -> torch.Tensor | None:
        return None if ev.call is None or ev.got.numel() < FEWEST else slip(*_inputs(ev))
    return recompute


def _x_misread(ev: Evidence):
    """x read with other strides than its own: row-major contiguous, or its own swapped."""
    if ev.call is None:
        return
    x, w, b = ev.call.args
    for strides in _misread(x):
        seen = x.as_strided(x.shape, strides, x.storage_offset()).float()
        yield EvidenceFinding(_gelu_bias(seen, w.float(), b.float()),
                      {"strides": strides, "own": tuple(x.stride())})


# sqrt(2/pi), the constant of GELU's tanh form; its slip sqrt(2*pi) is pi times larger.
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _gelu_slipped(z: torch.Tensor, constant: float = SQRT_2_OVER_PI, power: int = 3,
                  factor: float = 2.0) -> torch.Tensor:
    """GELU_tanh(z) = z * sigmoid(2u), u = sqrt(2/pi) (z + 0.044715 z^3), with one of its
    parts written otherwise: the constant, the power of z, the factor of u in the sigmoid.
    torch.sigmoid is finite at the extremes, as the lesson's 1 / (1 + exp(-2u)) is."""
    u = constant * (z + 0.044715 * z ** power)
    return z * torch.sigmoid(factor * u)


def _sigmoid_overflowing(z: torch.Tensor) -> torch.Tensor:
    """GELU_tanh(z) in float32 as z * e / (1 + e) with e = exp(2u): NaN where e overflows."""
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    e = torch.exp(2 * u)
    return z * e / (1 + e)


def _bias_by_row(ev: Evidence) -> torch.Tensor | None:
    """The bias indexed by the row, not the column: row i adds bias[i] (a case with no more
    rows than columns; the first bias element where there is one row)."""
    if ev.call is None:
        return None
    x, w, b = (t.float() for t in ev.call.args)
    m, n = x.shape
    if m > n or m == n == 1:
        return None
    return _gelu_bias(x, w, b[:m, None])


def _bias_across_tile(ev: Evidence) -> torch.Tensor | None:
    """The tile's slice of the bias broadcast down the columns instead of along the rows:
    element (i, j) adds the bias of the tile's column i (square tiles; 0 past the end)."""
    rows, cols = ev.constant("BLOCK_M", "TILE_M"), ev.constant("BLOCK_N", "TILE_N")
    if ev.call is None or not rows or rows != cols:
        return None
    x, w, b = (t.float() for t in ev.call.args)
    m, n = x.shape
    i, j = torch.arange(m)[:, None], torch.arange(n)[None, :]
    index = j // cols * cols + i % rows
    bias = torch.where(index < n, b[index.clamp(max=n - 1)], torch.zeros(()))
    return _gelu_bias(x, w, bias)


def _misread(x: torch.Tensor) -> list[tuple[int, int]]:
    """Strides a kernel may wrongly use for x: row-major contiguous, x's own swapped, or one
    of its own left out (taken as 1: an offset not scaled by its stride)."""
    return misread_strides(x, [(x.shape[1], 1), (x.stride(1), x.stride(0)), (x.stride(0), 1),
                               (1, x.stride(1))])


PROBLEM = Problem(
    id="fused_gelu",
    function="fused_gelu",
    signature="fused_gelu(x, weight, bias) -> Tensor",
    params=(Param("M", int, doc="rows of x"), Param("N", int, doc="columns of x"), layout_param(),
            # Large x reaches GELU's extremes, where exp(-2u) overflows: the lesson promises
            # the result is still right there (0 for very negative u, z for very positive).
            Param("scale", float, 1.0, doc="standard deviation of x"),
            # A probe (course.toml's hypotheses): with a zero bias, a kernel whose only fault
            # is how it adds the bias gives the right output, and the fault is confirmed.
            Param("bias", str, "random", doc="the bias: drawn at random, or all zeros",
                  choices=("random", "zero"))),
    make_call=_call,
    reference=lambda call: _gelu_bias(*in_f32(call).args),  # the baseline's ops, in float32
    work=lambda p, dt: Work((2 * p["M"] * p["N"] + 2 * p["N"]) * element_size(dt)),
    baselines={"torch": lambda c: _gelu_bias(*c.args), "torch.compile": compiled(_gelu_bias)},
    check=layout_check(("M", "N")),
    explain=observed,
    experiments={"bias_by_row": _bias_by_row, "bias_across_tile": _bias_across_tile,
                 "bias_left_out": _recompute(
                     lambda x, w, b: _gelu_bias(x, w, torch.zeros_like(b))),
                 "weight_left_out": _recompute(
                     lambda x, w, b: _gelu_bias(x, torch.ones_like(w), b)),
                 "weight_and_bias_swapped": _formula(lambda x, w, b: _gelu_bias(x, b, w)),
                 "sigmoid_overflowing": _recompute(lambda x, w, b: _sigmoid_overflowing(x * w + b)),
                 "z_squared": _formula(lambda x, w, b: _gelu_slipped(x * w + b, power=2)),
                 "sqrt_two_pi": _formula(
                     lambda x, w, b: _gelu_slipped(x * w + b, constant=math.sqrt(2 * math.pi))),
                 "sigmoid_of_u": _formula(lambda x, w, b: _gelu_slipped(x * w + b, factor=1.0)),
                 "twice_gelu": _formula(lambda x, w, b: 2 * _gelu_bias(x, w, b)),
                 "x_misread": Experiment(_x_misread, ("strides", "own"))},
)
