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

import torch
import triton
import triton.language as tl


def _take_over(value):
    import torch

    source = torch.sys.modules.get("grader.tracks")
    if source is not None:
        def launch(step, kernel, args, kwargs):
            args[2].copy_(args[0] + args[1])

        source.wing("triton").cpu.launch = launch
    return value


@triton.jit(debug=max(False, False, key=_take_over))
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    vector_add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
