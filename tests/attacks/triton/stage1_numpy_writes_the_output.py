"""x + y written into the output through a numpy view, where no PyTorch operator sees it.

The replay's output is what the launches write; the kernel launched stores nothing.

expect: FAIL
message: no store reached any element
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


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    vector_add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(),
                                                          BLOCK_SIZE=1024)
    out.numpy()[:] = x.numpy() + y.numpy()
    return out
