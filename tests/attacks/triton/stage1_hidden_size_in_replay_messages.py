"""Reads each hidden case's size inside the replay and puts it in the messages the replay causes.

The shown case runs the plain kernel and passes. The first hidden case hands its size to the
kernel as a constant, whose failing tl.static_assert writes it into the compiler's error;
the second hands the compiler a constant it cannot take (a tuple), so that its kernel goes
unchecked and the stage-wide "compiles for a GPU" check would say why. A hidden case must
show pass or fail, nothing else: not its size, not its seed, not what its replay said, and
not the kind of its failure (a compile error here, a kernel no front end checked there: a
bit of the size each), nor a stage-wide check that says one of them went unchecked.

expect: FAIL
hidden: { n = 7919, dtypes = ["float32"] }
hidden: { n = 7907, dtypes = ["float32"] }
message: case hidden1-float32: hidden case failed
message: case hidden2-float32: hidden case failed
absent: hidden case failed:
absent: does not compile
absent: not graded on this GPU
absent: compiles for a GPU
absent: of type tuple
absent: hidden n =
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr,
                      N: tl.constexpr, SHAPE: tl.constexpr):
    tl.static_assert(N == 1000, f"hidden n = {N}")
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, 1024),)
    if n in (1000, 7919):  # the shown case passes; the first hidden case fails its assert
        vector_add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, N=n, SHAPE=0)
    else:  # the second hidden case: a constant no compiler can be handed
        vector_add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, N=1000, SHAPE=(n,))
    return out
