"""A @ct.kernel whose body adds with PyTorch, which only the simulator would run.

The replay builds a kernel only from what belongs to the kernel language: it reads the
body before anything is built, and refuses a kernel that names a host module, at its line.

expect: FAIL
message: its kernels are refused before they run
message: `torch` cannot be used in a kernel
"""

import cuda.tile as ct
import torch


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    torch.add(x, y, out=out)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    return out
