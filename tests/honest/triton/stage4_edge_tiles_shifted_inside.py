"""A right matmul whose edge tiles are shifted back inside the matrix instead of hanging over
its edge: the last tile along M starts at M - BLOCK_M (and likewise along N) wherever the
matrix is at least one tile wide, so its loads and stores stay whole, and it overlaps the
tile before it. Two programs store the elements of the overlap, each the full dot product of
the same row of A and column of B over the same K steps; on a GPU an MMA computes an element
the same way wherever it sits in the tile, so both stores carry the same bits and whichever
lands last, the output is the same. (Masks stay for matrices narrower than one tile.)

On the CPU the interpreter's tl.dot is numpy's matmul, whose BLAS kernels round an element
differently depending on where it sits in the tile (its row within a block of rows): the
two programs' values for one element differ in the last bit, and the write-write race check
(grader/replay/races.py) fails every case with an overlap. This kernel must earn every point.

expect: PASS
points: 25
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
):
    pid = tl.program_id(axis=0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n

    # the edge tile shifted back so that it ends at the edge (never before 0)
    start_m = tl.maximum(tl.minimum(pid_m * BLOCK_M, M - BLOCK_M), 0)
    start_n = tl.maximum(tl.minimum(pid_n * BLOCK_N, N - BLOCK_N), 0)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32
    # As the handout's skeleton does: the interpreter cannot feed bf16 to tl.dot.
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
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
    )
    return c
