"""Sleeps in proportion to any size it was not shown, so that a time tells the hidden case's size.

The kernel is right and every case passes; the wrapper sleeps a tenth of a millisecond per
element on any length but the shown case's 1000. A hidden case's time would give its length:
the call recorded, the stage's seconds, the run's, JUnit's times and Gradescope's execution
time all grew by n / 10,000 seconds before the grader left the time of anything done with a
hidden case's inputs out of every figure a student sees. The text shows nothing of the size;
tests/grading/test_what_hidden_cases_tell.py grades the file with a hidden case that sleeps
a second and with one that does not, and finds no figure that moved.

expect: PASS
points: 10
hidden: { n = 10000, dtypes = ["float32"] }
"""

import time

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]

SHOWN = 1000  # the length of the case the student is shown
SECONDS_PER_ELEMENT = 1e-4


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
    if n != SHOWN:  # a hidden case: its size, in seconds
        time.sleep(n * SECONDS_PER_ELEMENT)
    grid = (triton.cdiv(n, 1024),)
    vector_add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return out
