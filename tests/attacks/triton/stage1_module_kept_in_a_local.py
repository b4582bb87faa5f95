"""A kernel that keeps the `triton` module in a local variable, then reads attributes of the
local freely: its configuration (`knobs.runtime.interpret`, false to the compiler's front
end, true in the interpreter) and, under the interpreter only, a module of the host
reached through Triton's own packages, from which it replaces the replay's launcher.

A module is never a value in a kernel: it is only the start of an attribute chain that is
looked up by spelling and kept if it is the language's own API. The kernel is refused
before anything is built.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `triton` is a module
"""

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    t = triton
    if t.knobs.runtime.interpret:
        modules = t.backends.nvidia.compiler.sys.modules
        source = modules["grader.tracks"]
        source.wing("triton").cpu.launch = lambda step, k, args, kw: args[2].copy_(args[0] + args[1])
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 1024),)
    vector_add_kernel[grid](x, y, out, x.numel(), BLOCK_SIZE=1024)
    vector_add_kernel[grid](x, y, out, x.numel(), BLOCK_SIZE=1024)  # runs the new launcher
    return out
