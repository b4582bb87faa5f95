"""What the L2 flush bills to the timed call: a zeroing flush against the reading one.

grader.timing flushes L2 before every timed call. A flush that zeroes its buffer leaves L2
full of dirty lines, and the timed call that follows pays for writing them back to DRAM;
a flush that reads its buffer leaves clean lines, so that write-back happens inside the
flush, before the start event. The difference matters most for short memory-bound kernels:
here the references of course.toml's memory-bound speed cases and their PyTorch baselines are timed
with each flush, alternating, `--rounds` times, with timing.measure.

Usage:  python -m scripts flush [--rounds N] [--seconds S]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch


from grader import timing
from grader.problems import DTYPES
from scripts import common


def memory_bound_cases(course):
    """course.toml's speed cases whose limit is memory (no FLOPs): the short ones, where a
    write-back of up to one L2 shows."""
    for stage in course.stages:
        for case in stage.speed.cases if stage.speed else ():
            if not stage.problem.work(case.params, DTYPES[case.dtype]).flops:
                yield stage, case


def zeroing(l2: timing.L2Flush):
    """The flush grader.timing used before: the same buffer, zeroed instead of read."""
    return l2.buffer.zero_


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--only", action="append", help="stage id (repeatable)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("flush check: not run: needs a GPU")
        return 1
    course = common.course()
    reading = timing.L2Flush(torch.device("cuda", torch.cuda.current_device()))
    flushes = {"zeroing": zeroing(reading), "reading": reading}
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}: median ms per call "
          f"with each flush, median of {args.rounds} rounds")
    print(f"{'stage':<12} {'case':<24} {'impl':<8} {'zeroing':>9} {'reading':>9} {'change':>8}")
    for stage, case in memory_bound_cases(course):
        if args.only and stage.id not in args.only:
            continue
        stage_id, params, dtype = stage.id, case.params, case.dtype
        problem = stage.problem
        call = problem.make_call(params, DTYPES[dtype], torch.Generator().manual_seed(0)).to("cuda")
        kernels = {}
        for track in ("triton", "cutile"):
            submission = common.reference(course, stage, track)
            submission.load()
            kernels[track] = submission.bound(call.args, call.kwargs)
        kernels["torch"] = lambda: problem.baselines["torch"](call)
        figures = {name: {"zeroing": [], "reading": []} for name in kernels}
        for _ in range(args.rounds):
            for label, flush in flushes.items():
                found = timing.measure(kernels, timing.Budget(seconds=args.seconds), flush)
                for name, samples in found.items():
                    figures[name][label].append(samples.median)
        shape = ",".join(f"{k}={v}" for k, v in params.items()) + f" {dtype}"
        for name, f in figures.items():
            zero, read = statistics.median(f["zeroing"]), statistics.median(f["reading"])
            print(f"{stage_id:<12} {shape:<24} {name:<8} {zero:>9.4f} {read:>9.4f} "
                  f"{100 * (read / zero - 1):>+7.1f}%", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
