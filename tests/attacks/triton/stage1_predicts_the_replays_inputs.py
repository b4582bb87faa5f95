"""A kernel that never writes the last element, and a wrapper that patches it: it finds the
seed its inputs were drawn from in the frames of the process that calls it, draws the
replay's inputs itself from the seed the replay would use, and appends a step that fills the
last element with their sum.

The replay's seed cannot be told from anything the child sees: the child draws from the
case's seed masked by a key of the grader's own, so what it predicts is another call's sum,
and the last element is wrong.

expect: FAIL
message: 1 of 1000 elements mismatch
points: 0
"""

import traceback

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements - 1  # one short: the last element is never written
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def _stack():
    return list(traceback.walk_stack(None))  # it starts a few frames up: called from below


def _caller_with(name):
    """The locals of the nearest calling frame that holds `name`."""
    for frame, _ in _stack():
        if name in frame.f_locals:
            return frame.f_locals
    return None


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    child, watch = _caller_with("problem"), _caller_with("host")
    with watch["host"].paused():  # the host watch sees none of this
        replayed = child["problem"].draw(child["params"], child["dtype"],
                                         child["seed"] ^ 0x5EED)  # the replay's seed, it hopes
        a, b = replayed.args
        last = float(a[-1].float() + b[-1].float())
    out[n - 1:].fill_(last)
    return out
