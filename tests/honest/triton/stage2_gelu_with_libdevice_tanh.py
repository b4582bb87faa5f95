"""An honest fused bias+GELU whose tanh is CUDA's libdevice, as a GPU programmer who knows
it writes: 0.5 * z * (1 + libdevice.tanh(u)) instead of the sigmoid form of the skeleton.

Triton's interpreter runs no libdevice function (the backend-neutral module's are empty
stand-ins a GPU compiler replaces), so this kernel once failed every case on the CPU at its
tanh line, with "unsupported operand type(s) for +: 'float' and 'NoneType'", while a GPU
runs it. The grader computes libdevice's functions while it interprets a launch
(grader/languages/triton/libdevice.py): every case passes, as on a GPU.

expect: PASS
points: 15
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

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
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)  # the constant is sqrt(2/pi)
    y = 0.5 * z * (1.0 + libdevice.tanh(u))

    # Step 4: Store y, cast to the output's dtype, into the output tile (masked).
    #   Hint: out_ptr.dtype.element_ty, tl.store(..., mask=...).
    out_ptrs = out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=mask)


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    # >>> tuned: tile shape (see "Making it fast")
    # Wide tiles: each row of a tile is 128 contiguous elements.
    BLOCK_M, BLOCK_N = 32, 128
    # --- plain
    # BLOCK_M, BLOCK_N = 64, 64
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    fused_gelu_kernel[grid](
        x, weight, bias, out,
        M, N,
        x.stride(0), x.stride(1),
        out.stride(0), out.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
    )
    return out
