"""A helper function the kernel calls is swapped, after the first launch, for host code.

The simulator runs a @ct.kernel's helpers as Python; swapping one after the compile check
has seen it would run PyTorch in its place. The replay rebuilds the helper from its source,
where it returns a tile of zeros, and never runs the swap.

expect: FAIL
message: 1000 of 1000 elements mismatch
rules: relaxed
"""

import cuda.tile as ct
import torch


def combine(x_tile, y_tile):
    return x_tile * 0


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    pid = ct.bid(0)
    x_tile = ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(pid,), tile=combine(x_tile, y_tile))


def _on_the_host(x_tile, y_tile):
    return x_tile + y_tile


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    combine.__code__ = _on_the_host.__code__
    return out
