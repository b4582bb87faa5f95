"""Triton's loads and stores on the CPU, for the replay's watch (grader.replay.watch).

The interpreter executes each program's memory operations through its builder's
`create_masked_load` / `create_masked_store` (plain loads, block pointers and descriptors
all end there). For the length of one launch those are wrapped: the wrapper passes the
addresses and the mask of the batch on (a store's once it is done) and the bytes a lane
moves, with the program that made it and the line of the student's kernel it comes from.

A masked load without `other=` leaves the lanes its mask switches off undefined (tl.load's
definition; today's GPU backends happen to fill them with 0, and nothing promises it). The
interpreter gives 0; here they read as NaN instead, as the cuTile simulator reads an
undetermined padding, so that a kernel whose result depends on them fails, and a note names
the line (grader.judge.compare words the NaN it leads to).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np

from grader.replay.traffic import LaunchWatch
from grader.replay.watch import Note, Watch, linear

UNDEFINED_LANES = ("{where}: a load with a mask and no other= ({count}): the lanes its mask "
                   "switches off are undefined (Triton promises nothing of them: today's GPUs "
                   "happen to give 0); here they read as NaN. Give it other=, the value those "
                   "lanes must hold (0.0 for a sum or a dot, -inf for a max)")
# What an undefined lane reads as, by the interpreter's storage of each floating type
# (bfloat16 kept as its 16 bits): a quiet NaN, unlike the grader's poison of fresh memory.
_NAN_BITS = {"fp16": (np.float16, np.nan), "fp32": (np.float32, np.nan),
             "fp64": (np.float64, np.nan), "bf16": (np.uint16, 0x7FC0)}


@contextmanager
def hooks(watch: Watch, launch: LaunchWatch, grid, notes) -> Iterator[None]:
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    load, store = builder.create_masked_load, builder.create_masked_store

    # The interpreter's builder methods take more arguments in some Triton releases than in
    # others (3.6 passes one more to a load than 3.9): the rest pass through as given.
    def watched_load(ptrs, mask, other, *rest, **named):
        line = watch.line()
        launch.access(False, ptrs.data, mask.data, linear(builder.grid_idx, grid), line,
                      _width(ptrs))
        if other is None and not mask.data.all() and (nan := _undefined(ptrs)) is not None:
            other = nan
            note = Note("undefined_lanes", line, UNDEFINED_LANES, "")
            notes[note] = notes.get(note, 0) + 1
        return load(ptrs, mask, other, *rest, **named)

    def watched_store(ptrs, value, mask, *rest, **named):
        done = store(ptrs, value, mask, *rest, **named)  # told once done: the race check reads it
        launch.access(True, ptrs.data, mask.data, linear(builder.grid_idx, grid), watch.line(),
                      getattr(getattr(value, "data", None), "itemsize", None))
        return done

    builder.create_masked_load, builder.create_masked_store = watched_load, watched_store
    try:
        yield
    finally:
        del builder.create_masked_load, builder.create_masked_store  # the class's again


def _undefined(ptrs):
    """NaN in every lane of a load through `ptrs`, as the interpreter holds its values;
    None for a type without NaN (integers keep the interpreter's 0)."""
    from triton.runtime.interpreter import TensorHandle

    element = ptrs.get_element_ty()
    kind = _NAN_BITS.get(getattr(element, "name", ""))
    if kind is None:
        return None
    dtype, value = kind
    return TensorHandle(np.full(ptrs.data.shape, value, dtype=dtype), element)


def _width(ptrs) -> int | None:
    """The bytes one lane of a load through `ptrs` reads: its pointers' element type (a
    pointer cast to a wider type reads more than the tensor's element)."""
    try:
        return max(1, ptrs.dtype.scalar.element_ty.primitive_bitwidth // 8)
    except AttributeError:
        return None
