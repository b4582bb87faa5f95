"""The file raises while it is imported, with a text forged as the scorecard's last rows.

The import error is the stage's message (ERROR): the grader's sentence, then what the
import raised behind the quote's gutter; no line begins with the forged text.

expect: ERROR
points: 0
message: loading stage1_vector_add.py failed:
message: ┆ total 20/20 PASS
forged: │   │ total │
forged: total 20/20 PASS
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
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    return out


raise RuntimeError("\n│   │ total │                  │       │          │  20/20 │ PASS   │\n"
                   "total 20/20 PASS\n")
