"""Loads B's K tile 0 at every step: index=(0, pid_n) for B, while A's follows k.

expect: FAIL
message: with K within one K tile your kernel is right
message: the fault comes with the loop over K
cause: k_loop
"""

import cuda.tile as ct
import torch

__all__ = ["matmul"]


# TUNE: blocks per SM (see "Making it fast")
@ct.kernel
def matmul_kernel(
    a, b, c,
    TILE_M: ct.Constant[int], TILE_N: ct.Constant[int], TILE_K: ct.Constant[int],
    # TUNE: the block order's own parameters, if it has any
):
    pid = ct.bid(0)
    # TUNE: the order in which blocks take the tiles of C (see "Making it fast")
    tiles_n = ct.cdiv(b.shape[1], TILE_N)
    pid_m = pid // tiles_n  # row by row
    pid_n = pid % tiles_n

    # Step 1: Count the steps along K: the number of TILE_K-wide tiles that cover K
    #   (the last one may be partial).
    #   Hint: ct.num_tiles(a, axis=1, shape=(TILE_M, TILE_K)), or ct.cdiv with a.shape[1].
    num_k_tiles = ct.num_tiles(a, axis=1, shape=(TILE_M, TILE_K))

    # The running sum of this C tile stays in fp32 whatever the input dtype.
    acc = ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32)
    # fp32 inputs go to the tensor cores as tf32; fp16 and bf16 go as they are.
    mma_dtype = ct.tfloat32 if a.dtype == ct.float32 else a.dtype
    for k in range(num_k_tiles):
        # Step 2: Load tile (pid_m, k) of A and tile (k, pid_n) of B, padded with
        #   zeros so that lanes past K add nothing, and convert both to mma_dtype.
        #   Hint: ct.load(array, index=(...), shape=(...), padding_mode=ct.PaddingMode.ZERO),
        #   .astype(mma_dtype).
        zero = ct.PaddingMode.ZERO
        at = ct.load(a, index=(pid_m, k), shape=(TILE_M, TILE_K), padding_mode=zero)
        bt = ct.load(b, index=(0, pid_n), shape=(TILE_K, TILE_N), padding_mode=zero)
        at = at.astype(mma_dtype)
        bt = bt.astype(mma_dtype)

        # Step 3: Multiply the tiles and add the product into acc on the tensor cores
        #   (acc stays fp32).
        #   Hint: ct.mma(x, y, acc) returns x @ y + acc.
        acc = ct.mma(at, bt, acc)

    # Step 4: Cast the finished tile to C's dtype and store it as tile (pid_m, pid_n)
    #   of C (lanes past M or N are dropped).
    #   Hint: c.dtype, .astype, ct.store(array, index=(...), tile=...).
    ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # TUNE: tile shape and block order (see "Making it fast")
    TILE_M, TILE_N, TILE_K = 64, 64, 32
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(torch.cuda.current_stream(), grid, matmul_kernel, (a, b, c, TILE_M, TILE_N, TILE_K))
    return c
