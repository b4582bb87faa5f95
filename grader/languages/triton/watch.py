"""Triton's loads and stores on the CPU, for the replay's watch (grader.replay.watch).

The interpreter executes each program's memory operations through its builder's
`create_masked_load` / `create_masked_store` (plain loads, block pointers and descriptors
all end there). For the length of one launch those are wrapped: the wrapper passes the
addresses and the mask of the batch on (a store's once it is done) and the bytes a lane
moves, with the program that made it and the line of the student's kernel it comes from.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from grader.replay.traffic import LaunchWatch
from grader.replay.watch import Watch, linear


@contextmanager
def hooks(watch: Watch, launch: LaunchWatch, grid, notes) -> Iterator[None]:
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    load, store = builder.create_masked_load, builder.create_masked_store

    def watched_load(ptrs, mask, other, cache_policy, is_volatile):
        launch.access(False, ptrs.data, mask.data, linear(builder.grid_idx, grid), watch.line(),
                      _width(ptrs))
        return load(ptrs, mask, other, cache_policy, is_volatile)

    def watched_store(ptrs, value, mask, cache_policy):
        done = store(ptrs, value, mask, cache_policy)  # told once done: the race check reads it
        launch.access(True, ptrs.data, mask.data, linear(builder.grid_idx, grid), watch.line(),
                      getattr(getattr(value, "data", None), "itemsize", None))
        return done

    builder.create_masked_load, builder.create_masked_store = watched_load, watched_store
    try:
        yield
    finally:
        del builder.create_masked_load, builder.create_masked_store  # the class's again


def _width(ptrs) -> int | None:
    """The bytes one lane of a load through `ptrs` reads: its pointers' element type (a
    pointer cast to a wider type reads more than the tensor's element)."""
    try:
        return max(1, ptrs.dtype.scalar.element_ty.primitive_bitwidth // 8)
    except AttributeError:
        return None
