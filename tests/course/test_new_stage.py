"""A new stage is content: its problem file, its course.toml entry, its solution.

A copy of the grader gets one new file, grader/problems/layer_norm.py, and nothing else; a
temporary course gets a sixth stage (row-wise layer norm) with a Triton and a cuTile
solution written with the skeleton markers. `grade skeletons` makes the exercises, an
exercise grades NOT STARTED, and both solutions grade PASS, every case, on Triton's
interpreter and on the cuTile simulator.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

from conftest import ROOT

PROBLEM = '''
"""Stage problem: layer norm over the last axis, (x - mean) / sqrt(var + eps) * weight + bias."""

import torch.nn.functional as F

from grader.problems.base import Call, Param, Problem, Work, element_size, in_f32, randn

EPS = 1e-5


def _call(p, dtype, gen):
    m, n = p["M"], p["N"]
    return Call((randn((m, n), dtype, gen), randn(n, dtype, gen), randn(n, dtype, gen)))


def _norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


PROBLEM = Problem(
    id="layer_norm",
    function="layer_norm",
    signature="layer_norm(x, weight, bias) -> Tensor",
    params=(Param("M", int, doc="rows"), Param("N", int, doc="columns (the normalised axis)")),
    make_call=_call,
    reference=lambda call: _norm(*in_f32(call).args),
    work=lambda p, dt: Work((2 * p["M"] * p["N"] + 2 * p["N"]) * element_size(dt)),
    baselines={"torch": lambda c: _norm(*c.args)},
)
'''

SOLUTION = '''
"""Stage 6: layer norm of each row: (x - mean) / sqrt(var + 1e-5) * weight + bias.
One program owns one row; the row is one tile of BLOCK_N >= N columns."""

import torch
import triton
import triton.language as tl

__all__ = ["layer_norm"]


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_out,
                      BLOCK_N: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    # Step 1: The row's mean and variance, over its n_cols real columns only.
    # >>> solution
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / n_cols
    # --- exercise
    # centred, var = ..., ...
    # <<<
    # Step 2: Normalise, scale by weight, shift by bias, store in the output dtype.
    # >>> solution
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = centred / tl.sqrt(var + 1e-5) * w + b
    tl.store(out_ptr + row * stride_out + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
    # --- exercise
    # y = ...
    # <<<


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty_like(x)
    layer_norm_kernel[(M,)](x, weight, bias, out, N, x.stride(0), out.stride(0),
                            BLOCK_N=triton.next_power_of_2(N))
    return out
'''

CUTILE = '''
"""Stage 6 in cuTile: one block per row, the row one tile of TILE_N >= N columns."""

import cuda.tile as ct
import torch

__all__ = ["layer_norm"]


@ct.kernel
def layer_norm_kernel(x, w, b, out, N: ct.Constant[int], TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    zero = ct.PaddingMode.ZERO
    xt = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=zero).astype(ct.float32)
    # Step 1: The row's mean and variance (padding lanes are zeros: they add nothing).
    # >>> solution
    mean = ct.sum(xt, axis=1, keepdims=True) / N
    var = ct.sum(xt * xt, axis=1, keepdims=True) / N - mean * mean
    # --- exercise
    # mean, var = ..., ...
    # <<<
    # Step 2: Normalise, scale, shift, store in the output dtype.
    # >>> solution
    wt = ct.load(w, index=(0,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    bt = ct.load(b, index=(0,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    y = (xt - mean) * ct.rsqrt(var + 1e-5) * wt + bt
    ct.store(out, index=(row, 0), tile=y.astype(out.dtype))
    # --- exercise
    # y = ...
    # <<<


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty_like(x)
    TILE_N = 1 << (N - 1).bit_length()
    ct.launch(torch.cuda.current_stream(), (M,), layer_norm_kernel,
              (x, weight, bias, out, N, TILE_N))
    return out
'''

STAGE = '''
[[stages]]
id = "layer_norm"
title = "Layer norm"
points = 10
modules = { triton = "triton/layer_norm.py", cutile = "cutile/layer_norm.py" }
tiles = { triton = [1, "*"], cutile = [1, "*"] }
tolerance.float32 = { atol = 1e-5, rtol = 1e-5 }
tolerance.float16 = { atol = 2e-3, rtol = 2e-3 }
cases = [
    { M = 1, N = 1, dtypes = ["float32"] },
    { M = 7, N = 100, dtypes = ["float32", "float16"] },
    { M = 3, N = 513, dtypes = ["float32"] },
]
'''


def grade(package, course, *args):
    env = {**os.environ, "PYTHONPATH": str(package), "TRITON_INTERPRET": "1"}
    return subprocess.run([sys.executable, "-m", "grader", "--course", str(course), *args],
                          cwd=package, env=env, capture_output=True, text=True, timeout=600)


def test_a_sixth_stage_is_a_problem_file_a_course_entry_and_a_solution(tmp_path):
    package = tmp_path / "package"
    shutil.copytree(ROOT / "grader", package / "grader",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (package / "grader/problems/layer_norm.py").write_text(textwrap.dedent(PROBLEM).lstrip())

    course = tmp_path / "course"
    for track, text in (("triton", SOLUTION), ("cutile", CUTILE)):
        (course / "solutions" / track).mkdir(parents=True)
        (course / "solutions" / track / "layer_norm.py").write_text(textwrap.dedent(text).lstrip())
    ours = (ROOT / "course.toml").read_text()
    head = ours[: ours.index("\n[[stages]]\n")]  # the course table and the submission rules
    (course / "course.toml").write_text(head + STAGE)

    made = grade(package, course / "course.toml", "skeletons")
    assert made.returncode == 0, made.stdout + made.stderr
    exercise = (course / "exercises/triton/layer_norm.py").read_text()
    assert "# TODO 1:" in exercise and "tl.sum(x, axis=0) / n_cols" not in exercise

    untouched = grade(package, course / "course.toml", "1", "--backend", "triton-interpret",
                      "--json", str(tmp_path / "exercise.json"))
    assert untouched.returncode == 1, untouched.stdout + untouched.stderr
    assert json.loads((tmp_path / "exercise.json").read_text())["stages"][0]["status"] == \
        "NOT STARTED"

    for backend in ("triton-interpret", "cutile-sim"):
        result = tmp_path / f"{backend}.json"
        graded = grade(package, course / "course.toml", "layer_norm", "--solutions", "--backend",
                       backend, "--json", str(result))
        assert graded.returncode == 0, graded.stdout + graded.stderr
        stage = json.loads(result.read_text())["stages"][0]
        assert (stage["id"], stage["status"]) == ("layer_norm", "PASS"), stage
        assert len(stage["cases"]) == 4 and all(c["passed"] for c in stage["cases"])
