"""Stores each finished tile of C with `ct.store(..., check_bounds=False)`, which cuTile's
documentation calls the faster store: "the tile is assumed to stay fully within bounds ...
violating this assumption is undefined behavior". The edge tiles of every case whose M or N
is not a multiple of the tile do not stay within bounds: on a GPU they write past the end of
each row of C (into the next row, which another block owns) and past the end of C.

The simulator drops the part of a stored tile past the edge whatever check_bounds says, and
the watch of the loads and stores saw only the lanes in bounds: every case passed on the
simulator. Now a store (or load) with check_bounds=False whose tile hangs over the edge
fails the case at its line, as an unmasked Triton store does; the cases whose M and N are
multiples of the tile keep their points.

expect: FAIL
points: 4.55
message: wrote outside a tensor
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

    acc = ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32)
    mma_dtype = ct.tfloat32 if a.dtype == ct.float32 else a.dtype
    for k in range(num_k_tiles):
        zero = ct.PaddingMode.ZERO
        at = ct.load(a, index=(pid_m, k), shape=(TILE_M, TILE_K), padding_mode=zero)
        bt = ct.load(b, index=(k, pid_n), shape=(TILE_K, TILE_N), padding_mode=zero)
        at = at.astype(mma_dtype)
        bt = bt.astype(mma_dtype)

        acc = ct.mma(at, bt, acc)

    # the store that skips its bounds check: faster, and undefined on an edge tile
    ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype), check_bounds=False)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if a.element_size() == 2:  # fp16 / bf16
        TILE_M, TILE_N, TILE_K = 128, 128, 64
    else:
        TILE_M, TILE_N, TILE_K = 128, 128, 32
    GROUP_M = 8
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(
        torch.cuda.current_stream(), grid, matmul_kernel,
        (a, b, c, TILE_M, TILE_N, TILE_K, GROUP_M),
    )
    return c
