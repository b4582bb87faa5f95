"""Stage problem: softmax over the last axis of an M x N matrix; read once, written once."""

import torch

from grader.problems.base import Call, Param, Problem, Work, compiled, element_size, in_f32, randn


def _softmax_last(x):
    return torch.softmax(x, dim=-1)


def _call(p, dtype, gen):
    return Call((randn((p["M"], p["N"]), dtype, gen, scale=p["scale"]),))


def _explain(got: torch.Tensor, want: torch.Tensor) -> list[str]:
    """Rows of a softmax sum to 1: rows that do not point at the normalisation."""
    sums = got.sum(dim=-1)
    off = torch.isfinite(sums) & ((sums - 1).abs() > 1e-2)
    if not off.any():
        return []
    row = int(off.nonzero()[0])
    return [f"{int(off.sum())} of {got.shape[0]} rows do not sum to 1 (row {row} sums to "
            f"{float(sums[row]):.4g}): each row's exponentials must be divided by the sum of "
            "the whole row's"]


PROBLEM = Problem(
    id="softmax",
    function="softmax",
    signature="softmax(x) -> Tensor",
    params=(
        Param("M", int, doc="rows"),
        Param("N", int, doc="columns (the softmax axis)"),
        Param("scale", float, 1.0, doc="standard deviation of the inputs"),
    ),
    make_call=_call,
    reference=lambda call: _softmax_last(*in_f32(call).args),
    work=lambda p, dt: Work(2 * p["M"] * p["N"] * element_size(dt)),
    baselines={"torch": lambda c: _softmax_last(*c.args), "torch.compile": compiled(_softmax_last)},
    explain=_explain,
)
