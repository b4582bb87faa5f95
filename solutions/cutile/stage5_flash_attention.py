"""Stage 5: FlashAttention forward, O = softmax(Q K^T * sm_scale) V, never storing N x N.

q, k, v and the output are [B, H, N, D]. Block (pid_m, bh) owns query tile pid_m,
TILE_M x D, of one (batch, head) pair and produces the matching tile of O. Loads
name a 4-D tile, (1, 1, TILE_M, D) at index (batch, head, pid_m, 0), which is then
reshaped to 2-D. The block streams over the keys and values in tiles of TILE_N rows:

    S = Q K_tile^T * scale         [TILE_M, TILE_N] scores, in registers only
    P = exp(S - running max)       unnormalised probabilities
    acc += P V_tile                [TILE_M, D] output accumulator

K^T needs no copy: `order=(0, 1, 3, 2)` makes ct.load swap the last two axes, so
the key tile arrives as [D, TILE_N], ready for ct.mma.

This is stage 3's online softmax, one row per query. Each query row keeps a running
max m_i and a running sum l_i of exp(scores - m_i). When a new key tile raises the
max from m_i to m_new, everything accumulated so far was weighted by exp(. - m_i),
so both l_i and acc are rescaled by alpha = exp(m_i - m_new) before the new tile is
added. At the end, acc / l_i is the exact softmax-weighted sum: one pass over K and
V, and memory use grows with N, not N^2. exp2 is cheaper than exp, and
exp(x) = exp2(x * log2(e)), so log2(e) is folded into the score scale once. Scores,
m_i, l_i and acc are fp32; P is cast to V's dtype for the second ct.mma.

Bounds: K and V tiles past N are padded with ZERO (a padded V row meets p = 0, and
0 * garbage could be NaN), and their scores are set to -inf from an element index
built with ct.arange, so their probability is exactly 0. Query rows past N are
computed but dropped by the store. With causal=True, query i only sees keys j <= i:
scores above the diagonal are set to -inf, and key tiles that lie entirely above
the diagonal of this query tile are not visited at all.

Layouts: q, k and v may be views. A [B, N, H, D] tensor seen as [B, H, N, D] (what a
projection followed by a transpose gives) has the rows of one head H * D elements apart,
and some heads of a larger tensor have their batches farther apart than H * N * D.
ct.load reads through the array's own strides, so the kernel needs no arithmetic of its
own for them; the wrapper hands the tensors over as they are (`.view()` refuses a view
whose strides do not allow it, and a reshape may copy).

The loop over key tiles lives in a helper, `attend_key_tiles`, which comes first in this
file (Steps 1-3: one key tile at a time), then the kernel (Steps 4-5: the Q tile and the
output). The helper takes MASKED: with MASKED=True it masks keys past N (and, with
causal=True, keys after the query); MASKED=False promises that every key it is given is
visible, so it keeps every score. The plain kernel calls it once, with MASKED=True, over
every key tile a query tile needs; query tiles are taken in order (pid_m = ct.bid(0)),
64 queries x 32 keys per tile, with the compiler's default number of blocks per SM.

The scale is positive, so max(qk) * scale is the max of the scaled scores and
qk * scale - m is one fused multiply-add per score.

Making it fast. Attention does 4 * N^2 * D FLOPs per head (half that with causal=True) on
O(N * D) bytes: compute bound, so the time goes into the two ct.mma products and the
softmax between them. What to explore, at the TUNE places:

- Masks cost time in every tile they touch, yet most key tiles need none: only the ragged
  last tile and, with causal=True, the tiles on the diagonal of the query tile. Splitting
  the loop into a MASKED=False run over the tiles that are entirely visible and a
  MASKED=True run over the rest removes the mask from nearly every tile. (Work out the
  bounds of each run, in tiles.)
- Occupancy. `@ct.kernel(occupancy=n)` asks the compiler to fit n blocks on each SM, so
  that one block's softmax overlaps with another's tensor-core work. It pays only while n
  blocks' registers fit: try it together with the tile shape, at D = 64 and D = 128.
  `kernel.replace_hints(occupancy=n)` gives a copy of a kernel with another hint, so a
  wrapper can launch different copies for different head sizes. Make each copy once, at
  module level: a copy made inside the wrapper is a new kernel on every call, prepared
  again each time.
- Tile shape. Larger tiles feed the tensor cores larger products and reload K and V fewer
  times, but the score tile and the [TILE_M, D] accumulator live in registers and spill
  when they no longer fit.
- Hints on the work itself: `flush_to_zero=True` on ct.exp2 (probabilities below 2^-126
  become 0, which changes nothing here and saves instructions), and a load's `latency=`
  hint, which tells the compiler how long to expect it to take (in its relative units) so
  that it issues the load early enough. They go in the helper's TODOs.
- Block order. With causal=True the last query tiles have the most keys to visit; which
  tiles start first decides how evenly the last wave of the launch ends.
"""

import math

import cuda.tile as ct
import torch

__all__ = ["flash_attention"]


def attend_key_tiles(
    acc, l_i, m_i, qt, k, v, batch, head, offs_m, lo, hi, n_ctx, qk_scale,
    HEAD_DIM, TILE_N, MASKED, CAUSAL,
):
    """Fold key tiles lo, lo + 1, ... < hi into one query tile's running (acc, l_i, m_i).
    MASKED=False promises that every key of these tiles is < n_ctx and visible to every
    query of the tile, so nothing is masked."""
    zero = ct.PaddingMode.ZERO
    for j in range(lo, hi):
        # Step 1: Load key tile j TRANSPOSED, as kt [HEAD_DIM, TILE_N]; key rows past N
        #   read 0.
        #   Hint: ct.load(k, index=(batch, head, 0, j), shape=(1, 1, HEAD_DIM, TILE_N),
        #   order=(0, 1, 3, 2), padding_mode=...), .reshape.
        # >>> solution
        # >>> tuned
        kt = ct.load(k, index=(batch, head, 0, j), shape=(1, 1, HEAD_DIM, TILE_N),
                     order=(0, 1, 3, 2), padding_mode=zero, latency=2).reshape((HEAD_DIM, TILE_N))
        # --- plain
        # kt = ct.load(k, index=(batch, head, 0, j), shape=(1, 1, HEAD_DIM, TILE_N),
                     # order=(0, 1, 3, 2), padding_mode=zero).reshape((HEAD_DIM, TILE_N))
        # <<<
        # --- exercise
        # kt = ...
        # <<<

        # Step 2: Compute the raw scores qk = qt @ kt in fp32 (no scale yet); if MASKED,
        #   set to -inf the scores of keys past N and, if CAUSAL, of keys after the
        #   query (key index > query index).
        #   Hint: ct.mma with a zero fp32 accumulator; the key index of each column is
        #   j * TILE_N + ct.arange(TILE_N, dtype=ct.int32), as a [1, TILE_N] row;
        #   ct.where, compare with offs_m.
        # >>> solution
        qk = ct.mma(qt, kt, ct.full((offs_m.shape[0], TILE_N), 0.0, dtype=ct.float32))
        if MASKED:
            offs_n = (j * TILE_N + ct.arange(TILE_N, dtype=ct.int32))[None, :]
            visible = offs_n < n_ctx  # [1, TILE_N]: ct.where broadcasts it over the rows
            if CAUSAL:
                visible = visible & (offs_n <= offs_m)
            qk = ct.where(visible, qk, -math.inf)
        # --- exercise
        # qk = ...
        # <<<

        # Step 3: Online softmax update on the scaled scores qk * qk_scale: the new
        #   running max per row, this tile's probabilities p, the factor alpha that
        #   rescales the old state, and the new l_i. Then load value tile j as vt
        #   [TILE_N, HEAD_DIM] (rows past N read 0; loaded only now, so that it does not
        #   hold registers during the softmax) and update acc (acc rescaled by alpha,
        #   plus p @ vt with p cast to vt's dtype), and finally m_i. The scale already
        #   holds log2(e), so use exp2.
        #   Hint: ct.max(qk, axis=1, keepdims=True), ct.maximum, ct.exp2,
        #   ct.sum(p, axis=1, keepdims=True), ct.load(v, index=(batch, head, j, 0), ...),
        #   ct.mma(x, y, acc).
        # >>> solution
        m_new = ct.maximum(m_i, ct.max(qk, axis=1, keepdims=True) * qk_scale)
        # >>> tuned
        p = ct.exp2(qk * qk_scale - m_new, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_new, flush_to_zero=True)
        # --- plain
        # p = ct.exp2(qk * qk_scale - m_new)
        # alpha = ct.exp2(m_i - m_new)
        # <<<
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        # >>> tuned
        vt = ct.load(v, index=(batch, head, j, 0), shape=(1, 1, TILE_N, HEAD_DIM),
                     padding_mode=zero, latency=4).reshape((TILE_N, HEAD_DIM))
        # --- plain
        # vt = ct.load(v, index=(batch, head, j, 0), shape=(1, 1, TILE_N, HEAD_DIM),
                     # padding_mode=zero).reshape((TILE_N, HEAD_DIM))
        # <<<
        acc = ct.mma(p.astype(vt.dtype), vt, acc * alpha)
        m_i = m_new
        # --- exercise
        # m_new = ...
        # p = ...
        # alpha = ...
        # l_i = ...
        # vt = ...
        # acc = ...
        # m_i = ...
        # <<<
    return acc, l_i, m_i


# >>> tuned: blocks per SM (see "Making it fast")
@ct.kernel(occupancy=4)
# --- plain
# @ct.kernel
# <<<
def flash_attention_kernel(
    q, k, v, out,
    qk_scale: float, H: int,
    HEAD_DIM: ct.Constant[int], TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
    CAUSAL: ct.Constant[bool],
):
    # >>> tuned: which query tile each block takes (see "Making it fast")
    # Query tiles are handed out last first: with causal=True the last ones have the
    # most keys to visit, and starting them first evens out the end of the grid.
    pid_m = ct.num_blocks(0) - 1 - ct.bid(0)
    # --- plain
    # pid_m = ct.bid(0)
    # <<<
    bh = ct.bid(1)
    batch = bh // H
    head = bh % H
    n_ctx = q.shape[2]

    # Element index of each query row of this block, as a [TILE_M, 1] column.
    offs_m = (pid_m * TILE_M + ct.arange(TILE_M, dtype=ct.int32))[:, None]

    # Step 4: Load this block's Q tile as [TILE_M, HEAD_DIM]; rows past N read 0.
    #   Hint: ct.load(q, index=(batch, head, pid_m, 0), shape=(1, 1, TILE_M, HEAD_DIM),
    #   padding_mode=...), then .reshape((TILE_M, HEAD_DIM)).
    # >>> solution
    qt = ct.load(q, index=(batch, head, pid_m, 0), shape=(1, 1, TILE_M, HEAD_DIM),
                 padding_mode=ct.PaddingMode.ZERO).reshape((TILE_M, HEAD_DIM))
    # --- exercise
    # qt = ...
    # <<<

    m_i = ct.full((TILE_M, 1), -math.inf, dtype=ct.float32)  # running row max
    l_i = ct.full((TILE_M, 1), 0.0, dtype=ct.float32)  # running row sum
    acc = ct.full((TILE_M, HEAD_DIM), 0.0, dtype=ct.float32)

    # >>> tuned: which key tiles need masks (see "Making it fast")
    # Key tiles [0, unmasked) need no mask; tiles [unmasked, hi) do. With causal=True,
    # tiles that start after this query tile's last row are not visited at all.
    if CAUSAL:
        unmasked = (pid_m * TILE_M) // TILE_N
        hi = ct.cdiv(ct.minimum(n_ctx, (pid_m + 1) * TILE_M), TILE_N)
    else:
        unmasked = n_ctx // TILE_N
        hi = ct.cdiv(n_ctx, TILE_N)
    acc, l_i, m_i = attend_key_tiles(acc, l_i, m_i, qt, k, v, batch, head, offs_m, 0, unmasked,
                                     n_ctx, qk_scale, HEAD_DIM, TILE_N, False, CAUSAL)
    acc, l_i, m_i = attend_key_tiles(acc, l_i, m_i, qt, k, v, batch, head, offs_m, unmasked, hi,
                                     n_ctx, qk_scale, HEAD_DIM, TILE_N, True, CAUSAL)
    # --- plain
    # # Every key tile this query tile needs, each one masked. With causal=True, tiles that
    # # start after this query tile's last row are not visited at all.
    # if CAUSAL:
        # hi = ct.cdiv(ct.minimum(n_ctx, (pid_m + 1) * TILE_M), TILE_N)
    # else:
        # hi = ct.cdiv(n_ctx, TILE_N)
    # acc, l_i, m_i = attend_key_tiles(acc, l_i, m_i, qt, k, v, batch, head, offs_m, 0, hi,
                                     # n_ctx, qk_scale, HEAD_DIM, TILE_N, True, CAUSAL)
    # <<<

    # Step 5: Normalise acc by the softmax sum and store it in the output dtype as
    #   tile (batch, head, pid_m, 0) of out (query rows past N are dropped).
    #   Hint: acc / l_i, .reshape((1, 1, TILE_M, HEAD_DIM)), out.dtype, ct.store.
    # >>> solution
    o = (acc / l_i).reshape((1, 1, TILE_M, HEAD_DIM)).astype(out.dtype)
    ct.store(out, index=(batch, head, pid_m, 0), tile=o)
    # --- exercise
    # o = ...
    # ...  # store o into this tile of out
    # <<<


# >>> tuned: a copy of the kernel with another occupancy hint (see "Making it fast")
# The D = 128 tile shape below leaves registers for 2 blocks per SM, not 4.
flash_attention_kernel_2_per_sm = flash_attention_kernel.replace_hints(occupancy=2)
# --- plain
# <<<


def flash_attention(q, k, v, causal=False, sm_scale=None):
    """Return softmax(q @ k^T * sm_scale [+ causal mask]) @ v for [B, H, N, D] inputs."""
    B, H, N, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    if not sm_scale > 0:
        raise ValueError(f"sm_scale must be positive (the kernel takes the row max before "
                         f"scaling), got {sm_scale}")
    out = torch.empty_like(q)
    # Fold log2(e) into the scale so the kernel can use exp2.
    qk_scale = float(sm_scale) * 1.4426950408889634
    # >>> tuned: tile shape, and which copy of the kernel runs (see "Making it fast")
    # D = 64: 64 x 64 tiles with occupancy=4 on the kernel. D = 128: 64 queries x 128 keys
    # with 2 blocks per SM, which beat 64 x 64 there (and lost to it at D = 64); 128-query
    # tiles spill at D = 128 (BENCHMARKS.md, the tuning sweep).
    if D > 64:
        TILE_M, TILE_N, kernel = 64, 128, flash_attention_kernel_2_per_sm
    else:
        TILE_M, TILE_N, kernel = 64, 64, flash_attention_kernel
    # --- plain
    # TILE_M, TILE_N = 64, 32
    # kernel = flash_attention_kernel
    # <<<
    grid = (ct.cdiv(N, TILE_M), B * H)
    ct.launch(
        torch.cuda.current_stream(), grid, kernel,
        (q, k, v, out, qk_scale, H, D, TILE_M, TILE_N, bool(causal)),
    )
    return out
