"""Fails a hidden case in a way that depends on its size, so that the kind of failure tells it.

The kernel is right; on any length but the shown case's 1000 the wrapper fails on purpose,
raising for an odd length and doubling the output on the host for an even one. Were the kind
of a hidden case's failure shown ("raised an exception", "host did the work", "timed out",
...: about ten kinds), each hidden case would tell a few bits of its inputs this way; it
shows only that it failed. tests/grading/test_what_hidden_cases_tell.py grades the file with
an odd and with an even hidden length and finds every export the same.

expect: FAIL
points: 5
hidden: { n = 7919, dtypes = ["float32"] }
message: case hidden1-float32: hidden case failed
absent: hidden case failed:
absent: raised an exception
absent: host did the work
absent: odd length
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]

SHOWN = 1000  # the length of the case the student is shown


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    if n != SHOWN and n % 2:  # a hidden case of odd length: "raised an exception"
        raise ValueError("odd length")
    grid = (triton.cdiv(n, 1024),)
    vector_add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    if n != SHOWN:  # of even length: "host did the work"
        return out * 2
    return out
