"""A wasteful but right vector add: twice as many programs as tiles, program p and program
p + tiles both computing and storing tile p. Two programs of one launch store every element,
but the same value: on a GPU whichever store lands last, the output is the same, so this is
no race. The grader notes the shared stores under a failing case only; every case passes.

expect: PASS
points: 10
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    tiles = tl.cdiv(n_elements, BLOCK_SIZE)
    pid = tl.program_id(axis=0) % tiles  # the second half of the grid repeats the first
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements

    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return x + y for two 1-D tensors of the same shape and dtype."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    BLOCK_SIZE = 1024
    grid = (2 * triton.cdiv(n_elements, BLOCK_SIZE),)
    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return out
