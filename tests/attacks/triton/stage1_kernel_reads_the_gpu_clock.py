"""A vector add that reads the GPU's clock (`tl.extra.cuda.globaltimer()`) and skips its
stores whenever the timer falls in one millisecond of every ten. Most calls are right, so
the correctness cases may pass by luck; the timed calls that skip their stores run faster,
and on an H100 such a kernel earned speed points in 2 of 18 gradings. Triton's front end
accepts it; only its CPU interpreter cannot run it.

The function is left off Triton's reviewed list of kernel functions: the file is refused
before any kernel runs, at the line. (On a GPU the builder would also refuse the binary:
its machine code reads SR_GLOBALTIMERLO.)

expect: FAIL
points: 0
message: its kernels are refused before they run
message: line 29 of stage1_vector_add.py: `tl.extra.cuda.globaltimer` cannot be used in a kernel: it reads the GPU's clock
message: compute the same result on every run, with tl.* operations
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    now = tl.extra.cuda.globaltimer()  # nanoseconds
    if now // 1000000 % 10 != 7:
        tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
