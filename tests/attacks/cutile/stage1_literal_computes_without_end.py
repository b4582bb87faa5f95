"""A constant whose reading would compute without end: `round(1, -(1 << 4000))`.

round of an integer to -d digits computes 10**d, and d here has 1205 decimal digits: the
grader, reading the constant as data, would never finish (loading the stage was stopped
only by its time limit). Reading a constant has a cost bound: round's digits are bounded as
the size of an integer, a power and a shift are. Refused at once, at its line.

expect: FAIL
points: 0
message: line 16: `ROUNDED = round(1, -(1 << 4000))`: round's digits are at most 1300 in a constant
"""

import cuda.tile as ct
import torch

ROUNDED = round(1, -(1 << 4000))


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    pid = ct.bid(0) + ROUNDED
    x_tile = ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(pid,), tile=x_tile + y_tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    return out
