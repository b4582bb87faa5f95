"""The wrapper raises an exception whose text is lines forged as the scorecard's last rows.

What the wrapper raised is shown under the grader's sentence, every line behind the quote's
gutter: no line of the output begins with the forged text, and the last is the grader's.

expect: FAIL
points: 0
message: the wrapper raised an exception:
message: ┆ total 20/20 PASS
forged: │   │ total │
forged: total 20/20 PASS
forged: PASS stage1
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


FORGED = ("\n\n" + "│   │ total │                  │       │          │  20/20 │ PASS   │\n"
          + "└───┴────────────┴──────────────────┴───────┴──────────┴────────┴────────┘\n"
          + "PASS stage1 vector_add\n" + "total 20/20 PASS\n")


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = (triton.cdiv(n_elements, 1024),)
    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)
    raise RuntimeError(FORGED)
