"""A kernel that is honest only when the grader's compile check imports the file.

The file's top-level code swaps the kernel for an honest one when it believes it is being
compiled rather than run. The replay never runs top-level code: it takes the kernels as
written, and the one written here adds nothing.

expect: FAIL
message: it called torch.Tensor.add on the host
rules: relaxed
"""

import torch
import triton
import triton.language as tl


@triton.jit
def honest_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


if "compile" in __name__ or "kernels" in __name__:
    vector_add_kernel = honest_kernel


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    out.copy_(x + y)
    vector_add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(),
                                                          BLOCK_SIZE=1024)
    return out
