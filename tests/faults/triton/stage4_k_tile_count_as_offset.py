"""Counts the loop over K in tiles (range(tl.cdiv(K, BLOCK_K))) while the mask takes that count as the step's start in K: K - k0 keeps every lane of the last K tile.

expect: FAIL
message: reads 17 elements past the end of `a`
message: this line has a mask
mistake: k_mask_past_k
line: 54
(Its loads are those of stage4_k_mask_without_k0 for every K: K - t >= BLOCK_K in each tile
t past the first, so both keep every lane, read the same elements past K, and get the same
report; no experiment on what the kernel does can tell the two apart.)
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
    # TUNE: the program order's own parameters, if it has any
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

    # The running sum of this C tile stays in fp32 whatever the input dtype.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(tl.cdiv(K, BLOCK_K)):
        # Step 2: Load the current A and B tiles. Mask rows past M, columns past N
        #   and K lanes past K; masked lanes read 0.0 so they add nothing.
        #   Hint: tl.load(ptrs, mask=..., other=0.0), compare offs_k against K - k0.
        k_mask = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)

        # Step 3: Multiply the tiles and add into acc (fp32 accumulation; fp32
        #   inputs run as tf32), then move both pointer tiles BLOCK_K along K.
        #   Hint: tl.dot with acc as its accumulator argument and input_precision="tf32";
        #   stride_ak, stride_bk.
        acc = tl.dot(a, b, acc, input_precision="tf32")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # Step 4: Cast the finished tile to C's dtype and store it, masked to the
    #   rows < M and columns < N.
    #   Hint: c_ptr.dtype.element_ty, tl.store(..., mask=...).
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# TUNE: a persistent kernel through tensor descriptors, for Hopper and later


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # TUNE: tile shape, warps and pipeline depth (see "Making it fast")
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
    options = {}  # Triton's default warps and pipeline stages
    # Triton's CPU interpreter keeps bf16 values as raw 16-bit integers and cannot feed
    # them to tl.dot, so there A and B go in as fp32 copies (exact: every bf16 value is an
    # fp32 value) and C stays bf16. On a GPU, bf16 goes to tl.dot as is.
    interpreting = not a.is_cuda or os.environ.get("TRITON_INTERPRET", "0") == "1"
    if interpreting and a.dtype == torch.bfloat16:
        a, b = a.float(), b.float()
    # TUNE: on Hopper and later, the persistent kernel through tensor descriptors
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, **options,
    )
    return c
