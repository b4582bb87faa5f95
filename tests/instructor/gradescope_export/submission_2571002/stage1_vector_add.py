"""Stage 1: vector addition, the "hello world" of tile programming, in cuTile.

A cuTile kernel is written for ONE block, not for one thread. We split the vector
into tiles of TILE_SIZE consecutive elements and launch one block per tile. Unlike
Triton, cuTile never shows you element offsets or pointers: an array is viewed as a
grid of equally sized tiles (its "tile space"), and `ct.load(x, index=(i,),
shape=(TILE_SIZE,))` fetches tile number i, i.e. elements
[i * TILE_SIZE, (i + 1) * TILE_SIZE). Block `ct.bid(0)` simply loads and stores the
tile whose index equals its own block index.

TILE_SIZE must be a compile-time constant (`ct.Constant[int]`) and a power of two,
but the vector length is arbitrary, so the last tile usually hangs over the end of
the vector. There are no masks: the array knows its own length. A load fills the
out-of-bounds lanes according to `padding_mode` (ZERO here; the default,
UNDETERMINED, may leave anything there), and a store simply drops the lanes that
fall outside the array, so the tail of memory is never touched.

The host wrapper allocates the output and launches a 1-D grid of
cdiv(n, TILE_SIZE) blocks with `ct.launch`. Rounding down instead would leave the
tail of the output unwritten.

Making it fast. Per element the kernel reads two values and writes one (12 bytes in
fp32) and does one addition: nothing but memory traffic, so the most it can reach is the
GPU's copy bandwidth, and the plain tile of 1024 elements already comes close to it. The
knobs of the later stages exist here too (TILE_SIZE, `@ct.kernel(occupancy=n)`) and are worth a try to see
how little they change when the memory system is already saturated; the speed points of
this stage mostly reward a kernel that reads and writes each element exactly once.
"""

import cuda.tile as ct
import torch

__all__ = ["vector_add"]


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    # TODO 1: Find which tile this block owns and load that tile of x and of y. Lanes
    #   past the end of the vector must read a defined value (pad with zeros).
    #   Hint: ct.bid(0), ct.load(array, index=(...,), shape=(TILE_SIZE,),
    #   padding_mode=ct.PaddingMode.ZERO).
    pid = ...
    x_tile = ...
    y_tile = ...

    # TODO 2: Add the tiles and store the sum into the same tile of out. The store
    #   drops the lanes that fall outside the vector by itself.
    #   Hint: ct.store(array, index=(...,), tile=...).
    out_tile = ...
    ...  # store the sum into out at this block's index


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return x + y for two 1-D tensors of the same shape and dtype."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    TILE_SIZE = 1024
    # TODO 3: Compute the 1-D launch grid: one block per tile, the last tile
    #   possibly partial, so round the division UP.
    #   Hint: ct.cdiv works on the host too.
    grid = ...
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, TILE_SIZE))
    return out
