"""A constexpr whose operators compute x + y on the host when the launch reads them.

A module global with overloaded arithmetic, handed to the kernel as BLOCK_SIZE. The
proposal holds the plain number it converts to; the replay's kernel stores nothing.

expect: FAIL
message: no store reached any element
rules: relaxed
"""

import torch
import triton
import triton.language as tl

_work = []


class Sneaky(int):
    def __index__(self):
        for x, y, out in _work:
            out.copy_(x + y)
        return int.__int__(self)

    __int__ = __index__

    def __hash__(self):
        self.__index__()
        return int.__hash__(self)


BLOCK = Sneaky(1024)


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _work[:] = [(x, y, out)]
    vector_add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(),
                                                          BLOCK_SIZE=BLOCK)
    return out
