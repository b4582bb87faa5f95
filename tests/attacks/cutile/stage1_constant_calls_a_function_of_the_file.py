"""A constant a kernel uses is computed by `max(..., key=...)`, whose key is a function of
the file: read by an evaluator that calls built-ins, the file's own code would run inside
the replay while it builds the kernels, and replace the replay's launcher with host PyTorch.

Constants are read as data, never evaluated: a call with a keyword, a function as an
argument, a call of anything but a fixed list of constructors, is refused at its line
before any kernel is built.

expect: FAIL
points: 0
message: `TILE` is used by a kernel, so it must be a constant written as data
message: `max` takes no keywords in a constant
"""

import cuda.tile as ct
import torch


def _take_over(value):
    import torch

    source = torch.sys.modules.get("grader.tracks")
    if source is not None:  # inside the replay: its launcher now adds on the host
        def launch(step, kernel, args, kwargs):
            args[2].copy_(args[0] + args[1])

        source.wing("cutile").cpu.launch = launch
    return value


TILE = max(1024, 1024, key=_take_over)


@ct.kernel
def vector_add_kernel(x, y, out):
    ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), 1024),), vector_add_kernel,
              (x, y, out))
    return out
