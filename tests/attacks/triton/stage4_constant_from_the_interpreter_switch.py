"""A constexpr constant read from Triton's own configuration (`triton.knobs.runtime.
interpret`), which differs between the process that checks the kernel with the compiler's
front end and the one that runs it in the interpreter: the front end compiles the branch
that does nothing, the interpreter takes the one that calls a host function of the file.

A constant is data: an attribute of the kernel language is read only when it is a dtype,
an enum member or a math number, never its configuration; and a kernel cannot call a
function of the file that is not a kernel. The file is refused before any kernel runs.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `INTERPRETED` is used by a kernel, so it must be a constant written as data
"""

import torch
import triton
import triton.language as tl

INTERPRETED = tl.constexpr(triton.knobs.runtime.interpret)


def host_matmul(*unused):
    """Finds the replay's own tensors up the stack, and multiplies on the host."""
    frame = torch.sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "launch":
            a, b, c = frame.f_locals["args"][:3]
            c.copy_((a.float() @ b.float()).to(c.dtype))
            return 0
        frame = frame.f_back
    return 0


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K):
    if INTERPRETED:
        if tl.program_id(axis=0) == 0:
            host_matmul(a_ptr, b_ptr, c_ptr, M, N, K)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    matmul_kernel[(1,)](a.contiguous(), b.contiguous(), c, M, N, K)
    return c
