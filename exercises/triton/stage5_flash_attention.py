"""Stage 5: FlashAttention forward, O = softmax(Q K^T * sm_scale) V, never storing N x N.

q, k, v and the output are [B, H, N, D]. Program (pid_m, bh) owns a BLOCK_M x D tile
of queries of one (batch, head) pair and produces the matching tile of O. It
streams over the keys and values in tiles of BLOCK_N rows:

    S = Q K_tile^T * scale         [BLOCK_M, BLOCK_N] scores, in registers only
    P = exp(S - running max)       unnormalised probabilities
    acc += P V_tile                [BLOCK_M, D] output accumulator

This is stage 3's online softmax, one row per query. Each query row keeps a running
max m_i and a running sum l_i of exp(scores - m_i). When a new key tile raises the
max from m_i to m_new, everything accumulated so far was weighted by exp(. - m_i),
so both l_i and acc are rescaled by alpha = exp(m_i - m_new) before the new tile is
added. At the end, acc / l_i is the exact softmax-weighted sum: one pass over K and
V, and memory use grows with N, not N^2.

exp2 is cheaper than exp on the GPU. exp(x) = exp2(x * log2(e)), so log2(e) is
folded into the score scale once and exp2 is used throughout. Scores, m_i, l_i and
acc are fp32; P is cast to V's dtype for the second tensor-core product.

Masks: key columns >= N get a score of -inf (their probability is exactly 0), and
query rows >= N are computed but never stored. With causal=True, query i only sees
keys j <= i: scores above the diagonal are set to -inf, and key tiles that lie
entirely above the diagonal of this query tile are not visited at all.

Layouts: q, k and v may be views. A [B, N, H, D] tensor seen as [B, H, N, D] (what a
projection followed by a transpose gives) has the rows of one head H * D elements apart,
and some heads of a larger tensor have their batches farther apart than H * N * D. Every
address is base + index * stride, with the strides the wrapper passes; never N, D or H
in a stride's place.

The loop over key tiles lives in a helper, `attend_key_tiles`, which comes first in this
file (Steps 1-3: one key tile at a time), then the kernel (Steps 4-5: the Q tile and the
output). The helper takes MASKED: with MASKED=True it masks keys past N (and, with
causal=True, keys after the query); MASKED=False promises that every key it is given is
visible, so it loads and keeps every score without a mask. The plain kernel calls it once,
with MASKED=True, over every key tile a query tile needs; query tiles are taken in order
(pid_m = program id), 64 queries x 32 keys per tile, Triton's default warps and stages.

Making it fast. Attention does 4 * N^2 * D FLOPs per head (half that with causal=True) on
O(N * D) bytes: compute bound, so the time goes into the two tensor-core products and the
softmax between them. What to explore, at the TUNE places:

- Masks cost time in every tile they touch, yet most key tiles need none: only the ragged
  last tile (N not a multiple of BLOCK_N) and, with causal=True, the tiles on the diagonal
  of the query tile. Splitting the loop into a MASKED=False run over the tiles that are
  entirely visible and a MASKED=True run over the rest removes the mask from nearly every
  tile. (Work out the bounds of each run, in whole key tiles.)
- Tile shape. Larger tiles feed the tensor cores larger products and reload K and V fewer
  times, but the score tile [BLOCK_M, BLOCK_N] and the accumulator [BLOCK_M, D] live in
  registers: at D = 128 they run out sooner than at D = 64 and then spill. Try shapes for
  both head sizes.
- Warps and pipeline stages (`num_warps`, `num_stages` at the launch): how a tile's work is
  spread over threads and how many K/V loads are in flight, in shared memory.
- How K and V tiles arrive (Hopper and later). A tensor descriptor (tl.make_tensor_descriptor:
  a tensor's base, shape and strides, and the tile shape) lets the GPU's tensor-memory
  accelerator copy a whole tile into shared memory in one instruction, rows past the end
  read as 0, instead of every thread computing addresses and loading its share. It frees
  the warps for the products, which pays when tiles are large: try it with larger tiles and
  more warps at D = 128. The kernel takes KV_DESCRIPTORS for this (False: pointers, as in
  Step 1); descriptors made inside a kernel need scratch memory, which the wrapper hands
  Triton with triton.set_allocator. GPUs before Hopper have no such unit: keep pointer
  loads there.
- Program order. With causal=True the last query tiles have the most keys to visit; the
  GPU starts programs roughly in order of their id, so which tiles start first decides
  how evenly the last wave of the launch ends.
- The arithmetic per score. Scaling every score and then subtracting the row max is two
  operations per score. The scale is positive, so max(s) * scale is the max of the scaled
  scores, and exp2(s * scale - m) is one fused multiply-add per score. It goes in the
  helper's TODOs (Steps 2 and 3).
"""

import math
import os

import torch
import triton
import triton.language as tl

__all__ = ["flash_attention"]


@triton.jit
def attend_key_tiles(
    acc, l_i, m_i, q, k_base, v_base, offs_m, offs_d, lo, hi, N_CTX, qk_scale,
    stride_kn, stride_kd, stride_vn, stride_vd,
    BLOCK_N: tl.constexpr, MASKED: tl.constexpr, IS_CAUSAL: tl.constexpr,
    KV_DESCRIPTORS: tl.constexpr,
):
    """Fold the key tiles starting at lo, lo + BLOCK_N, ... < hi into one query tile's
    running (acc, l_i, m_i). MASKED=False promises that every key of these tiles is < N_CTX
    and visible to every query of the tile, so nothing is masked. KV_DESCRIPTORS is False
    in the plain kernel (k_base and v_base are pointers); see "Making it fast"."""
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)  # key rows of this tile

        # TODO 1: Load this tile of keys TRANSPOSED, as kt [D, BLOCK_N], and the tile of
        #   values v [BLOCK_N, D] (D: the head dimension, the length of offs_d). If
        #   MASKED, key rows past N_CTX read 0; otherwise (MASKED=False, see the module
        #   docstring) every row is in bounds, so load without a mask.
        #   Hint: swap the roles of [:, None] and [None, :] to load K^T;
        #   tl.load(ptrs, mask=..., other=0.0) or tl.load(ptrs).
        kt = ...
        v = ...

        # TODO 2: Compute the scores s = (q @ kt) * qk_scale in fp32, then, if MASKED,
        #   set to -inf the scores of keys past N_CTX and, if IS_CAUSAL, of keys after
        #   the query (key j > query i).
        #   Hint: tl.dot, tl.where, compare offs_n[None, :] with offs_m[:, None].
        s = ...

        # TODO 3: Online softmax update: the new running max per row, the factor alpha
        #   that rescales the old state, this tile's probabilities p, then the new l_i
        #   and acc (acc rescaled by alpha, plus p @ v with p cast to v's dtype), and
        #   finally m_i. The scale already holds log2(e), so use exp2.
        #   Hint: tl.max(s, axis=1), tl.maximum, tl.exp2, tl.sum(p, axis=1), [:, None], tl.dot.
        m_new = ...
        alpha = ...
        p = ...
        l_i = ...
        acc = ...
        m_i = ...
    return acc, l_i, m_i


@triton.jit
def flash_attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,
    H, N_CTX, qk_scale,
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_on, stride_od,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    IS_CAUSAL: tl.constexpr, KV_DESCRIPTORS: tl.constexpr = False,
):
    # TUNE: which query tile each program takes (see "Making it fast")
    pid_m = tl.program_id(axis=0)
    bh = tl.program_id(axis=1)
    batch = bh // H
    head = bh % H
    q_base = q_ptr + batch * stride_qb + head * stride_qh
    k_base = k_ptr + batch * stride_kb + head * stride_kh
    v_base = v_ptr + batch * stride_vb + head * stride_vh
    o_base = o_ptr + batch * stride_ob + head * stride_oh
    # TUNE: how K and V tiles are loaded (see "Making it fast")

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # query rows of this program
    offs_d = tl.arange(0, HEAD_DIM)

    # TODO 4: Load this program's Q tile [BLOCK_M, HEAD_DIM]; rows past N_CTX read 0.
    #   Hint: pointer tile from offs_m and offs_d with the q strides, tl.load(mask=..., other=0.0).
    q = ...

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)  # running row max
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)  # running row sum
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    # TUNE: which key tiles need masks (see "Making it fast")
    # Every key tile this query tile needs, each one masked. With causal=True the keys
    # after the query tile's last row are all masked, so the loop stops before them.
    if IS_CAUSAL:
        hi = tl.minimum(N_CTX, (pid_m + 1) * BLOCK_M)
    else:
        hi = N_CTX
    acc, l_i, m_i = attend_key_tiles(
        acc, l_i, m_i, q, k_base, v_base, offs_m, offs_d, 0, hi, N_CTX, qk_scale,
        stride_kn, stride_kd, stride_vn, stride_vd,
        BLOCK_N, True, IS_CAUSAL, KV_DESCRIPTORS,  # MASKED=True
    )

    # TODO 5: Normalise acc by the softmax sum and store the O tile in the output
    #   dtype, only for query rows < N_CTX.
    #   Hint: l_i[:, None], o_ptr.dtype.element_ty, tl.store(..., mask=...).
    out = ...
    ...  # store out into o, masked to the rows that exist


def flash_attention(q, k, v, causal=False, sm_scale=None):
    """Return softmax(q @ k^T * sm_scale [+ causal mask]) @ v for [B, H, N, D] inputs."""
    B, H, N, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    if not sm_scale > 0:
        raise ValueError(f"sm_scale must be positive (the kernel may take the row max before "
                         f"scaling), got {sm_scale}")
    out = torch.empty_like(q)
    # Fold log2(e) into the scale so the kernel can use exp2.
    qk_scale = float(sm_scale) * 1.4426950408889634
    # TUNE: tile shape, warps, pipeline depth, how K and V are loaded (see "Making it fast")
    BLOCK_M, BLOCK_N = 64, 32
    options = {}  # Triton's default warps and pipeline stages
    # Triton's CPU interpreter keeps bf16 values as raw 16-bit integers and cannot feed
    # them to tl.dot, so there q, k and v go in as fp32 copies (exact: every bf16 value
    # is an fp32 value) and out stays bf16. On a GPU, bf16 goes to tl.dot as is.
    interpreting = not q.is_cuda or os.environ.get("TRITON_INTERPRET", "0") == "1"
    if interpreting and q.dtype == torch.bfloat16:
        q, k, v = q.float(), k.float(), v.float()
    grid = (triton.cdiv(N, BLOCK_M), B * H)
    flash_attention_kernel[grid](
        q, k, v, out,
        H, N, qk_scale,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3),
        k.stride(0), k.stride(1), k.stride(2), k.stride(3),
        v.stride(0), v.stride(1), v.stride(2), v.stride(3),
        out.stride(0), out.stride(1), out.stride(2), out.stride(3),
        HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, IS_CAUSAL=causal, **options,
    )
    return out
