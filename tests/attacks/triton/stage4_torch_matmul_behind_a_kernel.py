"""A kernel launched as cover while PyTorch computes the product on the host.

The returned tensor is made by torch.matmul, not by any launch: the launches cannot be
replayed into it.

expect: FAIL
message: it called torch.matmul on the host
rules: relaxed
"""

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    tl.load(a_ptr + offsets, mask=offsets < M * K)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    matmul_kernel[(triton.cdiv(M * K, 256),)](a, b, c, M, N, K, BLOCK=256)
    return torch.matmul(a, b)
