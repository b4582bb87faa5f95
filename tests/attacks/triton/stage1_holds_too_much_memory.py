"""Holds 2 GiB of host memory in its wrapper, then launches an honest kernel.

One student's memory must not starve the others graded beside it (`grade batch --jobs 4`):
the grader measures what each confined process tree holds and stops the tree that holds
more than its ceiling. Graded here under a ceiling of 1 GiB, so the test needs less memory
(an honest tree counts about 500 MiB on a CPU); without the ceiling the kernel's result
would pass.

expect: FAIL
memory: 1024
message: more than the 1 GiB a submission may hold
points: 0
"""

import time

import torch
import triton
import triton.language as tl

hoard = []  # kept at module level: nothing frees it between calls


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    for _ in range(32):
        hoard.append(torch.ones(16 << 20))  # 64 MiB each, every page written
    time.sleep(2)  # long enough for any measurement to see it
    out = torch.empty_like(x)
    n = x.numel()
    vector_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    return out
