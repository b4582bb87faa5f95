"""A decorator's option is computed by `max(..., key=...)` whose key is a function of the
file: the replay reads every decorator to build the kernels, so an evaluator would run the
file's code there (and replace the replay's launcher with host PyTorch).

A decorator's options are read as data like any constant: the call is refused at its line
before any kernel is built.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `max` takes no keywords in a constant
"""

import cuda.tile as ct
import torch


def _take_over(value):
    import torch

    source = torch.sys.modules.get("grader.tracks")
    if source is not None:
        def launch(step, kernel, args, kwargs):
            args[2].copy_(args[0] + args[1])

        source.wing("cutile").cpu.launch = launch
    return value


@ct.kernel(occupancy=max(1, 1, key=_take_over))
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    ct.load(x, index=(ct.bid(0),), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), 1024),), vector_add_kernel,
              (x, y, out, 1024))
    return out
