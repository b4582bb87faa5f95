"""Whether a kernel's time depends on where its inputs lie in GPU memory, or on its process.

The repeat check (scripts/repeat_check.py) grades one kernel five times. On one H200 machine
the matmul references' times moved by 2-3% from one grading to the next while PyTorch's
baseline held (BENCHMARKS.md, run H). A process's caching allocator hands a trial's calls
the blocks the previous calls freed, so unless the trial moves its memory on purpose
(grader.placement) each trial times one placement. This check tells placement from
process: in `--processes` fresh processes, each track's reference and PyTorch are timed
(grader.timing.measure, L2 flushed before every call) on the stage's first speed case
drawn `--placements` times, each time after a spacer allocation of a random size so that
the inputs land elsewhere, and once more on new values in the same place. Times that move
from placement to placement as much as from process to process point at placement; times
steady within a process that move between processes point at the process. (Run I, an
H100: placement; the Triton reference and cuBLAS moved together.)

Usage:  python -m scripts placement [--stage matmul] [--processes 3] [--placements 4]
            [--seconds 0.5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys

import torch

from grader import timing
from grader.problems import DTYPES
from scripts import common

TRACKS = ("triton", "cutile")
SPACER_MIB = 64  # the largest spacer before a placement's inputs


def one_process(stage_id: str, placements: int, seconds: float, seed: int) -> dict:
    """Times in this process, per placement: {impl: ms}, and the first impl's on new values."""
    course = common.course()
    stage = course.select(stage_id)
    case = stage.speed.cases[0]
    problem, dtype = stage.problem, DTYPES[case.dtype]
    references, missing = {}, {}
    for track in TRACKS:
        try:
            submission = common.reference(course, stage, track)
            submission.load()
            references[track] = submission
        except Exception as exc:  # noqa: BLE001 - a track this machine cannot run is told
            missing[track] = f"{type(exc).__name__}: {exc}"
    rng = random.Random(seed)
    kept, rows = [], []
    for placement in range(placements):
        kept.append(torch.empty(rng.randint(0, SPACER_MIB) << 20, dtype=torch.uint8,
                                device="cuda"))
        generator = torch.Generator().manual_seed(rng.getrandbits(31))
        call = problem.make_call(case.params, dtype, generator).to("cuda")
        kernels = {track: s.bound(call.args, call.kwargs) for track, s in references.items()}
        kernels["torch"] = lambda call=call: problem.baselines["torch"](call)
        found = timing.measure(kernels, timing.Budget(seconds=seconds))
        row = {name: samples.median for name, samples in found.items()}
        fresh = problem.make_call(case.params, dtype,
                                  torch.Generator().manual_seed(rng.getrandbits(31))).to("cuda")
        for into, source in zip(call.tensors(), fresh.tensors()):
            into.copy_(source)
        del fresh
        again = timing.measure(kernels, timing.Budget(seconds=seconds))
        row.update({f"{name} (new values)": s.median for name, s in again.items()})
        row["address"] = call.tensors()[0].data_ptr()
        rows.append(row)
        kept.append(call)  # the next placement's inputs go elsewhere
    return {"rows": rows, "missing": missing, "case": case.id}


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def report(runs: list[dict], device: str) -> list[str]:
    """The table: a row per process and placement, then each impl's spread within a process
    (the largest) and across processes (of their medians)."""
    names = [k for k in runs[0]["rows"][0] if k != "address"]
    lines = [f"# {device}, case {runs[0]['case']}: median ms per call"]
    lines += [f"# {track}: not timed: {why}" for track, why in runs[0]["missing"].items()]
    lines.append(f"{'process':>7} {'placement':>9}  " + "  ".join(f"{n:>22}" for n in names))
    for p, run in enumerate(runs, 1):
        for j, row in enumerate(run["rows"], 1):
            lines.append(f"{p:>7} {j:>9}  " + "  ".join(f"{row[n]:>22.4f}" for n in names))
    within = {n: max(spread([r[n] for r in run["rows"]]) for run in runs) for n in names}
    across = {n: spread([statistics.median(r[n] for r in run["rows"]) for run in runs])
              for n in names}
    lines.append(f"{'spread':>7} {'within':>9}  " +
                 "  ".join(f"{100 * within[n]:>21.2f}%" for n in names))
    lines.append(f"{'spread':>7} {'across':>9}  " +
                 "  ".join(f"{100 * across[n]:>21.2f}%" for n in names))
    lines.append("within: the largest spread over one process's placements; across: the "
                 "spread of the processes' medians; spread = (max - min) / median")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="matmul")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--placements", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a process's own part
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("placement check: not run: needs a GPU")
        return 1
    if args.one is not None:
        print(json.dumps(one_process(args.stage, args.placements, args.seconds, args.one)))
        return 0
    runs = []
    for process in range(args.processes):
        found = subprocess.run(
            [sys.executable, "-m", "scripts", "placement", "--stage", args.stage,
             "--placements", str(args.placements), "--seconds", str(args.seconds),
             "--one", str(process + 1)],
            cwd=common.ROOT, capture_output=True, text=True)
        if found.returncode:
            print(f"placement check: process {process + 1} failed:\n{found.stderr[-2000:]}")
            return 1
        runs.append(json.loads(found.stdout.strip().splitlines()[-1]))
    device = f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    print("\n".join(report(runs, device)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
