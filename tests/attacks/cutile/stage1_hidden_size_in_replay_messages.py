"""Reads each hidden case's size inside the replay and writes it into the compiler's error.

The shown case runs the plain kernel and passes. A hidden case hands its size to the kernel
as a constant, and a ct.static_assert that only a size other than the shown one reaches
writes it into the error cuTile's front end raises in the replay. A hidden case must show
pass or fail, nothing else: not its size, not its seed, not what its replay said, not the
kind of its failure. (On a CPU no stage-wide check of this track carries the replay's
words: cuTile's front end always runs where the track does.)

expect: FAIL
hidden: { n = 7919, dtypes = ["float32"] }
message: case hidden1-float32: hidden case failed
absent: hidden case failed:
absent: does not compile
"""

import cuda.tile as ct
import torch

__all__ = ["vector_add"]


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int], N: ct.Constant[int]):
    if N != 1000:  # a constant: only the hidden case's kernel holds the assert
        ct.static_assert(False, f"hidden n = {N}")
    pid = ct.bid(0)
    x_tile = ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(pid,), tile=x_tile + y_tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024, out.numel()))
    return out
