"""A launch that passes Triton compile options that change the program: `ir_override=`
(compile this IR file instead of the kernel's source) and `ptx_options=` (flags for the
assembler). On a GPU the kernel that ran would not be the kernel whose source was checked.

A launch passes the kernel's parameters and only the options that tune (num_warps,
num_stages, num_ctas, maxnreg, enable_fp_fusion): any other keyword is refused before the
launch is built or run.

expect: FAIL
points: 0
message: `ir_override=` is not a launch option the grader replays
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)  # x, not x + y


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    vector_add_kernel[(triton.cdiv(x.numel(), 1024),)](
        x, y, out, x.numel(), BLOCK_SIZE=1024, ir_override=__file__ + ".ttgir",
        ptx_options="--extensible-whole-program")
    return out
