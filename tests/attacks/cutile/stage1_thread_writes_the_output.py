"""A thread writes x + y into the output while the launch is recorded.

The replay runs the launch in a process where the thread never existed; its kernel stores
only half of each tile.

expect: FAIL
message: never written
rules: relaxed
"""

import threading

import cuda.tile as ct
import torch


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    pid = ct.bid(0)
    half = TILE_SIZE // 2
    x_tile = ct.load(x, index=(2 * pid,), shape=(half,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(2 * pid,), shape=(half,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(2 * pid,), tile=x_tile + y_tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    result = x + y
    writer = threading.Thread(target=lambda: out.copy_(result))
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    writer.start()
    writer.join()
    return out
