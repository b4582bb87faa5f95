"""Loads column tile 0 at every step of the first loop (index=(row, 0)): the max and the sum see the first tile again and again.

expect: FAIL
message: with N within one column block your kernel is right
message: the fault comes with the loop across column blocks
cause: across_tiles
cause: row_normalisation
(Where fewer than half the elements are wrong, N = 40000, the rows are only seen to be scaled.)
"""

import math

import cuda.tile as ct
import torch

__all__ = ["softmax"]

LOG2E = 1.4426950408889634  # log2(e): exp(v) = exp2(v * LOG2E)


@ct.kernel
def softmax_kernel(x, out, TILE_N: ct.Constant[int], ONE_TILE: ct.Constant[bool]):
    row = ct.bid(0)

    if ONE_TILE:
        # Step 1: The whole row is tile (row, 0). Load it once as fp32 (columns past N
        #   padded with -inf), take its max m, p = exp2((x - m) * LOG2E), and store
        #   p * (1 / sum(p)) in the output dtype.
        #   Hint: ct.load(x, index=(row, 0), shape=(1, TILE_N),
        #   padding_mode=ct.PaddingMode.NEG_INF), ct.max and ct.sum(..., axis=1,
        #   keepdims=True), ct.exp2, ct.store(out, index=(row, 0), tile=...).
        xt = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
        xt = xt.astype(ct.float32)
        p = ct.exp2((xt - ct.max(xt, axis=1, keepdims=True)) * LOG2E)
        y = p * (1.0 / ct.sum(p, axis=1, keepdims=True))
        ct.store(out, index=(row, 0), tile=y.astype(out.dtype))
    else:
        num_col_tiles = ct.num_tiles(x, axis=1, shape=(1, TILE_N))
        m_i = ct.full((1, 1), -math.inf, dtype=ct.float32)  # running max
        l_i = ct.full((1, 1), 0.0, dtype=ct.float32)  # running sum of exp(x - m_i)
        for j in range(num_col_tiles):
            # Step 2: Load column tile j of this row as fp32. Columns past N must never
            #   win the max, so they are padded with -inf.
            #   Hint: ct.load(x, index=(row, j), shape=(1, TILE_N),
            #   padding_mode=ct.PaddingMode.NEG_INF), .astype(ct.float32).
            xt = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
            xt = xt.astype(ct.float32)

            # Step 3: Online update: the new running max includes this tile; rescale
            #   the running sum from the old max to the new one, then add this tile's
            #   exp(x - new max), each exp written as exp2(... * LOG2E).
            #   Hint: ct.max(xt, axis=1, keepdims=True), ct.maximum, ct.exp2,
            #   ct.sum(..., axis=1, keepdims=True).
            m_new = ct.maximum(m_i, ct.max(xt, axis=1, keepdims=True))
            l_i = (l_i * ct.exp2((m_i - m_new) * LOG2E)
                   + ct.sum(ct.exp2((xt - m_new) * LOG2E), axis=1, keepdims=True))
            m_i = m_new

        # Step 4: Second pass: reload each column tile, normalise it with the final
        #   max and sum (multiply by 1 / l_i), and store it in the output dtype (lanes
        #   past N are dropped).
        #   Hint: loop over the tiles again; out.dtype, ct.store(out, index=(row, j), tile=...).
        inv_l = 1.0 / l_i
        for j in range(num_col_tiles):
            xt = ct.load(x, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
            y = ct.exp2((xt.astype(ct.float32) - m_i) * LOG2E) * inv_l
            ct.store(out, index=(row, j), tile=y.astype(out.dtype))


# TUNE: copies of the kernel with other hints (see "Making it fast")


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Return the softmax of a 2-D tensor over its last dimension."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    # TUNE: tile width and which copy of the kernel runs (see "Making it fast")
    TILE_N = min(1 << (N - 1).bit_length(), 1024)  # the next power of two >= N, at most 1024
    one_tile = N <= TILE_N
    kernel = softmax_kernel
    ct.launch(torch.cuda.current_stream(), (M,), kernel, (x, out, TILE_N, one_tile))
    return out
