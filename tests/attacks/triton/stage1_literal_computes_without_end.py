"""A constant whose reading would compute without end: `round(1, -(1 << 4000))`.

round of an integer to -d digits computes 10**d, and d here has 1205 decimal digits: the
grader, reading the constant as data, would never finish (loading the stage was stopped
only by its time limit). Reading a constant has a cost bound: round's digits are bounded as
the size of an integer, a power and a shift are. Refused at once, at its line.

expect: FAIL
points: 0
message: line 17: `ROUNDED = round(1, -(1 << 4000))`: round's digits are at most 1300 in a constant
"""

import torch
import triton
import triton.language as tl

ROUNDED = round(1, -(1 << 4000))


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE) + ROUNDED
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    return out
