"""A kernel parameter whose default is a dict, changed by the kernel: the same route as a
dict constant, through a default instead of a top-level name.

A default is a value the kernel sees, read as data like a constant, and Python keeps one
object for every call: in Triton's interpreter, which runs a launch's programs one after
another, each program would hand the next its tile through it. A default is frozen as a
constant is (numbers, strings, dtypes, tuples of these): refused at its line.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `tl.constexpr({})` holds a dict, which a kernel could change while it runs
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr,
                      STATE: tl.constexpr = tl.constexpr({})):
    start = STATE.value.pop("start", 0)
    STATE.value.update(start=(start + BLOCK_SIZE) % (triton.cdiv(n_elements, BLOCK_SIZE) * BLOCK_SIZE))
    offsets = start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    return out
