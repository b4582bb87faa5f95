"""A constexpr the compile check cannot hand to the compiler, so that the check is skipped
and a kernel body that computes with PyTorch on the host runs in the interpreter.

A kernel the front end could not check is not run, and earns nothing: its case is not
graded.

expect: PARTLY GRADED
points: 0
message: not graded: its kernel could not be checked
rules: relaxed
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr,
                      SHAPE: tl.constexpr):
    out_ptr.copy_(x_ptr + y_ptr)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    vector_add_kernel[(1,)](x, y, out, out.numel(), BLOCK_SIZE=1024, SHAPE=(1, 2, 3))
    return out
