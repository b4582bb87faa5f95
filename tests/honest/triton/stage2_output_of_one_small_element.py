"""The handout's own fused GELU (the reference solution's kernel, y = z / (1 + exp(-2u)) in
float32), which fails the course's M = 1, N = 1 float32 case in about one run seed of sixty:
`grade 2 --seed 32` (this file, or `--solutions`, on either track) draws z = x * w + b = -3.57
there. GELU is small at such z (-4e-4), and PyTorch's float32 reference 0.5 z (1 + tanh(u))
loses most of its digits to the cancellation in 1 + tanh(u): it is 7.9e-5 of itself off the
true value, the kernel 2e-7. The element is within atol + rtol |ref| (atol = 1e-5), but the
whole-output criterion (grader/judge/compare.py) held a one-element output to rtol = 1e-5 of
the reference's own size, and the case failed: "every element is within the tolerance, but
the error over the whole output is 7.89e-05 of the output's size". 49 of 3000 run seeds draw
a z in (-5.2, -3.2) for the float32 case, 6 of 3000 one near -5 for the bfloat16 case. Now
the criterion allows atol / sqrt(n) beside rtol of the output's size: a few elements near
zero are held to atol, as each is (tests/judge/test_compare.py holds that element to it).

The test harness grades at run seed 12345, where z = -0.39; `grade 2 --seed 32` is the run
that failed. This kernel must earn every point at every seed.

expect: PASS
points: 15
"""
import torch
import triton
import triton.language as tl

__all__ = ["fused_gelu"]


@triton.jit
def fused_gelu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N,
    stride_xm, stride_xn,
    stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // tiles_n  # tiles numbered row by row: see the docstring
    pid_n = pid % tiles_n

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    mask = (rows[:, None] < M) & col_mask[None, :]

    x_ptrs = x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn
    x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)

    z = x * w[None, :] + b[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)  # the constant is sqrt(2/pi)
    y = z / (1.0 + tl.exp2(u * (-2.0 * 1.4426950408889634)))  # exp(-2u); log2(e) = 1.44...

    out_ptrs = out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=mask)


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    BLOCK_M, BLOCK_N = 32, 128
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    fused_gelu_kernel[grid](
        x, weight, bias, out,
        M, N,
        x.stride(0), x.stride(1),
        out.stride(0), out.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
    )
    return out
