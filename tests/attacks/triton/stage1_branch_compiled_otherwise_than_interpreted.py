"""A branch the compiler and the interpreter take differently, through a dict constant.

A runtime `if` whose two branches each set a key of a dict constant: the compiler visits
both branches (the key ends as 0), the interpreter runs one (the key ends as 1), and a
constant `if` on the key then compiles one branch and interprets the other. The interpreted
branch holds code Triton would refuse (a store into the dict), so the program checked was
not the program run, and the stage passed on the CPU. A constant a kernel sees is frozen
and a kernel never stores into one: refused before any kernel runs.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `SEEN` (line 20) holds a dict, which a kernel could change while it runs
"""

import torch
import triton
import triton.language as tl

SEEN = tl.constexpr({"interpreted": 0})


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    if pid >= 0:
        SEEN.value.update(interpreted=1)
    else:
        SEEN.value.update(interpreted=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if SEEN.value["interpreted"] == 1:
        SEEN.value["interpreted"] = 2  # code no GPU compiler accepts
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 0, mask=mask)
    else:
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
                 + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    return out
