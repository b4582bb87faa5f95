"""Launches with an integer grid: ct.launch takes the grid as a tuple, even in 1-D.

expect: FAIL
message: Grid must be a tuple
line: 31

`grid = ct.cdiv(n, TILE_SIZE)` is a number of blocks, not a grid: cuTile's launch refuses
it ("Grid must be a tuple") on a GPU, so the simulator must refuse it too. The fix is a
one-element tuple, (ct.cdiv(n, TILE_SIZE),).
"""

import cuda.tile as ct
import torch

__all__ = ["vector_add"]


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    pid = ct.bid(0)
    x_tile = ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(pid,), tile=x_tile + y_tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    TILE_SIZE = 1024
    grid = ct.cdiv(n_elements, TILE_SIZE)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, TILE_SIZE))
    return out
