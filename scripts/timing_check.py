"""The grader's timing of a submission against the in-process CUDA-event figure; one table.

For every speed case of course.toml, on each track:

- "in-process": the reference and its baseline timed by grader.timing.measure in this
  process, interleaved call by call (how speed grading timed before grader/speed/trial.py);
- "graded": the reference in its sandboxed child, timed the way grading times a submission
  (grader.speed.trial: fresh inputs per call, the baseline here, the grader's clock around every
  batch, outputs checked); with the most the grader's clock saw per call beyond the
  reported times ("unexpl us", the worst batch), the median of that per batch ("median
  ms", what grader.speed.trial's median check judges), the grader's own work around the
  baseline's calls per batch ("around ms", median), and how many outputs it checked.

With --repeat N, one case per track (matmul bf16 4096^3 unless --case) is graded N times,
each with fresh seeds, and the spread of its figure is printed.

With --diagnose, no table: for the first speed case of each stage, batches of 0 to 10 calls
on both sides, and what each side's clock saw beyond the call times, so that what the
child's batches cost per batch and per call beyond the grader's own can be told apart.

Usage:  python -m scripts timing [--only STAGE] [--track T] [--repeat N] [--seconds S]
                                       [--diagnose]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch


from grader import timing
from grader.backends import selection as backends
from grader.sandbox import ChildProcess
from grader.sandbox.submission import Submission
from grader.speed.trial import TimedCase, Trial
from scripts import common


def graded(stage, case, child, seconds: float):
    problem = stage.problem
    trial = Trial(TimedCase(problem, dict(case.params), case.dtype,
                            problem.baselines[stage.speed.baseline], stage.tolerance[case.dtype]),
                  child, timing.Budget(seconds=seconds))
    return trial.run()


def diagnose(stage, case, child, track: str) -> None:
    """Beyond the call times, per batch size: the replay's batch on the grader's clock, and
    the grader's own batch of the baseline (both medians of 7)."""
    problem = stage.problem
    trial = Trial(TimedCase(problem, dict(case.params), case.dtype,
                            problem.baselines[stage.speed.baseline], stage.tolerance[case.dtype]),
                  child, timing.Budget(seconds=1))
    proposal = child.record(problem.id, dict(case.params), case.dtype, 1).proposal
    child.replay_process.warm(problem.id, dict(case.params), case.dtype, 1, proposal, 3)
    key = 12345
    rows = []
    for count in (0, 1, 2, 5, 10):
        child, here = [], []
        for rep in range(8):
            seeds = [1000 * count + 10 * rep + i for i in range(count)]
            times, wall = trial.baseline_batch(seeds, key)
            batch = child.replay_process.time_batch(problem.id, dict(case.params), case.dtype, seeds,
                                             key, proposal)
            if rep:  # the first of each size loads what has not run before
                here.append(wall - sum(times))
                child.append(batch.wall_ms - sum(batch.times_ms))
        rows.append((count, statistics.median(child), statistics.median(here)))
    cells = "  ".join(f"n={n}: child {c:.3f} grader {h:.3f} diff {c - h:.3f}" for n, c, h in rows)
    slope = (rows[-1][1] - rows[-1][2] - (rows[1][1] - rows[1][2])) / 9
    print(f"diagnose {track} {stage.id} {case.id[:40]} (ms beyond the calls) {cells}; "
          f"per extra call {1e3 * slope:.0f} us", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="stage id (repeatable)")
    parser.add_argument("--track", action="append", choices=["triton", "cutile"])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=0)
    parser.add_argument("--case", default="matmul:0", help="STAGE:INDEX of the repeated case")
    parser.add_argument("--diagnose", action="store_true")
    args = parser.parse_args()
    course = common.course()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    if not args.diagnose:
        print(f"{'track':<7} {'stage':<16} {'case':<44} {'in-process':>10} {'graded':>9} {'ratio':>6} "
              f"{'base in':>8} {'base gr':>8} {'unexpl us':>9} {'median ms':>9} {'around ms':>9} {'checked':>7} verdict", flush=True)
    for track in args.track or ["triton", "cutile"]:
        backends.select(track).backend.prepare()
        for stage in course.stages:
            if not stage.speed or (args.only and stage.id not in args.only):
                continue
            path = course.module_path(stage, track, solutions=True)
            child = ChildProcess(path, stage.problem.function, "cuda", hidden=course.private_paths,
                            rules=course.rules, track=track)
            child.load()
            local = Submission(path, stage.problem.function)
            local.load()
            baseline = stage.problem.baselines[stage.speed.baseline]
            if args.diagnose:
                diagnose(stage, stage.speed.cases[0], child, track)
                child.close()
                continue
            for case in stage.speed.cases:
                call = stage.problem.draw(case.params, case.dtype, case.seed).to("cuda")
                old = timing.measure({"kernel": local.bound(call.args, call.kwargs),
                                      "baseline": lambda: baseline(call)},
                                     timing.Budget(seconds=args.seconds))
                new = graded(stage, case, child, args.seconds)
                verdict = new.failed or new.rejected or new.wrong or "ok"
                if new.student and not new.rejected:
                    ratio = new.student_ms / old["kernel"].median
                    print(f"{track:<7} {stage.id:<16} {case.id[:44]:<44} "
                          f"{old['kernel'].median:>10.4f} {new.student_ms:>9.4f} {ratio:>6.3f} "
                          f"{old['baseline'].median:>8.4f} {new.baseline_ms:>8.4f} "
                          f"{1e3 * new.unexplained_ms:>9.1f} "
                          f"{statistics.median(new.unexplained):>9.3f} "
                          f"{statistics.median(new.around):>9.3f} {new.checked:>7} "
                          f"{verdict[:80]}",
                          flush=True)
                else:
                    print(f"{track:<7} {stage.id:<16} {case.id[:44]:<44} {verdict}", flush=True)
            if args.repeat and stage.id == args.case.split(":")[0]:
                case = stage.speed.cases[int(args.case.split(":")[1])]
                figures = [graded(stage, case, child, args.seconds) for _ in range(args.repeat)]
                ok = [f for f in figures if f.student and not (f.rejected or f.wrong)]
                problems = [f.failed or f.rejected or f.wrong for f in figures if f not in ok]
                if ok:
                    ms = [f.student_ms for f in ok]
                    speedups = [f.baseline_ms / f.student_ms for f in ok]
                    spread = (max(ms) - min(ms)) / statistics.median(ms)
                    print(f"repeat {track} {case.id}: ms {', '.join(f'{m:.4f}' for m in ms)}; "
                          f"speed-ups {', '.join(f'{s:.3f}' for s in speedups)}; spread "
                          f"(max - min) / median = {100 * spread:.2f}%; unexplained us "
                          f"{', '.join(f'{1e3 * f.unexplained_ms:.0f}' for f in ok)}", flush=True)
                for problem in problems:
                    print(f"repeat {track} {case.id}: {problem}", flush=True)
            child.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
