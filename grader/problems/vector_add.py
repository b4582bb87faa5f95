"""Stage problem: z = x + y, elementwise. One read of each input, one write: 3n elements."""

import torch

from grader.problems.base import Call, Param, Problem, Work, element_size, f32, randn


def _call(p, dtype, gen):
    return Call((randn(p["n"], dtype, gen), randn(p["n"], dtype, gen)))


def _reference(call):
    x, y = call.args
    return f32(x) + f32(y)


PROBLEM = Problem(
    id="vector_add",
    function="vector_add",
    signature="vector_add(x, y) -> Tensor",
    params=(Param("n", int, doc="length of x and y"),),
    make_call=_call,
    reference=_reference,
    work=lambda p, dt: Work(3 * p["n"] * element_size(dt)),
    baselines={"torch": lambda c: torch.add(*c.args)},
)
