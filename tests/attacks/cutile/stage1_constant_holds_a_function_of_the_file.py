"""A top-level constant that holds a plain function of the file, which a kernel calls: cuTile
compiles a plain helper a kernel calls, and the simulator runs it as Python, so a function
reached through a constant (never checked as a helper) would run its host code in the
replay, here replacing its launcher with host PyTorch.

A constant is data, and a function is not: the constant is refused at its line, and the
kernel with it, before anything is built.

expect: FAIL
points: 0
message: `HOOK` is used by a kernel, so it must be a constant written as data
message: `_take_over` is not a constant of this file written as data
"""

import cuda.tile as ct
import torch


def _take_over(tile):
    import torch

    source = torch.sys.modules.get("grader.tracks")
    if source is not None:
        source.wing("cutile").cpu.launch = lambda step, k, args, kw: args[2].copy_(args[0] + args[1])
    return tile


HOOK = _take_over


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    tile = ct.load(x, index=(ct.bid(0),), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    HOOK(tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(x.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    return out
