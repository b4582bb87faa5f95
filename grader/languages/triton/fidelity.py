"""Where Triton's interpreter computes otherwise than a GPU, in a way a kernel's output shows,
made to compute as the GPU does while the replay runs a launch on the CPU.

`tl.dot`. The interpreter multiplies with numpy, whose float32 sums depend on where an
element sits in its tile (its blocking): two programs computing one element of C from the
same row and column, as a matmul whose edge tiles are shifted back inside the matrix does,
could store different last bits, and the race check (grader.replay.races) told two stores
of different values. On a GPU an element's sum depends on its row, its column and the K
order only. Here a dot sums in float64 and rounds once, whatever the element's place.
A float16 accumulator (`out_dtype=tl.float16`, or an `acc=` in float16): numpy summed a
whole K and rounded once, so a kernel that takes all of K in one tile showed the error of
one rounding. A GPU splits the product into MMA instructions (16 deep in K for 16-bit
inputs), and one that accumulates in float16 rounds its running sum after each: the error
grows with K, as the matmul stage's case with a long K is there to show. Here it is
rounded every MMA_K of K.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import torch

from grader.problems.matmul import mma_accumulated


_EXACT_IN_FP64 = {np.dtype(np.float16), np.dtype(np.float32)}  # inputs float64 holds as they are
_ACCUMULATORS = {np.dtype(np.float16), np.dtype(np.float32)}


@contextmanager
def gpu_arithmetic() -> Iterator[None]:
    """For the length of a launch: the interpreter's tl.dot sums in float64 and rounds once
    per step (the whole of K; MMA_K for a float16 accumulator)."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    dot = builder.create_dot

    def gpu_dot(a, b, d, input_precision, max_num_imprecise_acc):
        accumulator, accumulated_type = d.data.dtype, d.dtype.scalar
        if accumulator not in _ACCUMULATORS or not {a.data.dtype, b.data.dtype} <= _EXACT_IN_FP64:
            return dot(a, b, d, input_precision, max_num_imprecise_acc)
        a, b, d = (torch.from_numpy(np.ascontiguousarray(t.data)) for t in (a, b, d))
        return interpreter.TensorHandle(mma_accumulated(a, b, d).numpy(), accumulated_type)

    builder.create_dot = gpu_dot
    try:
        yield
    finally:
        del builder.create_dot  # the class's again
