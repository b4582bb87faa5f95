"""A @ct.kernel whose body adds with PyTorch, which only the simulator would run.

cuTile's own front end, which lowers every kernel to Tile IR before the replay runs it,
refuses the body.

expect: FAIL
message: does not compile for a GPU
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
