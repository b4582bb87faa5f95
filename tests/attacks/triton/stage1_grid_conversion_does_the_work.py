"""A grid object whose integer conversion computes x + y on the host.

The launch's grid is read as integers in the child; what the conversion did there is not
in the proposal. The replay runs a kernel that stores nothing.

expect: FAIL
message: no store reached any element
rules: relaxed
"""

import torch
import triton
import triton.language as tl


class Programs(int):
    def __new__(cls, value, work):
        self = super().__new__(cls, value)
        self.work = work
        return self

    def __index__(self):
        x, y, out = self.work
        out.copy_(x + y)
        return int.__int__(self)

    __int__ = __index__


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (Programs(triton.cdiv(out.numel(), 1024), (x, y, out)),)
    vector_add_kernel[grid](x, y, out, out.numel(), BLOCK_SIZE=1024)
    return out
