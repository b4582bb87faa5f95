"""Stage problem: gelu(x * weight + bias) (tanh form), weight and bias broadcast over rows.
The least traffic: x read and the result written once (2MN), weight and bias once (2N).
The lesson promises that any layout of x works (the kernel follows its strides): `layout`
draws x transposed or sliced."""

import torch.nn.functional as F

from grader.problems.base import (Call, Param, Problem, Work, compiled, element_size, in_f32,
                                  layout_check, layout_param, randn, randn_2d)


def _gelu_bias(x, w, b):
    return F.gelu(x * w + b, approximate="tanh")


def _call(p, dtype, gen):
    m, n = p["M"], p["N"]
    x = randn_2d(m, n, p["layout"], dtype, gen)
    return Call((x, randn(n, dtype, gen), randn(n, dtype, gen)))


PROBLEM = Problem(
    id="fused_gelu",
    function="fused_gelu",
    signature="fused_gelu(x, weight, bias) -> Tensor",
    params=(Param("M", int, doc="rows of x"), Param("N", int, doc="columns of x"), layout_param()),
    make_call=_call,
    reference=lambda call: _gelu_bias(*in_f32(call).args),  # the baseline's ops, in float32
    work=lambda p, dt: Work((2 * p["M"] * p["N"] + 2 * p["N"]) * element_size(dt)),
    baselines={"torch": lambda c: _gelu_bias(*c.args), "torch.compile": compiled(_gelu_bias)},
    check=layout_check(("M", "N")),
)
