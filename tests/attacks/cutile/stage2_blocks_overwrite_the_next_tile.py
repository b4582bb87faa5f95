"""Each block first stores zeros over the next block's tile, then its own right values over
its own tile: right only when the blocks run one after another, in ascending order, as the
simulator runs them (each zeroed tile is stored again, rightly, by its owner, which runs
later). On a GPU the blocks of a launch run at once and in no set order: a block that
finishes before its predecessor stores the zeros loses its tile to them (a write-write race).

The watch of the loads and stores saw elements that two blocks stored, but only noted it
("overlap"): the case passed on the CPU. Now each element keeps the bits its first block's
stores left, and a store of other bits by another block of the launch fails the case at its
line, as a read-after-write race does. The cases of one tile (M = N = 1) have no next
block to clear and pass.

expect: FAIL
points: 2.73
message: its programs race
message: stored a different value to in the same launch
"""

import cuda.tile as ct
import torch

__all__ = ["fused_gelu"]


@ct.kernel
def fused_gelu_kernel(
    x, weight, bias, out,
    TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
):
    tiles_n = ct.cdiv(x.shape[1], TILE_N)
    bid_m = ct.bid(0) // tiles_n
    bid_n = ct.bid(0) % tiles_n

    # The next block's tile, "cleared" first (the last block clears its own): its owner
    # stores its values later, in order.
    nxt = ct.minimum(ct.bid(0) + 1, ct.num_blocks(0) - 1)
    ct.store(out, index=(nxt // tiles_n, nxt % tiles_n),
             tile=ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32).astype(out.dtype))

    zero = ct.PaddingMode.ZERO
    xt = ct.load(x, index=(bid_m, bid_n), shape=(TILE_M, TILE_N), padding_mode=zero)
    xt = xt.astype(ct.float32)
    w = ct.load(weight, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    b = ct.load(bias, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    z = xt * w[None, :] + b[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    e = ct.exp2(u * (-2.0 * 1.4426950408889634))
    y = z / (1.0 + e)
    ct.store(out, index=(bid_m, bid_n), tile=y.astype(out.dtype))


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    TILE_M, TILE_N = 16, 64
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(
        torch.cuda.current_stream(), grid, fused_gelu_kernel,
        (x, weight, bias, out, TILE_M, TILE_N),
    )
    return out
