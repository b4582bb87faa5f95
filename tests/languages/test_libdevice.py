"""CUDA's libdevice on Triton's interpreter (grader/languages/triton/libdevice.py): while a
launch runs on the CPU, both libdevice modules compute what a GPU computes, and afterwards
they are Triton's own again. The honest submission
tests/honest/triton/stage2_gelu_with_libdevice_tanh.py grades it whole."""

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice as neutral
from triton.language.extra.cuda import libdevice as cuda

from grader.languages.triton.libdevice import NUMPY, libdevice_on_the_cpu, named


@triton.jit
def _apply(x_ptr, out_ptr, n, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    if WHICH == 0:
        y = neutral.tanh(x) + cuda.erf(x)
    elif WHICH == 1:
        y = neutral.pow(x, 2.0) + cuda.round(x)
    else:
        y = cuda.j0(x)
    tl.store(out_ptr + offsets, y, mask=mask)


def _run(which: int, x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _apply[(1,)](x, out, x.numel(), WHICH=which, BLOCK=64)
    return out


def test_a_symbol_is_named_as_the_table_names_it():
    assert named("__nv_tanhf") == "tanh" and named("__nv_tanh") == "tanh"
    assert named("__nv_erfcf") == "erfc" and named("__nv_fmaf") == "fma"
    assert named("__nv_j0f") == "j0" and "j0" not in NUMPY


def test_libdevice_computes_on_the_interpreter_as_a_gpu_does():
    x = torch.linspace(-3, 3, 50)
    with libdevice_on_the_cpu():
        got = _run(0, x)
        rounded = _run(1, torch.tensor([-2.5, -0.5, 0.5, 1.5, 2.0]))
    torch.testing.assert_close(got, torch.tanh(x) + torch.erf(x), rtol=1e-6, atol=1e-6)
    # CUDA rounds halves away from zero (numpy's round would give -2, 0, 0, 2)
    assert rounded.tolist() == [6.25 - 3, 0.25 - 1, 0.25 + 1, 2.25 + 2, 4.0 + 2]


def test_a_function_with_no_cpu_form_says_which_and_what_to_write():
    with libdevice_on_the_cpu(), pytest.raises(Exception, match=r"libdevice\.j0 has no CPU "
                                                                r"form in the grader; write it "
                                                                r"with tl\.\* functions"):
        _run(2, torch.ones(4))


def test_the_modules_are_tritons_own_again_after_a_launch():
    before = (neutral.tanh, cuda.tanh)
    with libdevice_on_the_cpu():
        assert (neutral.tanh, cuda.tanh) != before
    assert (neutral.tanh, cuda.tanh) == before


def test_the_fast_approximations_have_no_cpu_form():
    """A GPU's fast_expf is far less exact than numpy's exp: computed exactly here, a kernel
    could pass on the CPU and fail on a GPU. It fails at its line instead."""
    assert named("__nv_fast_expf") == "fast_expf"
    assert not [name for name in NUMPY if name.startswith("fast_")]
