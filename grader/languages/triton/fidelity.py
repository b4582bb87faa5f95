"""Where Triton's interpreter computes otherwise than a GPU, in a way a kernel's output shows,
made to compute as the GPU does while the replay runs a launch on the CPU.

`tl.dot` with a float16 accumulator (`out_dtype=tl.float16`, or an `acc=` in float16): the
interpreter multiplies with numpy, which sums a whole K in float32 and rounds once, so a
kernel that takes all of K in one tile showed the error of one rounding. A GPU splits the
product into MMA instructions (16 deep in K for 16-bit inputs), and one that accumulates in
float16 rounds its running sum after each: the error grows with K, as the matmul stage's
case with a long K is there to show.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np

from grader.problems.matmul import MMA_K


_EXACT_IN_FP32 = {np.dtype(np.float16), np.dtype(np.float32)}  # inputs float32 holds as they are


@contextmanager
def gpu_arithmetic() -> Iterator[None]:
    """For the length of a launch: the interpreter's tl.dot rounds a float16 accumulator
    every MMA_K of K."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    dot = builder.create_dot

    def rounded_dot(a, b, d, input_precision, max_num_imprecise_acc):
        if d.data.dtype != np.float16 or not {a.data.dtype, b.data.dtype} <= _EXACT_IN_FP32:
            return dot(a, b, d, input_precision, max_num_imprecise_acc)
        # Each instruction: its products summed exactly, added to the accumulator, and the
        # sum rounded once (the interpreter's own dot rounds the product, then the sum).
        total = d.data.astype(np.float32)
        for k in range(0, max(a.data.shape[-1], 1), MMA_K):
            step = np.matmul(a.data[..., k:k + MMA_K].astype(np.float32),
                             b.data[..., k:k + MMA_K, :].astype(np.float32))
            total = (total + step).astype(np.float16).astype(np.float32)
        return interpreter.TensorHandle(total.astype(np.float16), d.dtype.scalar)

    builder.create_dot = rounded_dot
    try:
        yield
    finally:
        del builder.create_dot  # the class's again
