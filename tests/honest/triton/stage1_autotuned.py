"""An honest vector add whose kernel is autotuned over three tile sizes, as Triton's own
tutorials write kernels: the grid is a function of the configuration.

The replay builds the autotuner from the literal configurations; on a CPU every case runs
under each of the three (compiled first, each with its num_warps), since a GPU may pick any;
on a GPU the replay times each, keeps the fastest, and checks the others too. Every case
passes.

expect: PASS
points: 10
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


# Triton tries each configuration on the GPU and keeps the fastest for each n_elements.
@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 256}, num_warps=2),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
    ],
    key=["n_elements"],
)
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
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    vector_add_kernel[grid](x, y, out, n_elements)
    return out
