"""A constant that is a dict, changed by the kernel: each program hands the next its tile.

`S = tl.constexpr({})` stayed a mutable Python dict in Triton's interpreter, which runs a
launch's programs one after another in one process: each program popped its tile start
from the dict and put the next one back, so the stage passed on the CPU without reading
tl.program_id. On a GPU every program would add tile 0. A constant a kernel sees is frozen
(numbers, strings, dtypes, tuples of these), and a kernel never calls a method of one: the
file is refused before any kernel runs, at the line that names the dict.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `S` (line 20) holds a dict, which a kernel could change while it runs
"""

import torch
import triton
import triton.language as tl

S = tl.constexpr({})


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    start = S.value.pop("start", 0)
    S.value.update(start=(start + BLOCK_SIZE) % (triton.cdiv(n_elements, BLOCK_SIZE) * BLOCK_SIZE))
    offsets = start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    return out
