"""Launches the kernel without n_elements: one argument fewer than the kernel's parameters.

expect: FAIL
message: the launch gives no value for n_elements
message: line 42
line: 42
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # Step 1: Compute the offsets of the elements this program owns, and a mask that is
    #   True only for offsets inside the vector (the last tile may hang over the end).
    #   Hint: tl.program_id(axis=0), tl.arange(0, BLOCK_SIZE).
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements

    # Step 2: Load the x and y tiles, add them, and store the sum into out. Use the
    #   mask on every memory access so tail lanes never touch memory.
    #   Hint: tl.load(ptr + offsets, mask=...), tl.store(ptr + offsets, value, mask=...).
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return x + y for two 1-D tensors of the same shape and dtype."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    BLOCK_SIZE = 256
    # Step 3: Compute the 1-D launch grid: one program per tile, the last tile
    #   possibly partial, so round the division UP.
    #   Hint: triton.cdiv.
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    vector_add_kernel[grid](x, y, out, BLOCK_SIZE=BLOCK_SIZE)
    return out
