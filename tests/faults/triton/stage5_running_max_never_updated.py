"""Never sets the running maximum to the new one (`m_i = m_new` left out): m_i stays -inf.

expect: FAIL
message: the output is attention over the keys of the last key tile each query visits alone
message: the running maximum m_i stays at its first value, -inf
cause: last_key_tile
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

        # Step 1: Load this tile of keys TRANSPOSED, as kt [D, BLOCK_N], and the tile of
        #   values v [BLOCK_N, D] (D: the head dimension, the length of offs_d). If
        #   MASKED, key rows past N_CTX read 0; otherwise (MASKED=False, see the module
        #   docstring) every row is in bounds, so load without a mask.
        #   Hint: swap the roles of [:, None] and [None, :] to load K^T;
        #   tl.load(ptrs, mask=..., other=0.0) or tl.load(ptrs).
        kt_ptrs = k_base + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd
        v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
        if MASKED:
            kt = tl.load(kt_ptrs, mask=offs_n[None, :] < N_CTX, other=0.0)
            v = tl.load(v_ptrs, mask=offs_n[:, None] < N_CTX, other=0.0)
        else:
            kt = tl.load(kt_ptrs)
            v = tl.load(v_ptrs)

        # Step 2: Compute the scores s = (q @ kt) * qk_scale in fp32, then, if MASKED,
        #   set to -inf the scores of keys past N_CTX and, if IS_CAUSAL, of keys after
        #   the query (key j > query i).
        #   Hint: tl.dot, tl.where, compare offs_n[None, :] with offs_m[:, None].
        s = tl.dot(q, kt) * qk_scale
        if MASKED:
            visible = offs_n[None, :] < N_CTX
            if IS_CAUSAL:
                visible = visible & (offs_n[None, :] <= offs_m[:, None])
            s = tl.where(visible, s, float("-inf"))

        # Step 3: Online softmax update: the new running max per row, the factor alpha
        #   that rescales the old state, this tile's probabilities p, then the new l_i
        #   and acc (acc rescaled by alpha, plus p @ v with p cast to v's dtype), and
        #   finally m_i. The scale already holds log2(e), so use exp2.
        #   Hint: tl.max(s, axis=1), tl.maximum, tl.exp2, tl.sum(p, axis=1), [:, None], tl.dot.
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
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

    # Step 4: Load this program's Q tile [BLOCK_M, HEAD_DIM]; rows past N_CTX read 0.
    #   Hint: pointer tile from offs_m and offs_d with the q strides, tl.load(mask=..., other=0.0).
    q_ptrs = q_base + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd
    q = tl.load(q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)

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

    # Step 5: Normalise acc by the softmax sum and store the O tile in the output
    #   dtype, only for query rows < N_CTX.
    #   Hint: l_i[:, None], o_ptr.dtype.element_ty, tl.store(..., mask=...).
    out = acc / l_i[:, None]
    o_ptrs = o_base + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


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
