"""A kernel body that imports PyTorch and adds on the host, as only an interpreter would run.

Triton's interpreter runs a kernel body as Python; the replay reads every body before it
builds any kernel, and refuses an import inside one, at its line.

expect: FAIL
message: its kernels are refused before they run
message: an import inside a kernel
rules: relaxed
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    import torch as host
    host.add(x_ptr, y_ptr, out=out_ptr)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    vector_add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(),
                                                          BLOCK_SIZE=1024)
    return out
