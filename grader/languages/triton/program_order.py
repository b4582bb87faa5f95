"""The programs of a Triton launch run in the case's order on the CPU (grader.replay.order).

The interpreter runs a launch's programs in nested loops over the grid (x, then y, then z:
Triton 3.6 and 3.9 alike, `GridExecutor.__call__`), telling its builder each program's index
with `set_grid_idx(x, y, z)` before it runs the body. For the length of a launch that call
is wrapped: the program at position k of the loop is given the index of the program at
position `permutation[k]` instead. A permutation is a bijection, so every program runs
exactly once whatever the loop's order; with the loop in grid order, as it is, the programs
run in the order's own. `tl.program_id` and the watch of loads and stores
(grader.languages.triton.watch) read the index the builder holds, so every finding names
the program that really ran. No code of Triton's is copied or replaced.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from grader.replay import order


@contextmanager
def programs_in_case_order() -> Iterator[None]:
    """For the length of a launch: its programs run in the replayed case's order."""
    chosen = order.current()
    if chosen == order.GRID:
        yield
        return
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    set_grid_idx = builder.set_grid_idx
    permutations: dict[tuple[int, int, int], list[int]] = {}  # one per grid the launch uses

    def permuted(x: int, y: int, z: int) -> None:
        nx, ny, nz = builder.grid_dim
        if (nx, ny, nz) not in permutations:
            permutations[nx, ny, nz] = chosen.permutation(nx * ny * nz)
        k = permutations[nx, ny, nz][(x * ny + y) * nz + z]  # the loop's position, x slowest
        set_grid_idx(k // (ny * nz), k // nz % ny, k % nz)

    builder.set_grid_idx = permuted
    try:
        yield
    finally:
        del builder.set_grid_idx  # the class's again
