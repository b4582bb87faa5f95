"""The recorder of the launches is found from inside the child and its proposal rewritten.

The proposal is only ever data: whatever it says, the replay runs the file's kernels on the
grader's inputs. Here it is made to return the input x, which is not x + y.

expect: FAIL
message: 1000 of 1000 elements mismatch
rules: relaxed
"""

import gc

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    vector_add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(),
                                                          BLOCK_SIZE=1024)
    for thing in gc.get_objects():
        if type(thing).__name__ == "Recorder":
            thing.finish = lambda output, real=thing.finish: real(x)
    return out
