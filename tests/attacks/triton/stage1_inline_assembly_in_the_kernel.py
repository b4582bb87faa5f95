"""A kernel whose addition is inline PTX (`tl.inline_asm_elementwise`): instructions that
neither the grader's checks nor Triton's see into. This one only adds; the same call could
store outside every tensor, or read the GPU's clock and work less in some calls than in
others. The interpreter cannot run it at all, so on a CPU nothing of it would be checked.

A kernel body may not call it: the file is refused before any kernel runs, at the line.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `tl.inline_asm_elementwise` cannot be used in a kernel: inline assembly runs instructions
message: write the computation with tl.* operations
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    out = tl.inline_asm_elementwise("add.f32 $0, $1, $2;", "=r,r,r", [x, y],
                                    dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offsets, out, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
