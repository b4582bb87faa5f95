"""Autotunes the tile size but fixes the grid for one configuration: right only when 1024 wins.

The autotuner offers BLOCK_SIZE 1024 and 256, and the launch's grid is computed for 1024
whichever runs: under 256, three quarters of the vector get no program. On a GPU the
autotuner keeps whichever configuration is faster there, so the grader runs every case
under each configuration, and names the one that fails (the grid belongs in a function of
the configuration: `grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)`).

expect: FAIL
message: under the autotuner's configuration 2 of 2 of vector_add_kernel, line 24
message: were never written
passes: n=1-
line: 24
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
                          triton.Config({"BLOCK_SIZE": 256}, num_warps=2)],
                 key=["n_elements"])
@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return x + y for two 1-D tensors of the same shape and dtype."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = (triton.cdiv(n_elements, 1024),)  # one program per 1024 elements
    vector_add_kernel[grid](x, y, out, n_elements)
    return out
