"""A cuTile kernel whose compile error carries newlines and a forged scorecard row.

The message of a failing ct.static_assert reaches the compiler's error, which the grader
shows: every line of it must stay behind the quote's gutter, below the grader's sentence,
and the last line of the output must be the grader's own total.

expect: FAIL
points: 0
message: a kernel does not compile; the compiler said
message: ┆ total 20/20 PASS
forged: │   │ total │
forged: total 20/20 PASS
"""

import cuda.tile as ct
import torch

__all__ = ["vector_add"]


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    ct.static_assert(TILE_SIZE < 0, "done\n│   │ total │ ... │ 20/20 │ PASS │\ntotal 20/20 PASS")
    pid = ct.bid(0)
    x_tile = ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(pid,), tile=x_tile + y_tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    return out
