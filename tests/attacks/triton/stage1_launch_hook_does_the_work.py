"""Triton's launch hook computes x + y on the host while the kernel itself does nothing.

The hook runs inside the launch, where the host watch used to be paused. The grader's
replay runs only the kernel, which stores nothing: the output is never written.

expect: FAIL
message: on the host
rules: relaxed
"""

import torch
import triton
import triton.language as tl

_pending = []


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.load(x_ptr + offsets, mask=mask)


def _hook(*args, **kwargs):
    for x, y, out in _pending:
        out.copy_(x + y)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _pending[:] = [(x, y, out)]
    triton.knobs.runtime.launch_enter_hook = _hook
    grid = (triton.cdiv(out.numel(), 1024),)
    vector_add_kernel[grid](x, y, out, out.numel(), BLOCK_SIZE=1024)
    _hook()
    return out
