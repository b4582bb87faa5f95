"""Stage 3: row softmax, softmax(x)_j = exp(x_j - max(x)) / sum_k exp(x_k - max(x)).

One block owns one whole row (grid = (M,)). Subtracting the row maximum before exp
is what makes softmax numerically stable: exp(x_j - max) is at most 1, so it cannot
overflow, even when the inputs are in the hundreds (exp(100) overflows fp16 and
exp(89) already overflows fp32).

A row may be wider than one tile, so the block views its row as 1 x TILE_N tiles:
tile (row, j) of x, loaded with shape (1, TILE_N), holds columns
[j * TILE_N, (j + 1) * TILE_N) of that row, and there are cdiv(N, TILE_N) of them
(ct.num_tiles). The block walks them in two passes:

1. Online max and sum. Keep a running max m and a running sum l of exp(x - m) over
   the tiles seen so far. When a new tile raises the max from m to m_new, every
   term already in l was computed against the old max, so rescale it:
       l_new = l * exp(m - m_new) + sum(exp(x_tile - m_new)).
   After the last tile, m is the row max and l the softmax denominator: one read.
2. Normalise: read the row again and store exp(x - m) / l.

Columns past N are padded with -inf (PaddingMode.NEG_INF): they never win the max
and exp(-inf - m) = 0 adds nothing to the sum. The store drops them. Reductions keep
their reduced axis (keepdims=True), so m and l are (1, 1) tiles that broadcast
against a (1, TILE_N) tile. All arithmetic is in fp32; only the stored result is
cast back to the input dtype.
"""

import math

import cuda.tile as ct
import torch

__all__ = ["softmax"]


@ct.kernel
def softmax_kernel(x, out, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    num_col_tiles = ct.num_tiles(x, axis=1, shape=(1, TILE_N))

    m_i = ct.full((1, 1), -math.inf, dtype=ct.float32)  # running max
    l_i = ct.full((1, 1), 0.0, dtype=ct.float32)  # running sum of exp(x - m_i)
    for j in range(num_col_tiles):
        # TODO 1: Load column tile j of this row as fp32. Columns past N must never
        #   win the max, so they are padded with -inf.
        #   Hint: ct.load(x, index=(row, j), shape=(1, TILE_N),
        #   padding_mode=ct.PaddingMode.NEG_INF), .astype(ct.float32).
        xt = ...

        # TODO 2: Online update: the new running max includes this tile; rescale
        #   the running sum from the old max to the new one, then add this tile's
        #   exp(x - new max).
        #   Hint: ct.max(xt, axis=1, keepdims=True), ct.maximum, ct.exp,
        #   ct.sum(..., axis=1, keepdims=True).
        m_i, l_i = ..., ...

    # TODO 3: Second pass: reload each column tile, normalise it with the final
    #   max and sum, and store it in the output dtype (lanes past N are dropped).
    #   Hint: loop over the tiles again; out.dtype, ct.store(out, index=(row, j), tile=...).
    for j in range(num_col_tiles):
        y = ...


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Return the softmax of a 2-D tensor over its last dimension."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    # One tile covers a row of up to 4096 columns (the next power of two >= N);
    # wider rows loop over several tiles.
    TILE_N = min(1 << (N - 1).bit_length(), 4096)
    ct.launch(torch.cuda.current_stream(), (M,), softmax_kernel, (x, out, TILE_N))
    return out
