"""Differential test of the cuTile simulator against real cuTile; run on a GPU machine.

For every cuTile reference, each broken variant below, the course's correctness cases and
randomized shapes, the same host wrapper runs twice: with real `ct.launch` on the GPU, and
with the simulator's launch on the CPU. Both outputs are judged against the float32 PyTorch
reference with the stage's tolerance; the verdicts (pass/fail) must agree, and where both
pass, the two outputs must agree within the stage's tolerance. Prints one line per variant
and exits 1 on any disagreement.

Usage:  python -m scripts simdiff [--random N] [--only STAGE]
        (where scripts/stage-device.sh staged the cuTile toolchain: `source .device/env.sh` first)
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch


import cuda.tile as ct

from grader.course import Case, Stage
from grader.judge.compare import Expected, compare
from grader.languages.cutile import simulator
from grader.problems import DTYPES
from grader.replay.poison import PoisonFreshAllocations
from grader.sandbox.outcomes import Outcome
from grader.sandbox.submission import Submission
from scripts import common

# (stage, name, old, new, undefined): faults a student makes in cuTile, applied to the
# references. `undefined`: the fault relies on behaviour cuTile leaves undefined (padding
# that is UNDETERMINED). The simulator makes it fail every time (poison), while a GPU may
# happen to read harmless values: "real pass, sim fail" is then expected, not a disagreement.
VARIANTS = [
    ("vector_add", "grid rounded down", "ct.cdiv(n_elements, TILE_SIZE)", "n_elements // TILE_SIZE",
     False),
    ("fused_gelu", "bias left out", "z = xt * w[None, :] + b[None, :]", "z = xt * w[None, :]", False),
    ("fused_gelu", "tile index transposed", "ct.store(out, index=(bid_m, bid_n)",
     "ct.store(out, index=(bid_n, bid_m)", False),
    ("softmax", "undetermined padding", ", padding_mode=ct.PaddingMode.NEG_INF", "", True),
    ("softmax", "no max subtraction", "p = ct.exp2((xt - ct.max(xt, axis=1, keepdims=True)) * LOG2E)",
     "p = ct.exp2(xt * LOG2E)", False),
    ("matmul", "no zero padding along K", ", padding_mode=zero)", ")", True),
    ("matmul", "one K step only", "for k in range(num_k_tiles):", "for k in range(1):", False),
    ("flash_attention", "no causal mask", "visible = visible & (offs_n <= offs_m)",
     "visible = visible", False),
    ("flash_attention", "acc not rescaled", "vt, acc * alpha)", "vt, acc)", False),
    ("flash_attention", "ragged tile unmasked", "unmasked = n_ctx // TILE_N",
     "unmasked = ct.cdiv(n_ctx, TILE_N)", False),
]

# Randomized parameters per stage; the ones left out take the problem's defaults.
RANDOM_SHAPES = {
    "vector_add": lambda r: {"n": r.randint(1, 5000)},
    "fused_gelu": lambda r: {"M": r.randint(1, 300), "N": r.randint(1, 2000)},
    "softmax": lambda r: {"M": r.randint(1, 64), "N": r.randint(1, 6000), "scale": r.choice([1.0, 50.0])},
    "matmul": lambda r: {"M": r.randint(1, 300), "N": r.randint(1, 300), "K": r.randint(1, 300)},
    "flash_attention": lambda r: {"B": r.randint(1, 2), "H": r.randint(1, 3), "N": r.randint(1, 300),
                                  "D": r.choice([16, 32, 64, 128]), "causal": r.random() < 0.5},
}


def random_params(stage: Stage, rng: random.Random) -> dict:
    """Random parameters for one case of `stage`, in its problem's order, defaults filled."""
    drawn = RANDOM_SHAPES[stage.id](rng)
    return {p.name: drawn.get(p.name, p.default) for p in stage.problem.params}


def load(source: str, name: str, function: str) -> Submission:
    path = Path("/tmp") / f"cutile_diff_{name}.py"
    path.write_text(source)
    submission = Submission(path, function)
    submission.load()
    return submission


def run(submission: Submission, call, device: str, simulate: bool):
    """(output on the CPU or None, error text or None)."""
    call = call.to(device)
    real_launch = ct.launch
    if simulate:
        ct.launch = simulator.launch
    try:
        # Outputs start as poison on both sides, as when grading: an element that is never
        # written cannot pass by inheriting a right value from an earlier allocation.
        with PoisonFreshAllocations():
            out = submission.bound(call.args, call.kwargs)()
        if device == "cuda":
            torch.cuda.synchronize()
        return out.detach().cpu(), None
    except Exception as exc:  # noqa: BLE001 - a failing variant is a result
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    finally:
        ct.launch = real_launch


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--random", type=int, default=3, help="random shapes per stage and dtype")
    parser.add_argument("--only", action="append")
    args = parser.parse_args()
    course = common.course()
    rng = random.Random(20261130)
    disagreements = 0
    for stage in course.stages:
        if args.only and stage.id not in args.only:
            continue
        reference = course.module_path(stage, "cutile", solutions=True).read_text()
        for sid, name, old, _, _ in VARIANTS:
            if sid == stage.id and old not in reference:
                raise SystemExit(f"variant {name!r}: {old!r} is not in the {sid} reference")
        variants = [("reference", reference, False)] + [
            (name, reference.replace(old, new), undefined)
            for sid, name, old, new, undefined in VARIANTS if sid == stage.id]
        cases = list(stage.cases) + [
            Case(random_params(stage, rng), dtype, rng.randrange(2**31))
            for dtype in stage.tolerance for _ in range(args.random)]
        for name, source, undefined in variants:
            submission = load(source, f"{stage.id}_{name.replace(' ', '_')}", stage.problem.function)
            agree, stricter, verdicts, notes = 0, 0, {"real": 0, "sim": 0}, []
            for case in cases:
                dtype = DTYPES[case.dtype]
                call = stage.problem.make_call(case.params, dtype, torch.Generator().manual_seed(case.seed))
                expected = stage.problem.reference(call)
                tol = stage.tolerance[case.dtype]
                results = {}
                for side, device, simulate in (("real", "cuda", False), ("sim", "cpu", True)):
                    out, error = run(submission, call, device, simulate)
                    ok = error is None and compare(Outcome(output=out),
                                                   Expected(expected, dtype, "cpu", tol)).passed
                    results[side] = (ok, out, error)
                    verdicts[side] += ok
                (real_ok, real_out, real_err), (sim_ok, sim_out, sim_err) = results["real"], results["sim"]
                same = real_ok == sim_ok
                if same and real_ok:
                    same = compare(Outcome(output=sim_out.to(dtype)),
                                   Expected(real_out.float(), dtype, "cpu", tol)).passed
                if same:
                    agree += 1
                elif undefined and real_ok and not sim_ok:
                    stricter += 1  # undefined behaviour that happened to work on the GPU
                else:
                    notes.append(f"{case.id}: real {'pass' if real_ok else real_err or 'fail'}, "
                                 f"sim {'pass' if sim_ok else sim_err or 'fail'}")
            disagreements += len(cases) - agree - stricter
            status = "ok  " if agree + stricter == len(cases) else "DIFF"
            extra = f", {stricter} fail only in the simulator (undefined behaviour)" if stricter else ""
            print(f"{status} {stage.id:<16} {name:<24} {agree}/{len(cases)} agree{extra}; passed: "
                  f"real {verdicts['real']}, sim {verdicts['sim']}", flush=True)
            for note in notes[:5]:
                print(f"       {note}", flush=True)
    print(f"cutile-sim vs cuTile: {'OK' if not disagreements else f'{disagreements} disagreements'}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
