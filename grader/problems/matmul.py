"""Stage problem: C = A @ B, A of M x K and B of K x N; 2MNK flops, each matrix moved once."""

import torch

from grader.problems.base import Call, Param, Problem, Work, element_size, f32, randn


def _call(p, dtype, gen):
    m, n, k = p["M"], p["N"], p["K"]
    return Call((randn((m, k), dtype, gen), randn((k, n), dtype, gen)))


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
    params=(Param("M", int), Param("N", int), Param("K", int)),
    make_call=_call,
    reference=_reference,
    work=_work,
    baselines={"torch": lambda c: torch.matmul(*c.args)},
)
