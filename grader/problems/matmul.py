"""Stage problem: C = A @ B, A of M x K and B of K x N; 2MNK flops, each matrix moved once.
The lesson promises that transposed or sliced inputs work as they are: `layout` draws A and
B so."""

import torch

from grader.problems.base import (Call, Param, Problem, Work, element_size, f32, layout_check,
                                  layout_param, randn_2d)


def _call(p, dtype, gen):
    m, n, k = p["M"], p["N"], p["K"]
    return Call((randn_2d(m, k, p["layout"], dtype, gen), randn_2d(k, n, p["layout"], dtype, gen)))


def _reference(call):
    a, b = call.args
    # Exact float32 products: TF32 would hide the error budget we grant fp32 submissions.
    return torch.matmul(f32(a), f32(b))


def _work(p, dt):
    m, n, k = p["M"], p["N"], p["K"]
    return Work((m * k + k * n + m * n) * element_size(dt), 2 * m * n * k)


PROBLEM = Problem(
    id="matmul",
    function="matmul",
    signature="matmul(a, b) -> Tensor",
    params=(Param("M", int), Param("N", int), Param("K", int), layout_param()),
    make_call=_call,
    reference=_reference,
    work=_work,
    baselines={"torch": lambda c: torch.matmul(*c.args)},
    check=layout_check(("M", "K"), ("K", "N")),
)
