"""Adds the bias on the wrong axis in a tile helper (`b[:, None]`): the shapes do not match.

expect: FAIL
message: a kernel does not compile; the compiler said
message: line 22
message: Shapes are not broadcastable
message: called from line 38
line: 22

`b[:, None]` is a column of TILE_N values against a tile of TILE_M rows: the compiler
rejects the helper's line. The message must show that line of the helper with the
compiler's reason, and the kernel's call of the helper below it. The fix is b[None, :].
"""

import cuda.tile as ct
import torch

__all__ = ["fused_gelu"]


def gelu_tanh(xt, w, b):
    z = xt * w[None, :] + b[:, None]
    # GELU_tanh(z) in its sigmoid form: z / (1 + exp(-2u)), u = sqrt(2/pi) (z + 0.044715 z^3)
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    return z / (1.0 + ct.exp2(u * (-2.0 * 1.4426950408889634)))


@ct.kernel
def fused_gelu_kernel(x, weight, bias, out, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int]):
    tiles_n = ct.cdiv(x.shape[1], TILE_N)
    bid_m = ct.bid(0) // tiles_n
    bid_n = ct.bid(0) % tiles_n
    zero = ct.PaddingMode.ZERO
    xt = ct.load(x, index=(bid_m, bid_n), shape=(TILE_M, TILE_N), padding_mode=zero)
    xt = xt.astype(ct.float32)
    w = ct.load(weight, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    b = ct.load(bias, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    y = gelu_tanh(xt, w, b)
    ct.store(out, index=(bid_m, bid_n), tile=y.astype(out.dtype))


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    TILE_M, TILE_N = 32, 64
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(
        torch.cuda.current_stream(), grid, fused_gelu_kernel,
        (x, weight, bias, out, TILE_M, TILE_N),
    )
    return out
