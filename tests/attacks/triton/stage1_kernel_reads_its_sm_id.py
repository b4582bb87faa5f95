"""A vector add that reads which multiprocessor (SM) runs each program (`smid()`, imported
from `triton.language.extra.cuda`) and skips its stores on one of them. Which SM takes which
program changes from run to run, so the kernel does less work on some calls than on others,
and the grader cannot tell which of its outputs it will see.

The function is left off Triton's reviewed list of kernel functions, under whatever name a
file imports it: the file is refused before any kernel runs, at the line. (On a GPU the
builder would also refuse the binary: its machine code reads SR_VIRTUALSMID.)

expect: FAIL
points: 0
message: its kernels are refused before they run
message: line 29 of stage1_vector_add.py: `tl.extra.cuda.smid` cannot be used in a kernel: it reads which multiprocessor (SM) a program runs on
message: tell programs apart with tl.program_id(axis)
"""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import smid


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if smid() != 0:
        tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
