"""The classic faults fail on every run seed, not on most: a student whose kernel has one
of them must never see a PASS by luck of the draw (a softmax without its online rescale
once passed 10 of 11 cases in one run and 9 of 11 in another).

Each fault is a reference with one substitution (as in tests/judge/test_broken_kernels.py), and
the reference's shortcuts to second kernels never taken (conftest.without_shortcuts), in
both tracks (Triton on its interpreter, cuTile on the simulator), graded on 12 run seeds
in one sandboxed child. Per seed only the cases where the fault shows are called (`where`),
which is enough for the claim and keeps the test short.
"""

import pytest
from conftest import broken, without_shortcuts

from grader.backends import selection as backends
from grader.judge.stage import StageCheck
from grader.results import Failure
from grader.sandbox import ChildProcess

# Twelve seeds: a fault that passes one seed in ten is seen with probability 0.72 (0.88
# with the twenty this sweep once took; two-core CI keeps its slow sweeps under 20
# minutes).
SEEDS = [7 * n + 1 for n in range(12)]

TRITON = {
    "grid rounded down": ("vector_add", "stage1_vector_add.py",
                          "triton.cdiv(n_elements, BLOCK_SIZE)", "n_elements // BLOCK_SIZE",
                          lambda c: c.params["n"] % 1024 != 0),
    "softmax without the online rescale": (
        "softmax", "stage3_softmax.py",
        "l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(x - m_new), axis=0)",
        "l_i = l_i + tl.sum(tl.exp(x - m_new), axis=0)",
        # A falling row has its max in its first block: nothing to rescale (and slow here).
        lambda c: c.params["N"] > 4096 and c.params["rows"] == "random"),
    "softmax without the max subtraction": (
        "softmax", "stage3_softmax.py", "m_new = tl.maximum(m_i, tl.max(x, axis=0))",
        "m_new = tl.full((), 0.0, dtype=tl.float32)", lambda c: c.params["scale"] > 1),
    "matmul with a float16 accumulator": (
        "matmul", "stage4_matmul.py", 'acc = tl.dot(a, b, acc, input_precision="tf32")',
        "acc = (acc.to(tl.float16) + tl.dot(a, b, out_dtype=tl.float16)).to(tl.float32)",
        lambda c: c.dtype == "float16" and c.params["K"] >= 1024),
    "attention without the causal mask": (
        "flash_attention", "stage5_flash_attention.py",
        "visible = visible & (offs_n[None, :] <= offs_m[:, None])", "visible = visible",
        lambda c: c.params["causal"]),
    "attention without the accumulator's rescale": (
        "flash_attention", "stage5_flash_attention.py",
        "acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)",
        "acc = acc + tl.dot(p.to(v.dtype), v)", lambda c: c.params["N"] > 64),
}

CUTILE = {
    # Below one tile the grid is (0,), which cuTile refuses to launch (a RAISED verdict in
    # its own words, tests/faults/cutile/stage1_grid_rounded_down.py): here the longer cases.
    "grid rounded down": ("vector_add", "stage1_vector_add.py",
                          "ct.cdiv(n_elements, TILE_SIZE)", "n_elements // TILE_SIZE",
                          lambda c: c.params["n"] > 1024 and c.params["n"] % 1024 != 0),
    # Rows above 32768 columns take the reference's tiled, online path.
    "softmax without the online rescale": (
        "softmax", "stage3_softmax.py", "l_i = (l_i * ct.exp2((m_i - m_new) * LOG2E)",
        "l_i = (l_i", lambda c: c.params["N"] > 32768 and c.params["rows"] == "random"),
    "softmax without the max subtraction": (
        "softmax", "stage3_softmax.py",
        "p = ct.exp2((xt - ct.max(xt, axis=1, keepdims=True)) * LOG2E)",
        "p = ct.exp2(xt * LOG2E)", lambda c: c.params["scale"] > 1),
    "matmul with a float16 accumulator": (
        "matmul", "stage4_matmul.py", "acc = ct.mma(at, bt, acc)",
        "acc = ct.mma(at, bt, acc.astype(ct.float16)).astype(ct.float32)",
        lambda c: c.dtype == "float16" and c.params["K"] >= 1024),
    "attention without the causal mask": (
        "flash_attention", "stage5_flash_attention.py",
        "visible = visible & (offs_n <= offs_m)", "visible = visible",
        lambda c: c.params["causal"]),
    "attention without the accumulator's rescale": (
        "flash_attention", "stage5_flash_attention.py",
        "acc = ct.mma(p.astype(vt.dtype), vt, acc * alpha)",
        "acc = ct.mma(p.astype(vt.dtype), vt, acc)", lambda c: c.params["N"] > 64),
}

FAULTS = {("triton", name): fault for name, fault in TRITON.items()}
FAULTS.update({("cutile", name): fault for name, fault in CUTILE.items()})
BACKEND = {"triton": "triton-interpret", "cutile": "cutile-sim"}


@pytest.mark.slow
@pytest.mark.parametrize("track, fault", list(FAULTS), ids=[f"{t}: {f}" for t, f in FAULTS])
def test_a_classic_fault_fails_on_every_seed(course, tmp_path, track, fault):
    stage_id, file, old, new, where = FAULTS[track, fault]
    stage = course.select(stage_id)
    module = tmp_path / file
    module.write_text(without_shortcuts(track, file, broken(track, file, old, new)))
    selection = backends.select(BACKEND[track])
    selection.backend.prepare()
    child = ChildProcess(module, stage.problem.function, "cpu", hidden=course.private_paths,
                    rules=course.rules, track=track)
    cases = [c for c in stage.cases if where(c)]
    assert cases  # the cases where the fault shows are in the course
    passed_on, kinds = [], set()
    try:
        child.load()
        check = StageCheck(stage, selection, child)
        for seed in SEEDS:
            check.run_seed = seed
            verdicts = [check.judge(case) for case in cases]
            if all(v.passed for v in verdicts):
                passed_on.append(seed)
            kinds |= {v.kind for v in verdicts if not v.passed}
    finally:
        child.close()
    assert not passed_on, f"{track}: {fault} passed every case on run seeds {passed_on}"
    # Failed for the fault's own reason: wrong values, not a kernel the substitution broke.
    assert kinds == {Failure.WRONG_RESULT}, kinds
