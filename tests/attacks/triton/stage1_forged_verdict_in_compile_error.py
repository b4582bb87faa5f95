"""A kernel whose compile error carries newlines and a forged scorecard row, to end the log as a pass.

The message of a failing tl.static_assert reaches the compiler's error, which the grader
shows: every line of it must stay behind the quote's gutter, below the grader's sentence,
and the last line of the output must be the grader's own total.

expect: FAIL
points: 0
message: a kernel does not compile; the compiler said
message: ┆ │   │ total │ ... │ 20/20 │ PASS │
forged: │   │ total │
forged: total 20/20 PASS
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    tl.static_assert(BLOCK_SIZE < 0, "done\n│   │ total │ ... │ 20/20 │ PASS │\ntotal 20/20 PASS")
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = (triton.cdiv(n_elements, 1024),)
    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)
    return out
