"""Gives the scores its masks switch off 0.0 instead of -inf: ct.where(visible, qk, 0.0).

expect: FAIL
message: a masked score must be -inf
message: also counts the padding of the last key tile
message: with a score of -inf (a score of 0 still takes its share exp(0 - max))
cause: padded_keys
cause: mask_value
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
        kt = ct.load(k, index=(batch, head, 0, j), shape=(1, 1, HEAD_DIM, TILE_N),
                     order=(0, 1, 3, 2), padding_mode=zero).reshape((HEAD_DIM, TILE_N))

        # Step 2: Compute the raw scores qk = qt @ kt in fp32 (no scale yet); if MASKED,
        #   set to -inf the scores of keys past N and, if CAUSAL, of keys after the
        #   query (key index > query index).
        #   Hint: ct.mma with a zero fp32 accumulator; the key index of each column is
        #   j * TILE_N + ct.arange(TILE_N, dtype=ct.int32), as a [1, TILE_N] row;
        #   ct.where, compare with offs_m.
        qk = ct.mma(qt, kt, ct.full((offs_m.shape[0], TILE_N), 0.0, dtype=ct.float32))
        if MASKED:
            offs_n = (j * TILE_N + ct.arange(TILE_N, dtype=ct.int32))[None, :]
            visible = offs_n < n_ctx  # [1, TILE_N]: ct.where broadcasts it over the rows
            if CAUSAL:
                visible = visible & (offs_n <= offs_m)
            qk = ct.where(visible, qk, 0.0)

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
        m_new = ct.maximum(m_i, ct.max(qk, axis=1, keepdims=True) * qk_scale)
        p = ct.exp2(qk * qk_scale - m_new)
        alpha = ct.exp2(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        vt = ct.load(v, index=(batch, head, j, 0), shape=(1, 1, TILE_N, HEAD_DIM),
                     padding_mode=zero).reshape((TILE_N, HEAD_DIM))
        acc = ct.mma(p.astype(vt.dtype), vt, acc * alpha)
        m_i = m_new
    return acc, l_i, m_i


# TUNE: blocks per SM (see "Making it fast")
@ct.kernel
def flash_attention_kernel(
    q, k, v, out,
    qk_scale: float, H: int,
    HEAD_DIM: ct.Constant[int], TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
    CAUSAL: ct.Constant[bool],
):
    # TUNE: which query tile each block takes (see "Making it fast")
    pid_m = ct.bid(0)
    bh = ct.bid(1)
    batch = bh // H
    head = bh % H
    n_ctx = q.shape[2]

    # Element index of each query row of this block, as a [TILE_M, 1] column.
    offs_m = (pid_m * TILE_M + ct.arange(TILE_M, dtype=ct.int32))[:, None]

    # Step 4: Load this block's Q tile as [TILE_M, HEAD_DIM]; rows past N read 0.
    #   Hint: ct.load(q, index=(batch, head, pid_m, 0), shape=(1, 1, TILE_M, HEAD_DIM),
    #   padding_mode=...), then .reshape((TILE_M, HEAD_DIM)).
    qt = ct.load(q, index=(batch, head, pid_m, 0), shape=(1, 1, TILE_M, HEAD_DIM),
                 padding_mode=ct.PaddingMode.ZERO).reshape((TILE_M, HEAD_DIM))

    m_i = ct.full((TILE_M, 1), -math.inf, dtype=ct.float32)  # running row max
    l_i = ct.full((TILE_M, 1), 0.0, dtype=ct.float32)  # running row sum
    acc = ct.full((TILE_M, HEAD_DIM), 0.0, dtype=ct.float32)

    # TUNE: which key tiles need masks (see "Making it fast")
    # Every key tile this query tile needs, each one masked. With causal=True, tiles that
    # start after this query tile's last row are not visited at all.
    if CAUSAL:
        hi = ct.cdiv(ct.minimum(n_ctx, (pid_m + 1) * TILE_M), TILE_N)
    else:
        hi = ct.cdiv(n_ctx, TILE_N)
    acc, l_i, m_i = attend_key_tiles(acc, l_i, m_i, qt, k, v, batch, head, offs_m, 0, hi,
                                     n_ctx, qk_scale, HEAD_DIM, TILE_N, True, CAUSAL)

    # Step 5: Normalise acc by the softmax sum and store it in the output dtype as
    #   tile (batch, head, pid_m, 0) of out (query rows past N are dropped).
    #   Hint: acc / l_i, .reshape((1, 1, TILE_M, HEAD_DIM)), out.dtype, ct.store.
    o = (acc / l_i).reshape((1, 1, TILE_M, HEAD_DIM)).astype(out.dtype)
    ct.store(out, index=(batch, head, pid_m, 0), tile=o)


# TUNE: a copy of the kernel with another occupancy hint (see "Making it fast")


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
    # TUNE: tile shape, and which copy of the kernel runs (see "Making it fast")
    TILE_M, TILE_N = 64, 32
    kernel = flash_attention_kernel
    grid = (ct.cdiv(N, TILE_M), B * H)
    ct.launch(
        torch.cuda.current_stream(), grid, kernel,
        (q, k, v, out, qk_scale, H, D, TILE_M, TILE_N, bool(causal)),
    )
    return out
