"""Stage problem: softmax(Q K^T * sm_scale) V per batch and head, optionally causal."""

import torch.nn.functional as F

from grader.problems.base import Call, Param, Problem, Work, element_size, in_f32, randn


def _call(p, dtype, gen):
    shape = (p["B"], p["H"], p["N"], p["D"])
    q, k, v = (randn(shape, dtype, gen) for _ in range(3))
    kwargs = {"causal": p["causal"]}
    if p["sm_scale"] is not None:
        kwargs["sm_scale"] = p["sm_scale"]
    return Call((q, k, v), kwargs)


def _sdpa(call, backend=None):
    q, k, v = call.args
    scale = call.kwargs.get("sm_scale")
    causal = call.kwargs["causal"]
    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, backend)):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


def _work(p, dt):
    # Each of q, k, v read once and the output written once; 4*N*N*D flops per head
    # (QK^T and PV), half of them skipped under a causal mask.
    heads = p["B"] * p["H"]
    return Work(4 * heads * p["N"] * p["D"] * element_size(dt),
                4 * heads * p["N"] ** 2 * p["D"] // (2 if p["causal"] else 1))


PROBLEM = Problem(
    id="flash_attention",
    function="flash_attention",
    signature="flash_attention(q, k, v, causal=False, sm_scale=None) -> Tensor",
    params=(
        Param("B", int, doc="batch"),
        Param("H", int, doc="heads"),
        Param("N", int, doc="sequence length"),
        Param("D", int, doc="head dimension"),
        Param("causal", bool, False),
        Param("sm_scale", float, None, doc="softmax scale; default 1/sqrt(D)"),
    ),
    make_call=_call,
    reference=lambda call: _sdpa(in_f32(call)),
    work=_work,
    baselines={"torch": _sdpa, "sdpa-flash": lambda c: _sdpa(c, "FLASH_ATTENTION")},
)
