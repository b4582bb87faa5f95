"""The kernel's Python code is replaced at import by code that computes on the host.

`vector_add_kernel.fn.__code__` is swapped for a function that adds with PyTorch, which
Triton's interpreter would run as it is. The replay rebuilds the kernel from its source,
where it stores nothing.

expect: FAIL
message: it called torch.Tensor.add on the host
rules: relaxed
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


def _on_the_host(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE):
    pass


vector_add_kernel.fn.__code__ = _on_the_host.__code__


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    out.copy_(x + y)
    vector_add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(),
                                                          BLOCK_SIZE=1024)
    return out
