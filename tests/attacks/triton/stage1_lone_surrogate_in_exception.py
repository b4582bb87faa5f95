r"""Raises an exception whose text holds a lone surrogate (U+D800), a character no UTF-8
output can encode: the scorecard ended in a traceback where the failing case was explained,
and `grade` exited 1 whatever `--fail-on` said.

The character is spelled out, as a control character is, and the case fails as raising.

expect: FAIL
message: raised an exception
message: \ud800 and \udfff are not characters
points: 0
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    vector_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    raise RuntimeError("\ud800 and \udfff are not characters")
