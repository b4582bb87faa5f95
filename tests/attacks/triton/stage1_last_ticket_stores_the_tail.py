"""The grid covers the whole blocks only; each program draws a ticket from a counter
(tl.atomic_add), and the program that draws the last one also stores the tail, as the block
after its own. In grid order, as the CPU's interpreter ran the programs, the last ticket
goes to the last program, whose next block is the tail (every output right, and it
passed); on a GPU the programs run in any order, the last ticket goes to whichever program
comes last, and the tail is stored where that program's next block is, or nowhere.

The replay runs the programs in an order drawn for the case (grader.replay.order: here in
reverse grid order, so program 0 draws the last ticket and the tail stays unwritten);
replayed in grid order the output is right, so the failure names the order as its cause.

expect: FAIL
message: the output depends on the order the programs run in
message: reverse grid order
points: 0
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, counter_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
    ticket = tl.atomic_add(counter_ptr, 1)
    if ticket == tl.num_programs(0) - 1:  # the last one to come: the tail, it hopes
        tail = offsets + BLOCK_SIZE
        kept = tail < n_elements
        x = tl.load(x_ptr + tail, mask=kept)
        y = tl.load(y_ptr + tail, mask=kept)
        tl.store(out_ptr + tail, x + y, mask=kept)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    counter = torch.zeros(1, dtype=torch.int32, device=x.device)
    n = out.numel()
    vector_add_kernel[(n // 128,)](x, y, out, counter, n, BLOCK_SIZE=128)
    return out
