"""Each program hands the next program its tile of y through a scratch buffer, written and
read with atomics (tl.atomic_add into zeros, then tl.atomic_add of 0) instead of plain
stores and loads, which the race check of the watch does not see: right only when the programs run
one after another in grid order, as the CPU's interpreter ran them (every output right, and
it passed); on a GPU the programs of a launch run in any order and none waits for another,
so a program may read its tile before the program before it wrote it.

The replay runs the programs in an order drawn for the case (grader.replay.order: here in
reverse grid order), and the output is wrong; replayed in grid order it is right, so the
failure names the order as its cause.

expect: FAIL
message: the output depends on the order the programs run in
message: reverse grid order
points: 0
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, scratch_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    following = offsets + BLOCK_SIZE
    if pid == 0:
        tl.atomic_add(scratch_ptr + offsets, tl.load(y_ptr + offsets, mask=mask, other=0.0),
                      mask=mask)
    y = tl.atomic_add(scratch_ptr + offsets, 0.0, mask=mask)  # handed over, it hopes
    tl.atomic_add(scratch_ptr + following,  # the next program's tile
                  tl.load(y_ptr + following, mask=following < n_elements, other=0.0),
                  mask=following < n_elements)
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    scratch = torch.zeros_like(x)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, 128),)](x, y, out, scratch, n, BLOCK_SIZE=128)
    return out
