"""Cubes with `z ** 3` inside a @triton.jit helper: the interpreter runs it, no GPU compiler does.

expect: FAIL
message: a kernel does not compile; the compiler said
message: line 28
message: z ** 3
message: called from line 53
line: 28

Triton's tensors have no `**`; the compiler rejects the helper's line, and wraps that error
in one at the kernel's call of the helper, which says nothing of why. The message must show
the helper's line with the compiler's reason, and the call below it. The fix is z * z * z.
The reason is Triton's own words, which change with its version (3.9: "unsupported operand
type(s) for **"; 3.6: "'tensor' object has no attribute '__pow__'"), so the header asks for
the line as quoted.
"""

import torch
import triton
import triton.language as tl

__all__ = ["fused_gelu"]


@triton.jit
def gelu_tanh(z):
    # GELU_tanh(z) in its sigmoid form: z / (1 + exp(-2u)), u = sqrt(2/pi) (z + 0.044715 z^3)
    u = 0.7978845608028654 * (z + 0.044715 * z ** 3)
    return z / (1.0 + tl.exp2(u * (-2.0 * 1.4426950408889634)))


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
    x_ptrs = x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn
    x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    z = x * w[None, :] + b[None, :]
    y = gelu_tanh(z)
    out_ptrs = out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=mask)


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    BLOCK_M, BLOCK_N = 32, 128
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    fused_gelu_kernel[grid](
        x, weight, bias, out,
        M, N,
        x.stride(0), x.stride(1),
        out.stride(0), out.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
    )
    return out
