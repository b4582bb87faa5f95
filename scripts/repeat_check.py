"""How repeatable a speed verdict is: the same kernel graded 5 times, and one 10% slower.

A speed verdict must be one that noise cannot flip: the same kernel graded five times
(fresh seeds: every trial draws its own) gets the same speed verdict every time, its
speed-up within 2%; and a kernel made 10% slower is told apart every time. For each track
and each stage named (default: matmul and softmax, one compute-bound and one memory-bound
stage, their first speed case):

1. the reference and its baseline are timed once in this process (grader.timing.measure),
   giving the reference's speed-up s and a separating threshold T = s * (1 + 1/1.1) / 2,
   halfway between the reference and a kernel 10% slower;
2. the reference and a slowed copy of it are graded alternately, RUNS times each, with
   threshold T: one grader.speed.check.SpeedCheck per kernel, as grading has one per stage
   (its sandboxed child, and the baseline timed alone once, with no child alive), each
   run a whole trial on fresh seeds. The slowed copy is the reference
   file with its entry point wrapped: after the reference's kernels it launches one more,
   a spin kernel in the track's language (one program, a loop of dependent multiply-adds),
   whose loop count is calibrated here to 10% of the reference's time. The grader replays
   only kernel launches, so the slowdown has to be a kernel: a host-side sleep in the
   wrapper, or torch.cuda._sleep, never reaches the timed replay;
3. one line per kernel: the speed-ups, their spread ((max - min) / median) and the
   reference's times' spread, the verdicts under T, and the verdict under course.toml's own
   threshold for this GPU (taken from the figures: the threshold lies far from both).

Exit code 1 when the reference's speed-ups spread more than 2%, when a verdict under T
differs between runs of one kernel, or when a slowed run is not told apart from every run
of the reference (its speed-up at or above the slowest reference run's).

Usage:  python -m scripts repeat [--track T] [--only STAGE] [--runs N] [--move-every N]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch


from grader import timing
from grader.backends import selection as backends
from grader.course import Threshold
from grader.sandbox import ChildProcess
from grader.sandbox.submission import Submission
from grader.speed import trial
from grader.speed.check import SpeedCheck
from scripts import common

SLOWER = 0.10
SPREAD = 0.02


def gpu_state() -> str:
    """The SM clock, power and temperature now (nvidia-smi), to see whether a drift between
    runs follows the GPU's clocks rather than the grader's."""
    try:
        reading = subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "no nvidia-smi"
    return reading.strip().splitlines()[0] if reading.strip() else "no reading"


# The spin kernel and its launch, per track, appended to the reference file. One program
# runs a loop of dependent multiply-adds (no load: nothing for the replay's memory checks to
# see) and stores the result in a scratch tensor, so the compiler cannot drop the loop.
SPIN = {
    "triton": """

@triton.jit
def _repeat_spin_kernel(scratch_ptr, iters):
    x = iters * 1.0
    for _ in range(iters):
        x = x * 0.999999 + 0.5
    tl.store(scratch_ptr, x)


def _repeat_spin(device, iters):
    scratch = torch.empty(1, device=device, dtype=torch.float32)
    _repeat_spin_kernel[(1,)](scratch, iters)
""",
    "cutile": """

@ct.kernel
def _repeat_spin_kernel(scratch, iters: int):
    x = ct.full((1,), 0.5, dtype=ct.float32)
    for _ in range(iters):
        x = x * 0.999999 + 0.5
    ct.store(scratch, index=(0,), tile=x)


def _repeat_spin(device, iters):
    scratch = torch.empty(1, device=device, dtype=torch.float32)
    ct.launch(torch.cuda.current_stream(), (1,), _repeat_spin_kernel, (scratch, iters))
""",
}


def slowed_source(reference: Path, function: str, track: str, iters: int) -> str:
    """The reference file with its entry point wrapped: a spin kernel of `iters` iterations
    launched after the reference's kernels."""
    return (reference.read_text(encoding="utf-8") + SPIN[track]
            + f"\n\n_reference_{function} = {function}\n\n\n"
            f"def {function}(*args, **kwargs):\n"
            f"    out = _reference_{function}(*args, **kwargs)\n"
            f"    _repeat_spin(out.device, {iters})"
            f"  # {100 * SLOWER:.0f}% of the reference's time\n"
            "    return out\n")


def spin_iters(path: Path, function: str, track: str, target_ms: float, tmp: Path) -> int:
    """The spin's loop count that costs `target_ms` more per call: the spin launch timed
    here at two counts, its time taken as linear in the count (a launch's fixed cost plus
    a cost per iteration)."""
    spec = importlib.util.spec_from_file_location(
        f"_repeat_spin_{track}", _written(tmp / f"{track}_spin.py",
                                          slowed_source(path, function, track, 1)))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Triton's JIT looks its module up while compiling
    spec.loader.exec_module(module)
    low, high = 1_000, 100_000
    times = timing.measure({n: (lambda n=n: module._repeat_spin("cuda", n)) for n in (low, high)},
                           timing.Budget(seconds=1.0))
    per_iter = (times[high].median - times[low].median) / (high - low)
    fixed = times[low].median - low * per_iter
    return max(1, round((target_ms - fixed) / per_iter))


def _written(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="stage id (repeatable)")
    parser.add_argument("--track", action="append", choices=["triton", "cutile"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--move-every", type=int, default=trial.MOVE_EVERY, metavar="N",
                        help="counted batches between two moves of a trial's memory "
                             "(grader.placement; 0: the first move only), to compare "
                             f"cadences on one machine (default {trial.MOVE_EVERY})")
    args = parser.parse_args()
    if args.move_every < 0:
        parser.error("--move-every: a count of batches, 0 or more")
    trial.MOVE_EVERY = args.move_every  # the trials run in this process; the replay obeys
    course = common.course()
    arch = backends.gpu_arch()
    cadence = (f"every {trial.MOVE_EVERY} counted batches" if trial.MOVE_EVERY
               else "before the first batches only")
    print(f"# {torch.cuda.get_device_name()} ({arch}), torch {torch.__version__}; memory moved "
          f"{cadence}", flush=True)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        selections = {track: backends.select(track) for track in args.track or ["triton", "cutile"]}
        for selection in selections.values():
            selection.backend.prepare()
        for stage_id in args.only or ["matmul", "softmax"]:
            for track, selection in selections.items():
                bad += repeat(course, course.select(stage_id), track, selection, arch,
                              args.runs, Path(tmp))
    print(f"repeat check: {'OK' if not bad else f'{bad} problems'}", flush=True)
    return 1 if bad else 0


def repeat(course, stage, track, selection, arch, runs, tmp: Path) -> int:
    """One stage on one track: the table lines of its first speed case; the problems found."""
    problem, case = stage.problem, stage.speed.cases[0]
    path = course.module_path(stage, track, solutions=True)
    local = Submission(path, problem.function)
    local.load()
    call = problem.draw(case.params, case.dtype, case.seed).to("cuda")
    baseline = problem.baselines[stage.speed.baseline]
    here = timing.measure({"kernel": local.bound(call.args, call.kwargs),
                           "baseline": lambda: baseline(call)}, timing.Budget(seconds=2.0))
    speedup = here["baseline"].median / here["kernel"].median
    split = Threshold(min_speedup=round(speedup * (1 + 1 / (1 + SLOWER)) / 2, 4))
    iters = spin_iters(path, problem.function, track, SLOWER * here["kernel"].median, tmp)
    slow = _written(tmp / f"{track}_{stage.id}_slowed.py",
                    slowed_source(path, problem.function, track, iters))
    own = stage.speed.threshold(arch, selection.backend.name)
    print(f"{track} {stage.id} {case.id}: in-process {here['kernel'].median:.4f} ms, "
          f"{speedup:.3f}x {stage.speed.baseline}; separating threshold {split.min_speedup}x; "
          f"slowed by a spin kernel of {iters} iterations; course threshold {own}", flush=True)
    # One SpeedCheck (and sandboxed child) per kernel, as grading has per stage: its
    # baseline timed alone once, with no child alive, then RUNS trials, each on fresh seeds.
    checks = {}
    for name, module in (("reference", path), ("slowed", slow)):
        child = ChildProcess(module, problem.function, "cuda", hidden=course.private_paths,
                        rules=course.rules, track=track)
        checks[name] = SpeedCheck(stage, selection, child, threshold=split)
    found: dict[str, list] = {name: [] for name in checks}
    try:
        for check in checks.values():
            check.baselines_alone()
        for run in range(runs):  # alternately, so that a drifting GPU moves both alike
            for name, check in checks.items():
                start = time.perf_counter()
                timed = check.time(case).case
                found[name].append(timed)
                print(f"  run {run + 1} {name}: {timed.summary[:150]} "
                      f"({time.perf_counter() - start:.0f} s; after it {gpu_state()})", flush=True)
    finally:
        for check in checks.values():
            check.child.close()
    bad = 0
    for name, cases in found.items():
        graded = [c for c in cases if c.speedup]
        if len(graded) < len(cases):
            bad += 1
            for c in cases:
                if not c.speedup:
                    print(f"  {name}: not timed: {c.summary}", flush=True)
        if not graded:
            continue
        ups = [c.speedup for c in graded]
        ms = [c.ms for c in graded]
        spread = (max(ups) - min(ups)) / statistics.median(ups)
        ms_spread = (max(ms) - min(ms)) / statistics.median(ms)
        verdicts = ["pass" if c.passed else "FAIL" for c in graded]
        own_verdicts = ["pass" if passes(c, own) else "FAIL" for c in graded]
        same = len(set(verdicts)) == 1
        print(f"  {name:<9} speed-ups {', '.join(f'{u:.3f}' for u in ups)} (spread "
              f"{100 * spread:.2f}%); ms {', '.join(f'{m:.4f}' for m in ms)} (spread "
              f"{100 * ms_spread:.2f}%); under {split.min_speedup}x: {' '.join(verdicts)}"
              f"{'' if same else ' (VERDICTS DIFFER)'}; under course.toml: {' '.join(own_verdicts)}",
              flush=True)
        bad += not same
        if name == "reference":
            bad += spread > SPREAD
    ref = [c.speedup for c in found["reference"] if c.speedup]
    slowed = [c.speedup for c in found["slowed"] if c.speedup]
    if ref and slowed:
        apart = max(slowed) < min(ref)
        gap = statistics.median(ref) / statistics.median(slowed) - 1
        print(f"  told apart every time: {'yes' if apart else 'NO'} (slowest reference "
              f"{min(ref):.3f}x, fastest slowed {max(slowed):.3f}x; medians {100 * gap:.1f}% "
              "apart)", flush=True)
        bad += not apart
    return bad


def passes(case, threshold: Threshold | None) -> bool:
    """The verdict course.toml's threshold gives these figures (no retiming)."""
    return threshold is not None and not threshold.missed(case.speedup, case.fraction,
                                                           case.baseline)


if __name__ == "__main__":
    sys.exit(main())
