"""Writes GELU's constant as sqrt(2 * pi) = 2.5066 instead of sqrt(2 / pi) = 0.79788.

expect: FAIL
message: mismatch
message: the constant sqrt(2 pi) = 2.5066 where sqrt(2/pi) = 0.79788 belongs
cause: gelu_constant
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
    pid_m = pid // tiles_n  # tiles numbered row by row: see the docstring
    pid_n = pid % tiles_n

    # Step 1: Compute this program's row offsets and column offsets, and the 2-D mask
    #   of lanes that lie inside the [M, N] matrix.
    #   Hint: tl.arange, broadcasting with [:, None] and [None, :], combine with &.
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    mask = (rows[:, None] < M) & col_mask[None, :]

    # Step 2: Load the x tile and this tile's slice of weight and bias, all as fp32.
    #   Hint: pointer tile x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn,
    #   tl.load(..., mask=..., other=0.0), .to(tl.float32).
    x_ptrs = x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn
    x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)

    # Step 3: Compute z = x * w + b (w and b broadcast over the rows), then
    #   GELU_tanh(z) in its sigmoid form from the module docstring.
    #   Hint: [None, :] broadcasting, tl.exp2.
    z = x * w[None, :] + b[None, :]
    u = 2.5066282746310002 * (z + 0.044715 * z * z * z)  # the constant is sqrt(2 * pi)
    y = z / (1.0 + tl.exp2(u * (-2.0 * 1.4426950408889634)))  # exp(-2u); log2(e) = 1.44...

    # Step 4: Store y, cast to the output's dtype, into the output tile (masked).
    #   Hint: out_ptr.dtype.element_ty, tl.store(..., mask=...).
    out_ptrs = out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=mask)


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    # TUNE: tile shape (see "Making it fast")
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
