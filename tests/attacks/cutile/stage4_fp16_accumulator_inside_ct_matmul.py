"""Takes each K step's product with `ct.matmul(a, b)` (the `@` of two tiles) and adds it to a
float32 accumulator, with a K step as deep as K itself (up to 4096): one `ct.matmul` per
output tile. cuTile's ct.matmul has no accumulator argument: for float16 tiles it runs an MMA
whose accumulator is float16, the first of the accumulators cuTile allows for float16 inputs
(cuda.tile's matmul_impl: `_resolve_mma_supported_dtype(float16, float16, None)` gives
float16; "the result dtype is the same as the promoted input types"). On a GPU the compiler
splits the 4096-deep product into 16-deep MMA instructions, each rounding the running sum to
float16: the same error as an fp16 `ct.mma` accumulator over all of K, which the case built
to catch a 16-bit accumulator (M = N = 32, K = 4096, float16) exists to fail; the float32
accumulator outside only adds the rounded sums.

The simulator computes ct.matmul in float32 over all of K and rounds once (arithmetic.matmul),
as ct.mma did before it rounded a float16 accumulator every 16 of K: every case passes on the
CPU. The simulator's ct.matmul must accumulate as cuTile's does (float16 for float16 tiles,
rounded every 16 of K), and the case fail.

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

    acc = ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32)  # float32, as the lesson asks
    for k in range(num_k_tiles):
        zero = ct.PaddingMode.ZERO
        at = ct.load(a, index=(pid_m, k), shape=(TILE_M, TILE_K), padding_mode=zero)
        bt = ct.load(b, index=(k, pid_n), shape=(TILE_K, TILE_N), padding_mode=zero)
        # the product in the inputs' dtype: for float16, summed in a float16 accumulator
        acc = acc + ct.matmul(at, bt).astype(ct.float32)

    ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    TILE_M, TILE_N = 32, 32
    # one K step as deep as K (up to 4096): one ct.matmul per output tile
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
