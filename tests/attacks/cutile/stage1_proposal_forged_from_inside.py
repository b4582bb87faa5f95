"""The launch recorder is found from inside the child and told a launch of a kernel that
the file does not define, with the host's own sum passed as the output.

A proposal is data: its kernels are looked up among the file's top-level kernels, and its
tensors must be inputs or the allowed host steps' allocations.

expect: FAIL
message: cannot be replayed
rules: relaxed
"""

import gc

import cuda.tile as ct
import torch


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    pid = ct.bid(0)
    ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    for thing in gc.get_objects():
        if type(thing).__name__ == "Recorder":
            thing.launch("cutile", vector_add_kernel, grid, (x, y, x + y, 1024), {})
    return out
