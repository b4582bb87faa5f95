"""Stage 4: tiled matrix multiplication, C = A @ B with A [M, K] and B [K, N].

Block number pid owns one TILE_M x TILE_N tile (pid_m, pid_n) of C. It walks the K
dimension in steps of TILE_K: step k loads tile (pid_m, k) of A, a TILE_M x TILE_K
tile, and tile (k, pid_n) of B, a TILE_K x TILE_N tile, and adds their product to an
accumulator tile with `ct.mma` (matrix multiply-accumulate), which maps onto the
GPU's tensor cores. As in every stage, you name tiles by their index in each
array's tile space; cuTile turns that into addresses using the array's strides, so
transposed or sliced inputs work as they are.

Why fp32 accumulation: a dot product over K = 4096 sums 4096 terms. In fp16 the
running sum soon gets large enough that each new term loses most of its bits
(fp16 has a 10-bit mantissa), so the error grows with K. The accumulator is
therefore an fp32 tile, and `ct.mma(a, b, acc)` keeps acc's dtype; only the finished
tile is rounded to the output dtype. ct.mma never converts its inputs for you:
fp16 and bf16 tiles go in as they are, while fp32 tiles are converted to
ct.tfloat32 first (10-bit mantissa inputs, fp32 sums: the tf32 tensor cores).

Padding: M, N and K need not be multiples of the tile. Along K, lanes past K must
be ZERO (PaddingMode.ZERO): 0 * anything adds nothing to the sum, so the last
partial K step is still correct. Rows past M and columns past N only reach C lanes
that the store drops.

The plain kernel: blocks take the tiles of C row by row (pid_m = pid // tiles_n), with
64 x 64 tiles 32 deep for every dtype and the compiler's default number of blocks per SM.
It is correct on every shape; the places marked TUNE are where its speed is decided.

Making it fast. A 4096^3 matmul does 2 * 4096^3 FLOPs on 3 * 32 MiB of data: there is
work enough per byte to keep the tensor cores busy, if each byte is loaded few times.
What to explore, at the TUNE places (time each change, e.g. with `grade 4` on a GPU):

- Tile shape. A TILE_M x TILE_N tile does 2 * TILE_M * TILE_N * TILE_K FLOPs per
  (TILE_M + TILE_N) * TILE_K elements loaded, so larger tiles reuse each byte more. The
  cost: the fp32 accumulator lives in registers and the A and B tiles in shared memory;
  too large, and registers spill or fewer blocks fit on an SM. fp32 inputs take twice the
  bytes of fp16 per element, so the same depth costs them twice the memory.
- Block order. Blocks that run at the same time share the L2 cache. Row by row, the
  blocks of one wave read one row of A tiles but every column of B. Numbering them in
  groups of a few tile rows, column by column inside a group, makes neighbours read the
  same A and B tiles, so more of each comes from L2 instead of DRAM.
- Occupancy. `@ct.kernel(occupancy=n)` asks the compiler to fit n blocks on each SM, so
  that one block's loads and epilogue overlap with another's tensor-core work, if the
  tiles of n blocks fit.
"""

import cuda.tile as ct
import torch

__all__ = ["matmul"]


# >>> tuned: blocks per SM (see "Making it fast")
@ct.kernel(occupancy=2)
# --- plain
# @ct.kernel
# <<<
def matmul_kernel(
    a, b, c,
    TILE_M: ct.Constant[int], TILE_N: ct.Constant[int], TILE_K: ct.Constant[int],
    # >>> tuned: the block order's own parameters, if it has any
    GROUP_M: ct.Constant[int],
    # --- plain
    # <<<
):
    pid = ct.bid(0)
    # >>> tuned: the order in which blocks take the tiles of C (see "Making it fast")
    # Grouped ordering: GROUP_M tile rows per group, column by column inside a group, so
    # that blocks running together reuse the same A and B tiles from L2.
    tiles_m = ct.cdiv(a.shape[0], TILE_M)
    tiles_n = ct.cdiv(b.shape[1], TILE_N)
    blocks_per_group = GROUP_M * tiles_n
    group = pid // blocks_per_group
    first_m = group * GROUP_M
    group_rows = ct.minimum(tiles_m - first_m, GROUP_M)  # the last group may be short
    local = pid - group * blocks_per_group
    pid_m = first_m + local % group_rows
    pid_n = local // group_rows
    # --- plain
    # tiles_n = ct.cdiv(b.shape[1], TILE_N)
    # pid_m = pid // tiles_n  # row by row
    # pid_n = pid % tiles_n
    # <<<

    # Step 1: Count the steps along K: the number of TILE_K-wide tiles that cover K
    #   (the last one may be partial).
    #   Hint: ct.num_tiles(a, axis=1, shape=(TILE_M, TILE_K)), or ct.cdiv with a.shape[1].
    # >>> solution
    num_k_tiles = ct.num_tiles(a, axis=1, shape=(TILE_M, TILE_K))
    # --- exercise
    # num_k_tiles = ...
    # <<<

    # The running sum of this C tile stays in fp32 whatever the input dtype.
    acc = ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32)
    # fp32 inputs go to the tensor cores as tf32; fp16 and bf16 go as they are.
    mma_dtype = ct.tfloat32 if a.dtype == ct.float32 else a.dtype
    for k in range(num_k_tiles):
        # Step 2: Load tile (pid_m, k) of A and tile (k, pid_n) of B, padded with
        #   zeros so that lanes past K add nothing, and convert both to mma_dtype.
        #   Hint: ct.load(array, index=(...), shape=(...), padding_mode=ct.PaddingMode.ZERO),
        #   .astype(mma_dtype).
        # >>> solution
        zero = ct.PaddingMode.ZERO
        at = ct.load(a, index=(pid_m, k), shape=(TILE_M, TILE_K), padding_mode=zero)
        bt = ct.load(b, index=(k, pid_n), shape=(TILE_K, TILE_N), padding_mode=zero)
        at = at.astype(mma_dtype)
        bt = bt.astype(mma_dtype)
        # --- exercise
        # at = ...
        # bt = ...
        # <<<

        # Step 3: Multiply the tiles and add the product into acc on the tensor cores
        #   (acc stays fp32).
        #   Hint: ct.mma(x, y, acc) returns x @ y + acc.
        # >>> solution
        acc = ct.mma(at, bt, acc)
        # --- exercise
        # acc = ...
        # <<<

    # Step 4: Cast the finished tile to C's dtype and store it as tile (pid_m, pid_n)
    #   of C (lanes past M or N are dropped).
    #   Hint: c.dtype, .astype, ct.store(array, index=(...), tile=...).
    # >>> solution
    ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype))
    # --- exercise
    # c_tile = ...
    # ...  # store the accumulator into this tile of c, in c's dtype
    # <<<


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # >>> tuned: tile shape and block order (see "Making it fast")
    # 128 x 128 tiles with occupancy=2 on the kernel; fp32 (as tf32) has twice the bytes
    # per element, so half the K depth.
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
    # --- plain
    # TILE_M, TILE_N, TILE_K = 64, 64, 32
    # grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    # ct.launch(torch.cuda.current_stream(), grid, matmul_kernel, (a, b, c, TILE_M, TILE_N, TILE_K))
    # <<<
    return c
