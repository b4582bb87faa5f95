"""Reference kernels against PyTorch on the GPU, side by side in one run; prints one table.

For each shape (every speed case in course.toml, plus the few shapes in EXTRA below that
the course does not time), the Triton and cuTile references and the PyTorch implementations
(eager, torch.compile, SDPA backends) are timed together by grader.timing.measure: CUDA
events, L2 flushed before every call, calls interleaved, median reported. Every candidate's
output is checked against the float32 reference first.

A second opinion on every row: the same callables timed by an independent method in the
same run, Triton's `triton.testing.do_bench` (its own L2 flush and repeat rule, median).
The table shows its time, the speed-up over torch by it, and the gap to grader.timing's
figure; a gap above DISAGREE is marked `!`, so a bias of the grader's clock shows up as a
disagreement rather than hiding in both columns.

Usage:  python -m scripts benchmark [--only STAGE] [--markdown FILE] [--seconds S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch


from grader import timing
from grader.judge.compare import Expected, compare
from grader.sandbox.outcomes import Outcome
from grader.problems import DTYPES
from grader.sandbox.submission import Submission
from grader.speed import ceilings
from scripts import common

DISAGREE = 0.03  # the two methods' medians differ by more than this: find out why


def do_bench_ms(fn) -> float:
    """fn's median time by triton.testing.do_bench (its own warm-up, L2 flush, repeats)."""
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median"))


# Shapes kernel engineers also quote that course.toml does not time, per stage: (params,
# dtype). Parameters left out take the problem's defaults, as in course.toml.
EXTRA = {
    "matmul": [({"M": 8192, "N": 8192, "K": 8192}, dt) for dt in ("bfloat16", "float16")],
    "flash_attention": [({"B": 4, "H": 32, "N": 4096, "D": 64, "causal": c}, "bfloat16")
                        for c in (False, True)],
}


def shapes(stage) -> list[tuple[dict, str]]:
    """(params, dtype) of each shape benchmarked for a stage: its speed cases, then EXTRA."""
    listed = [(case.params, case.dtype) for case in (stage.speed.cases if stage.speed else ())]
    problem = stage.problem
    for params, dtype in EXTRA.get(stage.id, []):
        listed.append(({p.name: params.get(p.name, p.default) for p in problem.params}, dtype))
    return listed


def shape_label(params: dict) -> str:
    """A shape as the tables print it: the parameters that are set, `name=value`."""
    return ",".join(f"{k}={v}" for k, v in params.items() if v is not None)


def references(course, stage, tracks: list[str]) -> dict[str, Submission]:
    """The stage's reference solution on each track, loaded."""
    kernels = {}
    for track in tracks:
        kernels[track] = common.reference(course, stage, track)
        kernels[track].load()
    return kernels


def callables(stage, kernels: dict[str, Submission], params: dict, dtype: str):
    """What is timed at one shape: each kernel bound to inputs drawn on the GPU, then
    PyTorch's implementations of the problem; and a line for every output that is wrong
    against the float32 reference."""
    problem = stage.problem
    call = problem.draw(params, dtype, 0, device="cuda")
    expected = problem.reference(call)
    candidates = {name: k.bound(call.args, call.kwargs) for name, k in kernels.items()}
    candidates.update({name: (lambda b=b: b(call)) for name, b in problem.baselines.items()})
    wrong = []
    for name, fn in candidates.items():
        verdict = compare(Outcome(output=fn()), Expected(expected, DTYPES[dtype], "cuda",
                                                           stage.tolerance[dtype]))
        if not verdict.passed:
            wrong.append(f"{name}: {verdict.summary}")
    return candidates, wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="stage id (repeatable)")
    parser.add_argument("--markdown", type=Path, help="also write the table as Markdown")
    parser.add_argument("--seconds", type=float, default=4.0, help="timing budget per shape")
    parser.add_argument("--no-cutile", action="store_true")
    args = parser.parse_args()

    course = common.course()
    limits = ceilings.ceilings()
    print(f"# {limits.gpu}: measured ceilings {limits.memory_gbps:g} GB/s, "
          f"{limits.tflops} TFLOP/s; torch {torch.__version__}", flush=True)
    rows = []
    for stage in course.stages:
        if args.only and stage.id not in args.only:
            continue
        problem = stage.problem
        kernels = references(course, stage, ["triton"] + ([] if args.no_cutile else ["cutile"]))
        for params, dtype in shapes(stage):
            candidates, wrong = callables(stage, kernels, params, dtype)
            samples = timing.measure(candidates, timing.Budget(seconds=args.seconds))
            work = problem.work(params, DTYPES[dtype])
            roofline = limits.roofline(work, dtype)
            shape = shape_label(params)
            torch_ms = samples["torch"].median
            second = {name: do_bench_ms(fn) for name, fn in candidates.items()}
            for name, s in samples.items():
                rows.append((stage.id, shape, dtype, name, s.median, roofline.achieved(s.median / 1e3),
                             roofline.unit, roofline.fraction(s.median / 1e3),
                             torch_ms / s.median, s.spread, len(s.times_ms), second[name],
                             second["torch"] / second[name]))
                print(_row(rows[-1]), flush=True)
            for line in wrong:
                print(f"  WRONG {stage.id} {shape} {dtype}: {line}", flush=True)
    if args.markdown:
        header = ("| stage | shape | dtype | implementation | ms | achieved | of limit | "
                  "vs torch | IQR/median | repeats | do_bench ms | vs torch (do_bench) | gap |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        body = "".join("| " + " | ".join(_cells(r)) + " |\n" for r in rows)
        args.markdown.write_text(header + body)
    return 0


def _cells(r) -> list[str]:
    stage, shape, dtype, name, ms, rate, unit, fraction, speedup, spread, n, other, other_speedup = r
    gap = other / ms - 1
    return [stage, shape, dtype, name, f"{ms:.4f}", f"{rate:.0f} {unit}", f"{100 * fraction:.0f}%",
            f"{speedup:.2f}x", f"{100 * spread:.1f}%", str(n), f"{other:.4f}",
            f"{other_speedup:.2f}x", f"{100 * gap:+.1f}%" + (" !" if abs(gap) > DISAGREE else "")]


def _row(r) -> str:
    return "  ".join(f"{c:>14}" if i > 3 else f"{c:<16}" for i, c in enumerate(_cells(r)))


if __name__ == "__main__":
    sys.exit(main())
