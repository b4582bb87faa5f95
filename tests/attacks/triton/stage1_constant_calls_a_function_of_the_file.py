"""A constant a kernel uses is computed by `max(..., key=...)`, whose key is a function of
the file: read by an evaluator that calls built-ins, the file's own code would run inside
the replay while it builds the kernels, and replace the replay's launcher with host PyTorch.

Constants are read as data, never evaluated: a call with a keyword, a function as an
argument, a call of anything but a fixed list of constructors, is refused at its line
before any kernel is built.

expect: FAIL
points: 0
message: `BLOCK` is used by a kernel, so it must be a constant written as data
message: `max` takes no keywords in a constant
"""

import torch
import triton
import triton.language as tl


def _take_over(value):
    import torch

    source = torch.sys.modules.get("grader.tracks")
    if source is not None:  # inside the replay: its launcher now adds on the host
        def launch(step, kernel, args, kwargs):
            args[2].copy_(args[0] + args[1])

        source.wing("triton").cpu.launch = launch
    return value


BLOCK = tl.constexpr(max(1024, 1024, key=_take_over))


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)  # a kernel that does nothing


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    vector_add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel())
    return out
