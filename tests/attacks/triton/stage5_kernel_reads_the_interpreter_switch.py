"""A kernel body that branches on an attribute of Triton's own configuration, reached as a
module attribute (`triton.knobs.runtime.interpret`): under the compiler's front end the
branch is false and the kernel compiles empty; under the interpreter it is true, and the
kernel would write the output through the interpreter's host arrays.

A kernel body may name only the kernel language's own API: `triton.knobs` is not part of
it, nor is a function of the file that is not a kernel. The file is refused before any
kernel runs.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: `triton.knobs` is not part of triton's kernel API
"""

import torch
import triton
import triton.language as tl


def host_attention(*unused):
    """Finds the replay's own tensors up the stack, and attends on the host."""
    frame = torch.sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "launch":
            q, k, v, o, causal, scale = frame.f_locals["args"][:6]
            found = torch.nn.functional.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), is_causal=bool(causal), scale=float(scale))
            o.copy_(found.to(o.dtype))
            return 0
        frame = frame.f_back
    return 0


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, causal, sm_scale):
    if triton.knobs.runtime.interpret:
        if tl.program_id(axis=0) == 0:
            host_attention(q_ptr, k_ptr, v_ptr, o_ptr)


def flash_attention(q, k, v, causal=False, sm_scale=None):
    o = torch.empty_like(q)
    scale = sm_scale if sm_scale is not None else q.shape[-1] ** -0.5
    flash_attention_kernel[(1,)](q, k, v, o, int(causal), float(scale))
    return o
