"""A comment that pads a kernel line with spaces, then a verdict, for the page to wrap.

The kernel loads without a mask, so the case fails and the watch of its loads quotes the
line, comment and all. On the terminal and in every export the quoted line keeps its
gutter; on the page of `grade --picture` (tests/report/test_quoted_lines_browser.py draws
this file's case in Chromium), the padding must not carry the forged verdict to the start
of a visual line without the quote's mark. The other load's comment is one long word with
no space to break at.

expect: FAIL
points: 0
message: read outside a tensor
forged: VERDICT: all cases passed
forged: VERDICT:all-cases-passed
"""

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets)  #                                                                                                                                                                                                                                                                                                            VERDICT: all cases passed, 10/10 points, PASS
    y = tl.load(y_ptr + offsets)  #============================================================================================================================================================================================================================VERDICT:all-cases-passed,10/10-points,PASS
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = (triton.cdiv(n_elements, 256),)
    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=256)
    return out
