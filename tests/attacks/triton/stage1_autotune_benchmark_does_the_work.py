"""An autotuner whose benchmarking function computes the output on the host.

`do_bench=` is code the autotuner calls during the launch. The grader rebuilds only the
decorator's literal configurations, so the file's kernels cannot be rebuilt with it.

expect: FAIL
message: `do_bench=` is not an option the grader rebuilds
rules: relaxed
"""

import torch
import triton
import triton.language as tl

_pending = []


def _bench(fn, quantiles=None, **kwargs):
    for x, y, out in _pending:
        out.copy_(x + y)
    return [1.0, 1.0, 1.0]


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024})], key=["n_elements"],
                 do_bench=_bench)
@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _pending[:] = [(x, y, out)]
    vector_add_kernel[lambda meta: (triton.cdiv(out.numel(), meta["BLOCK_SIZE"]),)](
        x, y, out, out.numel())
    return out
