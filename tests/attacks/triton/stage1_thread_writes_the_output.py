"""A thread writes x + y into the output while the kernel launch waits.

The grader judges only the output of its own replay of the launches, in a process where
this thread never existed; the kernel stores nothing there.

expect: FAIL
message: on the host
rules: relaxed
"""

import threading
import time

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
    result = (x + y).clone()

    def write():
        time.sleep(0.01)
        out.copy_(result)

    threading.Thread(target=write).start()
    vector_add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(),
                                                          BLOCK_SIZE=1024)
    time.sleep(0.05)
    return out
