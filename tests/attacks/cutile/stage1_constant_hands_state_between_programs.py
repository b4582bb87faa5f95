"""A constant that is a dict, changed by the kernel: each block hands the next its tile.

The simulator runs a launch's blocks one after another in one process, so a dict a kernel
could change would carry each block's tile index to the next, and the stage would pass on
the CPU without reading ct.bid (cuTile's compiler refuses a dict constant, but the simulator
runs what the grader hands it). A constant a kernel sees is frozen (numbers, strings,
dtypes, tuples of these), and a kernel never calls a method of one: refused before any
kernel runs, at the line that names the dict.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `NEXT` (line 19) holds a dict, which a kernel could change while it runs
"""

import cuda.tile as ct
import torch

NEXT = {"tile": 0}


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    tile = NEXT.pop("tile", 0)
    NEXT.update(tile=(tile + 1) % ct.num_blocks(0))
    x_tile = ct.load(x, index=(tile,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(tile,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(tile,), tile=x_tile + y_tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), 256),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 256))
    return out
