"""A cuTile kernel that keeps the numpy module (which cuTile takes for its dtypes) in a local
variable, then reads attributes of the local freely: through numpy's own packages it
reaches `sys`, and from there replaces the replay's launcher with host PyTorch.

A module is never a value in a kernel: it is only the start of an attribute chain that is
looked up by spelling and kept if it is the language's own API (of numpy, only its dtypes
and numbers). The kernel is refused before anything is built.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `np` is a module
"""

import cuda.tile as ct
import numpy as np
import torch


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    n = np
    modules = n.f2py.cfuncs.sys.modules
    source = modules["grader.tracks"]
    source.wing("cutile").cpu.launch = lambda step, k, args, kw: args[2].copy_(args[0] + args[1])
    ct.load(x, index=(ct.bid(0),), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(x.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    return out
