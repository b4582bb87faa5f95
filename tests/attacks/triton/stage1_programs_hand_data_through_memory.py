"""Each program copies the next program's tile of y into a scratch buffer, and reads its own
from there: right only when the programs run one after another, in order, as the CPU's
interpreter ran them (every output right, and it passed); on a GPU the programs of a launch
run at once and none waits for another's stores, so a program may read its tile before it
was written (a race).

The watch of the loads and stores sees one program read what another stored in the same
launch, and the case fails on it, naming the line. (The case runs its programs in reverse
grid order, grader.replay.order: program 7 reads its tile before program 6 stores it.)

expect: FAIL
message: its programs race
message: line 29
message: program 6 stores to an element of a tensor the wrapper allocated (flat index 896) that program 7 read
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
    tl.store(scratch_ptr + following, tl.load(y_ptr + following, mask=following < n_elements),
             mask=following < n_elements)  # the next program's tile, handed over
    if pid == 0:
        tl.store(scratch_ptr + offsets, tl.load(y_ptr + offsets, mask=mask), mask=mask)
    y = tl.load(scratch_ptr + offsets, mask=mask)  # written by the program before, it hopes
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    scratch = torch.empty_like(x)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, 128),)](x, y, out, scratch, n, BLOCK_SIZE=128)
    return out
