"""Each program first clears the first element of the next program's tile in its odd rows,
then stores its own tile: right only when the programs run one after another, in ascending
order, as the CPU's interpreter runs them (the owner stores the cleared element again, later).
On a GPU the programs of a launch run at once and in no set order: where the next program
has already stored its tile, the zero lands after it and stays (a write-write race, as in
tests/attacks/triton/stage2_programs_overwrite_the_next_tile.py).

The clearing store does not name the next program's element: it is one 64-bit store (the
pointer cast to tl.int64) at the program's own last element of the row, whose upper four
bytes fall on the next element (the first of the next tile: with N odd, that element is odd
in an odd row, so the 8-byte store is aligned). The watch mapped each lane of a store to the
one element its address falls in, so the race table saw a store by the program to its own
element only, and the case passed. Now a lane is held against every element its bytes
cover (the width of the pointer's type: grader/replay/traffic.py `_spanned`), and the
float32 cases with N odd (N = 301, 203), the ones with such rows, fail as a race.

expect: FAIL
message: its programs race
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
    WIDE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)

    # The "clearing": 8 bytes at this tile's last element of each row, where they are aligned.
    next_col = (pid_n + 1) * BLOCK_N
    last = rows * stride_om + (next_col - 1) * stride_on  # this tile's last element of the row
    if WIDE:
        clear = (rows < M) & (last % 2 == 0) & (rows * 0 + next_col < N)
        wide = (out_ptr + last).to(tl.pointer_type(tl.int64))
        tl.store(wide, tl.zeros((BLOCK_M,), tl.int64), mask=clear)

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
        WIDE=out.element_size() == 4,  # two float32 elements in one int64
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
    )
    return out
