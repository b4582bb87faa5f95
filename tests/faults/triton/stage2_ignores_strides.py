"""Ignores x's strides: addresses x as if it were a contiguous row-major M x N matrix.

expect: FAIL
message: layout=transposed
message: layout=sliced
passes: layout=contiguous
cause: strides

The pointer tile is built as `rows * N + cols`, which is only right when x's rows are N
elements apart and its columns adjacent. The lesson promises that any layout works, so
the kernel must use the strides it is given (a transposed or sliced x has others).
"""

import torch
import triton
import triton.language as tl

__all__ = ["fused_gelu"]


@triton.jit
def fused_gelu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N,
    stride_xm, stride_xn,
    stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    mask = (rows[:, None] < M) & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    z = x * w[None, :] + b[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    y = z / (1.0 + tl.exp2(u * (-2.0 * 1.4426950408889634)))
    out_ptrs = out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=mask)


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    BLOCK_M, BLOCK_N = 64, 64
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    fused_gelu_kernel[grid](
        x, weight, bias, out,
        M, N,
        x.stride(0), x.stride(1),
        out.stride(0), out.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
    )
    return out
