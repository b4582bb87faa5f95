"""Stage 1: vector addition, the "hello world" of tile programming.

A Triton kernel is written for ONE program instance, not for one thread. We split
the vector into tiles of BLOCK_SIZE consecutive elements and launch one program per
tile: program `pid` owns elements [pid * BLOCK_SIZE, (pid + 1) * BLOCK_SIZE).
Inside the program, `tl.arange(0, BLOCK_SIZE)` is a whole tile of offsets at once,
and `tl.load` / `tl.store` move the whole tile between memory and registers.

BLOCK_SIZE must be a compile-time constant (`tl.constexpr`) and a power of two,
but the vector length is arbitrary. The last program therefore usually hangs over
the end of the vector. A boolean mask, `offsets < n_elements`, switches those tail
lanes off: masked lanes neither read nor write memory.

The host wrapper allocates the output and launches a 1-D grid of
cdiv(n, BLOCK_SIZE) programs. Rounding down instead would leave the tail of the
output unwritten.

Making it fast. Per element the kernel reads two values and writes one (12 bytes in
fp32) and does one addition: nothing but memory traffic, so the most it can reach is the
GPU's copy bandwidth, and the plain tile of 1024 elements already comes close to it. The
knobs of the later stages exist here too (BLOCK_SIZE, `num_warps` at the launch) and are worth a try to see
how little they change when the memory system is already saturated; the speed points of
this stage mostly reward a kernel that reads and writes each element exactly once.
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # TODO 1: Compute the offsets of the elements this program owns, and a mask that is
    #   True only for offsets inside the vector (the last tile may hang over the end).
    #   Hint: tl.program_id(axis=0), tl.arange(0, BLOCK_SIZE).
    offsets = ...
    mask = ...

    # TODO 2: Load the x and y tiles, add them, and store the sum into out. Use the
    #   mask on every memory access so tail lanes never touch memory.
    #   Hint: tl.load(ptr + offsets, mask=...), tl.store(ptr + offsets, value, mask=...).
    x = ...
    y = ...
    ...  # store x + y into out, masked


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return x + y for two 1-D tensors of the same shape and dtype."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    BLOCK_SIZE = 1024
    # TODO 3: Compute the 1-D launch grid: one program per tile, the last tile
    #   possibly partial, so round the division UP.
    #   Hint: triton.cdiv.
    grid = ...
    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return out
