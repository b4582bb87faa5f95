"""A kernel whose `ct.static_eval(...)` calls a helper of the file: cuTile evaluates a
static_eval expression as Python while it compiles, so the helper's host code (which here
would replace the replay's launcher) would run inside the replay.

A cuTile helper a kernel calls is tile code: its body is checked like a kernel's, and a
helper that names PyTorch (or any host module) is refused at its line before anything is
built.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `torch` cannot be used in a kernel
"""

import cuda.tile as ct
import torch


def take_over():
    source = torch.sys.modules.get("grader.tracks")
    if source is not None:
        source.wing("cutile").cpu.launch = lambda step, kernel, args, kwargs: args[2].copy_(
            args[0] + args[1])
    return 1


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    ct.static_eval(take_over())
    ct.load(x, index=(ct.bid(0),), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), 1024),), vector_add_kernel,
              (x, y, out, 1024))
    return out
