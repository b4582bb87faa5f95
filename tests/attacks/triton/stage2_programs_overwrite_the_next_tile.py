"""Each program first stores zeros over the next program's tile, then its own right values
over its own tile: right only when the programs run one after another, in ascending order,
as the CPU's interpreter runs them (each zeroed tile is stored again, rightly, by its owner,
which runs later). On a GPU the programs of a launch run at once and in no set order: a
program that finishes before its predecessor stores the zeros loses its tile to them, and
the output holds zeros wherever that happened (a write-write race).

The watch of the loads and stores saw elements that two programs stored, but only noted it
("overlap"): the case passed on the CPU. Now each element keeps the bits its first program's
stores left, and a store of other bits by another program of the launch fails the case at its
line, as a read-after-write race does. The cases of one tile (M = N = 1) have no next
program to clear and pass.

expect: FAIL
points: 2.73
message: its programs race
message: stored a different value to in the same launch
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

    # The next program's tile, "cleared" first: it stores its own values later, in order.
    nxt = pid + 1
    nrows = (nxt // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    ncols = (nxt % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = (nrows[:, None] < M) & (ncols[None, :] < N)
    nptrs = out_ptr + nrows[:, None] * stride_om + ncols[None, :] * stride_on
    tl.store(nptrs, tl.zeros((BLOCK_M, BLOCK_N), tl.float32).to(out_ptr.dtype.element_ty),
             mask=nmask)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    mask = (rows[:, None] < M) & col_mask[None, :]
    x_ptrs = x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn
    x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    z = x * w[None, :] + b[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    y = z / (1.0 + tl.exp2(u * (-2.0 * 1.4426950408889634)))
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
