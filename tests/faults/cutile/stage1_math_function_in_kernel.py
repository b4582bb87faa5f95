"""Calls one of math's functions in a cuTile kernel (`math.sqrt(1.0)` as a scale): the
lessons once said a kernel may, but cuTile's compiler refuses math's functions in device
code; the grader refuses it at its line, before the compiler, and says what to write instead.

expect: FAIL
message: `math.sqrt` cannot be used in a kernel: cuda.tile's compiler refuses math's functions
line: 25
"""

import math

import cuda.tile as ct
import torch

__all__ = ["vector_add"]


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    # Step 1: Find which tile this block owns and load that tile of x and of y. Lanes
    #   past the end of the vector must read a defined value (pad with zeros).
    #   Hint: ct.bid(0), ct.load(array, index=(...,), shape=(TILE_SIZE,),
    #   padding_mode=ct.PaddingMode.ZERO).
    pid = ct.bid(0)
    x_tile = math.sqrt(1.0) * ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)

    # Step 2: Add the tiles and store the sum into the same tile of out. The store
    #   drops the lanes that fall outside the vector by itself.
    #   Hint: ct.store(array, index=(...,), tile=...).
    ct.store(out, index=(pid,), tile=x_tile + y_tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return x + y for two 1-D tensors of the same shape and dtype."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    TILE_SIZE = 1024
    # Step 3: Compute the 1-D launch grid: one block per tile, the last tile
    #   possibly partial, so round the division UP.
    #   Hint: ct.cdiv works on the host too.
    grid = (ct.cdiv(n_elements, TILE_SIZE),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, TILE_SIZE))
    return out
