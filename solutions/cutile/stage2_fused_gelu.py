"""Stage 2: a fused epilogue, y = GELU_tanh(x * weight + bias), in one kernel pass.

In PyTorch, `gelu(x * w + b)` runs three kernels and writes two temporaries to
memory. Elementwise work like this is limited by memory traffic, not arithmetic,
so fusing it into ONE kernel that reads x once and writes y once is the whole win.

The tile is now 2-D. x is [M, N]; its tile space is a cdiv(M, TILE_M) x
cdiv(N, TILE_N) grid of TILE_M x TILE_N tiles, and each block owns one tile
(bid_m, bid_n), i.e. rows from bid_m * TILE_M and columns from bid_n * TILE_N. You
pass tile indices, never element offsets or strides: the array carries its shape
and strides, so any memory layout works. weight and bias are [N] vectors; their tile
number bid_n holds exactly the columns of this x tile. A (TILE_N,) tile broadcasts
against a (TILE_M, TILE_N) tile like in NumPy, one copy per row.

The grid is 1-D and the tiles are numbered row by row: block ct.bid(0) = pid owns
tile (pid // tiles_n, pid % tiles_n). Blocks start roughly in order of pid, so blocks
running together read neighbouring tiles of the same rows and the memory system sees
one stream of ascending addresses (numbered column by column, the kernel is slower).

Edge tiles hang over the bottom or right edge of x. Loads pad the missing lanes
(ZERO keeps the arithmetic on them harmless) and the store drops them again.

Arithmetic is done in fp32 whatever the input dtype (fp16/bf16 lose too much in
x^3), and only the final result is cast back to the output's dtype.

GELU_tanh(z) = 0.5 * z * (1 + tanh(u)) with u = sqrt(2/pi) * (z + 0.044715 * z^3).
Since 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)) (the logistic sigmoid of 2u), this is
y = z / (1 + exp(-2u)): one exp2 and one division per element. For u very negative
exp(-2u) overflows to inf and y becomes 0 (the right limit); for u very positive it
is 0 and y = z.

The plain kernel: square 64 x 64 tiles, the compiler's default number of blocks per SM,
and exact exp2 and division.

Making it fast. Per element the kernel reads one x and writes one y (8 bytes in fp32, 4
in bf16) and does a few dozen FLOPs: the time is memory traffic, and the target is the
GPU's copy bandwidth. What to explore, at the TUNE places:

- Tile shape. A row of the tile is one contiguous run of memory: wide, short tiles give
  long runs, square ones short runs. The tile's size decides how many bytes each block
  has in flight.
- Occupancy. `@ct.kernel(occupancy=n)` asks the compiler to fit n blocks on each SM, so
  that more loads are in flight to hide memory latency; small tiles leave room for more
  blocks. Try it together with the tile shape.
- Fast math. With bf16 data (half the bytes of fp32 per element) the arithmetic, not
  memory traffic, comes close to limiting the kernel. cuTile has faster, slightly less
  exact forms: `flush_to_zero=True` on ct.exp2 and ct.truediv (results too small for a
  normal float become 0) and `rounding_mode=ct.RoundingMode.APPROX` for the division
  (within a few units in the last place of fp32, far finer than the course's
  tolerances). They would go in TODO 2's formula: time whether they help.
"""

import cuda.tile as ct
import torch

__all__ = ["fused_gelu"]


# >>> tuned: blocks per SM (see "Making it fast")
@ct.kernel(occupancy=8)
# --- plain
# @ct.kernel
# <<<
def fused_gelu_kernel(
    x, weight, bias, out,
    TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
):
    tiles_n = ct.cdiv(x.shape[1], TILE_N)
    bid_m = ct.bid(0) // tiles_n  # tiles numbered row by row: see the docstring
    bid_n = ct.bid(0) % tiles_n

    # Step 1: Load this block's x tile [TILE_M, TILE_N] and the matching [TILE_N]
    #   tiles of weight and bias, padding lanes outside the arrays with zeros, and
    #   convert all three to fp32.
    #   Hint: ct.load(array, index=(bid_m, bid_n), shape=(TILE_M, TILE_N),
    #   padding_mode=ct.PaddingMode.ZERO), tile.astype(ct.float32).
    # >>> solution
    zero = ct.PaddingMode.ZERO
    xt = ct.load(x, index=(bid_m, bid_n), shape=(TILE_M, TILE_N), padding_mode=zero)
    xt = xt.astype(ct.float32)
    w = ct.load(weight, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    b = ct.load(bias, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    # --- exercise
    # xt = ...
    # w = ...
    # b = ...
    # <<<

    # Step 2: Compute z = x * w + b (w and b broadcast over the rows), then
    #   y = GELU_tanh(z) in its sigmoid form from the module docstring.
    #   Hint: [None, :] (or plain broadcasting); exp(x) = exp2(x * log2(e)), ct.exp2.
    # >>> solution
    z = xt * w[None, :] + b[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)  # the constant is sqrt(2/pi)
    # >>> tuned
    # The fast forms: flush tiny results to zero, approximate division.
    e = ct.exp2(u * (-2.0 * 1.4426950408889634), flush_to_zero=True)  # exp(-2u)
    y = ct.truediv(z, 1.0 + e, rounding_mode=ct.RoundingMode.APPROX, flush_to_zero=True)
    # --- plain
    # e = ct.exp2(u * (-2.0 * 1.4426950408889634))  # exp(-2u)
    # y = z / (1.0 + e)
    # <<<
    # --- exercise
    # y = ...
    # <<<

    # Step 3: Cast y to the output's dtype and store it into this block's tile of
    #   out (lanes outside out are dropped).
    #   Hint: out.dtype, tile.astype, ct.store(array, index=(...), tile=...).
    # >>> solution
    ct.store(out, index=(bid_m, bid_n), tile=y.astype(out.dtype))
    # --- exercise
    # out_tile = ...
    # ...  # store the result into out, in out's dtype
    # <<<


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    # >>> tuned: tile shape (see "Making it fast")
    # Wide, short tiles with occupancy=8 on the kernel: 4 KiB of fp32, 16 KiB of bf16. The
    # 16-bit tile holds twice as many values as the fp32 one; larger fp32 tiles gained
    # nothing (BENCHMARKS.md, the tuning sweep).
    TILE_M, TILE_N = (1, 1024) if x.element_size() == 4 else (4, 2048)
    # --- plain
    # TILE_M, TILE_N = 64, 64
    # <<<
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(
        torch.cuda.current_stream(), grid, fused_gelu_kernel,
        (x, weight, bias, out, TILE_M, TILE_N),
    )
    return out
