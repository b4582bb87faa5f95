"""Swaps the entries of a tile index: loads tile (bid_n, bid_m) instead of (bid_m, bid_n).

expect: FAIL
message: tile index (1, 0) is outside the tile space of the array
message: check which tile each block owns, and the order of the tile index's entries
message: line 26: xt = ct.load(x, index=(bid_n, bid_m)
line: 26

A tile index counts tiles along the array's dimensions in order: rows first, then
columns. Swapped, the block that owns the second column tile of x asks for the second
row tile, which one row tile lacks: the simulator says so in cuTile's words, at the line.
"""

import cuda.tile as ct
import torch

__all__ = ["fused_gelu"]


@ct.kernel
def fused_gelu_kernel(x, weight, bias, out, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int]):
    tiles_n = ct.cdiv(x.shape[1], TILE_N)
    bid_m = ct.bid(0) // tiles_n
    bid_n = ct.bid(0) % tiles_n
    zero = ct.PaddingMode.ZERO
    xt = ct.load(x, index=(bid_n, bid_m), shape=(TILE_M, TILE_N), padding_mode=zero).astype(ct.float32)
    w = ct.load(weight, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    b = ct.load(bias, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    z = xt * w[None, :] + b[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    y = z / (1.0 + ct.exp2(u * (-2.0 * 1.4426950408889634)))
    ct.store(out, index=(bid_m, bid_n), tile=y.astype(out.dtype))


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    TILE_M, TILE_N = 64, 64
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(torch.cuda.current_stream(), grid, fused_gelu_kernel,
              (x, weight, bias, out, TILE_M, TILE_N))
    return out
