"""Stage 3: row softmax, softmax(x)_j = exp(x_j - max(x)) / sum_k exp(x_k - max(x)).

One block owns one whole row (grid = (M,)). Subtracting the row maximum before exp
is what makes softmax numerically stable: exp(x_j - max) is at most 1, so it cannot
overflow, even when the inputs are in the hundreds (exp(100) overflows fp16 and
exp(89) already overflows fp32).

The block views its row as 1 x TILE_N tiles: tile (row, j) of x, loaded with shape
(1, TILE_N), holds columns [j * TILE_N, (j + 1) * TILE_N) of that row, and there are
cdiv(N, TILE_N) of them (ct.num_tiles). A load follows the array's own strides, so a
sliced or transposed x works as it is: hand the kernel x itself.

When the whole row fits in one tile (ONE_TILE), the block reads it once, keeps it in
registers, and writes the result: one read and one write per element, the least memory
traffic softmax can have.

A wider row is walked tile by tile, in two passes:

1. Online max and sum. Keep a running max m and a running sum l of exp(x - m) over
   the tiles seen so far. When a new tile raises the max from m to m_new, every
   term already in l was computed against the old max, so rescale it:
       l_new = l * exp(m - m_new) + sum(exp(x_tile - m_new)).
   After the last tile, m is the row max and l the softmax denominator: one read.
2. Normalise: read the row again and store exp(x - m) / l.

exp2 is cheaper than exp on the GPU, and exp(v) = exp2(v * log2(e)), so every exp
here is an exp2 of a difference scaled by LOG2E. The division by the sum becomes one
reciprocal per row and a multiply per element.

Columns past N are padded with -inf (PaddingMode.NEG_INF): they never win the max
and exp(-inf - m) = 0 adds nothing to the sum. The store drops them. Reductions keep
their reduced axis (keepdims=True), so m and l are (1, 1) tiles that broadcast
against a (1, TILE_N) tile. All arithmetic is in fp32; only the stored result is
cast back to the input dtype.

The plain wrapper: tiles of at most 1024 columns (one tile for rows that fit, the two
passes for wider ones), and the compiler's default number of blocks per SM.

Making it fast. Softmax reads each element and writes it once: at least 2 * M * N
elements of memory traffic for a few FLOPs each, so the target is the GPU's copy
bandwidth. The two passes read the row twice, the second time from L2 at best; the
one-tile path reads it once. What to explore, at the TUNE places:

- Tile width. A wider tile sends more rows down the one-tile path, but a tile lives in
  registers: there is a width past which it no longer fits and spills, and for the rows
  wider than that the two-pass tile width matters too.
- Occupancy. `kernel.replace_hints(occupancy=n)` gives a copy of a kernel that asks the
  compiler to fit n blocks on each SM, so that more loads are in flight to hide memory
  latency. That only works while n blocks' tiles fit an SM's registers, so the right hint
  depends on the tile width: a wrapper may launch different copies for different widths.
  Make each copy once, at module level: a copy made inside the wrapper is a new kernel on
  every call, prepared again each time.
- Threads per block. cuTile picks how many threads share a tile; the hint
  `num_worker_warps=8` asks for two warp groups (256 threads) instead of one, so each
  thread holds half as much of the tile. A tile too wide for one warp group's registers
  (it spills to local memory, which is slow) may fit two.
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
        # TODO 1: The whole row is tile (row, 0). Load it once as fp32 (columns past N
        #   padded with -inf), take its max m, p = exp2((x - m) * LOG2E), and store
        #   p * (1 / sum(p)) in the output dtype.
        #   Hint: ct.load(x, index=(row, 0), shape=(1, TILE_N),
        #   padding_mode=ct.PaddingMode.NEG_INF), ct.max and ct.sum(..., axis=1,
        #   keepdims=True), ct.exp2, ct.store(out, index=(row, 0), tile=...).
        y = ...
        ...  # store y into this row of out, in out's dtype
    else:
        num_col_tiles = ct.num_tiles(x, axis=1, shape=(1, TILE_N))
        m_i = ct.full((1, 1), -math.inf, dtype=ct.float32)  # running max
        l_i = ct.full((1, 1), 0.0, dtype=ct.float32)  # running sum of exp(x - m_i)
        for j in range(num_col_tiles):
            # TODO 2: Load column tile j of this row as fp32. Columns past N must never
            #   win the max, so they are padded with -inf.
            #   Hint: ct.load(x, index=(row, j), shape=(1, TILE_N),
            #   padding_mode=ct.PaddingMode.NEG_INF), .astype(ct.float32).
            xt = ...

            # TODO 3: Online update: the new running max includes this tile; rescale
            #   the running sum from the old max to the new one, then add this tile's
            #   exp(x - new max), each exp written as exp2(... * LOG2E).
            #   Hint: ct.max(xt, axis=1, keepdims=True), ct.maximum, ct.exp2,
            #   ct.sum(..., axis=1, keepdims=True).
            m_i, l_i = ..., ...

        # TODO 4: Second pass: reload each column tile, normalise it with the final
        #   max and sum (multiply by 1 / l_i), and store it in the output dtype (lanes
        #   past N are dropped).
        #   Hint: loop over the tiles again; out.dtype, ct.store(out, index=(row, j), tile=...).
        for j in range(num_col_tiles):
            y = ...
            ...  # store y into this tile of the row of out


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
