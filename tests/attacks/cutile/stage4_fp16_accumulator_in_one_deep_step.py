"""Keeps the accumulator of an fp16 matmul in float16 (`ct.mma` takes an fp16 accumulator
for fp16 inputs), and walks K in one step as deep as K itself (up to 4096): one `ct.mma` per
output tile. The simulator computes `ct.mma` as acc + a @ b in float32 and rounds the sum to
the accumulator's dtype once per call, so the error does not grow with K and the case built
to catch a 16-bit accumulator (M = N = 32, K = 4096, float16) passes. With 32-deep steps the
same kernel fails that case ("the output is what a running sum kept in float16 gives").

On a GPU an fp16-accumulating MMA keeps its running sum in fp16 registers: the compiler
splits a 4096-deep product into 16-deep MMA instructions, each rounding the sum to fp16,
and the error grows with K as the lesson says (or the 32 x 4096 tiles do not fit at all).
The simulator must round an fp16 accumulator as the hardware does (every 16 of K), and the
case fail.

expect: FAIL
points: 22.73
message: running sum kept in float16
"""

import cuda.tile as ct
import torch

__all__ = ["matmul"]


@ct.kernel(occupancy=2)
def matmul_kernel(
    a, b, c,
    TILE_M: ct.Constant[int], TILE_N: ct.Constant[int], TILE_K: ct.Constant[int],
    GROUP_M: ct.Constant[int],
):
    pid = ct.bid(0)
    tiles_m = ct.cdiv(a.shape[0], TILE_M)
    tiles_n = ct.cdiv(b.shape[1], TILE_N)
    blocks_per_group = GROUP_M * tiles_n
    group = pid // blocks_per_group
    first_m = group * GROUP_M
    group_rows = ct.minimum(tiles_m - first_m, GROUP_M)  # the last group may be short
    local = pid - group * blocks_per_group
    pid_m = first_m + local % group_rows
    pid_n = local // group_rows

    num_k_tiles = ct.num_tiles(a, axis=1, shape=(TILE_M, TILE_K))

    acc = ct.full((TILE_M, TILE_N), 0.0, dtype=a.dtype if a.dtype == ct.float16 else ct.float32)
    mma_dtype = ct.tfloat32 if a.dtype == ct.float32 else a.dtype
    for k in range(num_k_tiles):
        zero = ct.PaddingMode.ZERO
        at = ct.load(a, index=(pid_m, k), shape=(TILE_M, TILE_K), padding_mode=zero)
        bt = ct.load(b, index=(k, pid_n), shape=(TILE_K, TILE_N), padding_mode=zero)
        at = at.astype(mma_dtype)
        bt = bt.astype(mma_dtype)

        acc = ct.mma(at, bt, acc)

    ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    TILE_M, TILE_N = 32, 32
    # one K step as deep as K (up to 4096): the fp16 accumulator is rounded once per ct.mma
    TILE_K = 1
    while TILE_K < min(K, 4096):
        TILE_K *= 2
    GROUP_M = 8
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(
        torch.cuda.current_stream(), grid, matmul_kernel,
        (a, b, c, TILE_M, TILE_N, TILE_K, GROUP_M),
    )
    return c
