"""Each block copies the next block's tile of y into a scratch array, and reads its own from
there: right only when the blocks run one after another, in order, as the simulator ran
them (every output right, and it passed); on a GPU the blocks of a launch run at once and
none waits for another's stores, so a block may read its tile before it was written (a race).

The watch of the loads and stores sees one block read what another stored in the same
launch, and the case fails on it, naming the line. (The case runs its blocks in reverse
grid order, grader.replay.order: block 7 reads its tile before block 6 stores it.)

expect: FAIL
message: its programs race
message: line 29
message: block 6 stores to an element of a tensor the wrapper allocated (flat index 896) that block 7 read
points: 0
"""

import cuda.tile as ct
import torch

TILE = 128


@ct.kernel
def vector_add_kernel(x, y, out, scratch, tiles: int, TILE_SIZE: ct.Constant[int]):
    pid = ct.bid(0)
    if pid + 1 < tiles:  # the next block's tile, handed over
        following = ct.load(y, index=(pid + 1,), shape=(TILE_SIZE,),
                            padding_mode=ct.PaddingMode.ZERO)
        ct.store(scratch, index=(pid + 1,), tile=following)
    if pid == 0:
        ct.store(scratch, index=(pid,), tile=ct.load(y, index=(pid,), shape=(TILE_SIZE,),
                                                     padding_mode=ct.PaddingMode.ZERO))
    y_tile = ct.load(scratch, index=(pid,), shape=(TILE_SIZE,),
                     padding_mode=ct.PaddingMode.ZERO)  # written by the block before, it hopes
    x_tile = ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(pid,), tile=x_tile + y_tile)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    scratch = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), TILE),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel,
              (x, y, out, scratch, grid[0], TILE))
    return out
