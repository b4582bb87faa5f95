"""Swaps the weight and the bias: computes gelu(x * bias + weight).

expect: FAIL
message: mismatch
message: the weight and the bias are swapped
cause: weight_bias_swapped
"""

import cuda.tile as ct
import torch

__all__ = ["fused_gelu"]


# TUNE: blocks per SM (see "Making it fast")
@ct.kernel
def fused_gelu_kernel(
    x, weight, bias, out,
    TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
):
    tiles_n = ct.cdiv(x.shape[1], TILE_N)
    bid_m = ct.bid(0) // tiles_n  # tiles numbered row by row: see the docstring
    bid_n = ct.bid(0) % tiles_n

    # Step 1: Load this block's x tile [TILE_M, TILE_N] and the matching [TILE_N]
    #   tiles of weight and bias, padding lanes outside the arrays with zeros, and
    #   convert all three to fp32.
    #   Hint: ct.load(array, index=(bid_m, bid_n), shape=(TILE_M, TILE_N),
    #   padding_mode=ct.PaddingMode.ZERO), tile.astype(ct.float32).
    zero = ct.PaddingMode.ZERO
    xt = ct.load(x, index=(bid_m, bid_n), shape=(TILE_M, TILE_N), padding_mode=zero)
    xt = xt.astype(ct.float32)
    w = ct.load(weight, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    b = ct.load(bias, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)

    # Step 2: Compute z = x * w + b (w and b broadcast over the rows), then
    #   y = GELU_tanh(z) in its sigmoid form from the module docstring.
    #   Hint: [None, :] (or plain broadcasting); exp(x) = exp2(x * log2(e)), ct.exp2.
    z = xt * b[None, :] + w[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)  # the constant is sqrt(2/pi)
    e = ct.exp2(u * (-2.0 * 1.4426950408889634))  # exp(-2u)
    y = z / (1.0 + e)

    # Step 3: Cast y to the output's dtype and store it into this block's tile of
    #   out (lanes outside out are dropped).
    #   Hint: out.dtype, tile.astype, ct.store(array, index=(...), tile=...).
    ct.store(out, index=(bid_m, bid_n), tile=y.astype(out.dtype))


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    # TUNE: tile shape (see "Making it fast")
    TILE_M, TILE_N = 64, 64
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(
        torch.cuda.current_stream(), grid, fused_gelu_kernel,
        (x, weight, bias, out, TILE_M, TILE_N),
    )
    return out
