"""Keeps the accumulator of a float16 matmul in float16 (`tl.dot(..., out_dtype=tl.float16)`)
and takes all of K in one `tl.dot` (BLOCK_K as deep as K, up to 4096). Triton's interpreter
computed that dot with numpy, which sums the whole K in float32 and rounds once, so the
case built to catch a 16-bit accumulator (M = N = 32, K = 4096, float16) passed. On a GPU
the dot is split into MMA instructions 16 deep in K, and a float16 accumulator is rounded
after each: the error grows with K (if the 32 x 4096 tiles fit at all). The replay now
rounds a float16 accumulator every 16 of K as the GPU does, and the case fails with its
cause confirmed.

expect: FAIL
points: 22.73
message: running sum kept in float16
"""

import os

import torch
import triton
import triton.language as tl

__all__ = ["matmul"]


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    HALF: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    # TUNE: the order in which programs take the tiles of C (see "Making it fast")
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // tiles_n  # row by row
    pid_n = pid % tiles_n

    # Step 1: Compute the row offsets (in M), column offsets (in N) and K offsets of
    #   the first step, and the pointer tiles of A [BLOCK_M, BLOCK_K] and
    #   B [BLOCK_K, BLOCK_N], using the strides.
    #   Hint: tl.arange, broadcasting with [:, None] and [None, :].
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    if HALF:  # float16 inputs: a float16 accumulator, all of K in one tl.dot
        k_mask = offs_k < K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc=tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16),
                     out_dtype=tl.float16).to(tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            k_mask = offs_k < K - k0
            a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
            acc += tl.dot(a, b, input_precision="tf32")
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk

    # Step 4: Cast the finished tile to C's dtype and store it, masked to the
    #   rows < M and columns < N.
    #   Hint: c_ptr.dtype.element_ty, tl.store(..., mask=...).
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # TUNE: tile shape, warps and pipeline depth (see "Making it fast")
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
    half = a.dtype == torch.float16
    if half:  # the whole of K in one step
        BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, max(16, triton.next_power_of_2(K))
    options = {}  # Triton's default warps and pipeline stages
    # Triton's CPU interpreter keeps bf16 values as raw 16-bit integers and cannot feed
    # them to tl.dot, so there A and B go in as fp32 copies (exact: every bf16 value is an
    # fp32 value) and C stays bf16. On a GPU, bf16 goes to tl.dot as is.
    interpreting = not a.is_cuda or os.environ.get("TRITON_INTERPRET", "0") == "1"
    if interpreting and a.dtype == torch.bfloat16:
        a, b = a.float(), b.float()
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, HALF=half, **options,
    )
    return c
