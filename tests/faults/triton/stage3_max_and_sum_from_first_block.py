"""Takes the first pass's column offsets without the block's start (cols = tl.arange(0, BLOCK_N)): the max and the sum see the first block at every step.

expect: FAIL
message: with N within one column block your kernel is right
message: the fault comes with the loop across column blocks
cause: across_tiles
cause: row_normalisation
(Where fewer than half the elements are wrong, N = 40000, the rows are only seen to be scaled.)
"""

import torch
import triton
import triton.language as tl

__all__ = ["softmax"]


@triton.jit
def softmax_kernel(
    x_ptr, out_ptr,
    n_cols,
    stride_xm, stride_xn,
    stride_om, stride_on,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * stride_xm
    out_row = out_ptr + row * stride_om

    m_i = tl.full((), float("-inf"), dtype=tl.float32)  # running max
    l_i = tl.full((), 0.0, dtype=tl.float32)  # running sum of exp(x - m_i)
    for start in range(0, n_cols, BLOCK_N):
        # Step 1: Load this column block of the row as fp32. Columns past n_cols
        #   must not read memory and must never win the max, so they read -inf.
        #   Hint: tl.arange, tl.load(..., mask=..., other=-float("inf")), .to(tl.float32).
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols * stride_xn, mask=cols < n_cols, other=-float("inf"))
        x = x.to(tl.float32)

        # Step 2: Online update: the new running max includes this block; rescale
        #   the running sum from the old max to the new one, then add this block's
        #   exp(x - new max).
        #   Hint: tl.max(x, axis=0), tl.maximum, tl.exp, tl.sum(..., axis=0).
        m_new = tl.maximum(m_i, tl.max(x, axis=0))
        l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m_i = m_new

    # Step 3: Second pass: reload each column block, normalise it with the final
    #   max and sum, and store it (masked) in the output dtype.
    #   Hint: loop over the row again; out_ptr.dtype.element_ty.
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols * stride_xn, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m_i) / l_i
        tl.store(out_row + cols * stride_on, y.to(out_ptr.dtype.element_ty), mask=mask)


# TUNE: a kernel for rows that fit one block (see "Making it fast")


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Return the softmax of a 2-D tensor over its last dimension."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    # TUNE: block width, warps and the one-block kernel (see "Making it fast")
    BLOCK_N = min(triton.next_power_of_2(N), 1024)
    options = {}  # Triton's default warps
    softmax_kernel[(M,)](
        x, out,
        N,
        x.stride(0), x.stride(1),
        out.stride(0), out.stride(1),
        BLOCK_N=BLOCK_N, **options,
    )
    return out
