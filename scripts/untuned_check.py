"""The plain (untuned) solutions against the references, graded for speed; one table.

The speed points are meant to be earned by tuning: the untuned configuration, filled in
correctly, should earn no speed points on the GPU the thresholds were calibrated on (an
H200), and the reference should earn all of them. This checks it. For
each track this writes every stage's plain solution (grader.instructor.skeletons:
the solutions' TODO code with the plain lines of every TUNE place) into a scratch folder,
grades it with `grade STAGES --submission FOLDER` and the references with `grade STAGES
--solutions`, the grader's own correctness and speed checks in both, and prints one row
per speed case of course.toml: stage, track, case, then the reference's and the plain
solution's speed-up over the baseline and verdict.

Exit code 1 when a reference misses a speed case, when the plain solution earns a speed
point (a stage whose course.toml speed table says `plain_at_limit` excepted: there the plain
tile already reaches the copy ceiling), or when a
run gave no result; 0 otherwise. Without a GPU the grader still runs (correctness only,
on Triton's interpreter or the cuTile simulator) and every row says "not graded: no GPU".

Usage:  python -m scripts untuned [--track T] [--only STAGE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch


from grader.instructor.skeletons import write_plain_solutions
from scripts import common
from scripts.common import ROOT

def grade(course_file: Path, track: str, stages: list[str], target: list[str],
          out: Path) -> dict | None:
    """Run `grade` in its own process; its JSON result, or None (with its output shown)."""
    backend = ["--backend", track] if torch.cuda.is_available() else ["--track", track]
    command = [sys.executable, "-m", "grader", "--course", str(course_file), *stages,
               *backend, *target, "--json", str(out)]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if not out.is_file():
        print(f"no result from {' '.join(command[2:])} (exit {run.returncode}):\n"
              f"{run.stdout[-2000:]}{run.stderr[-2000:]}", flush=True)
        return None
    return json.loads(out.read_text(encoding="utf-8"))


def speed_cells(result: dict | None, stage_id: str, case_id: str) -> tuple[str, str, bool]:
    """(speed-up, verdict, passed) of one speed case in a grade result."""
    if result is None:
        return "-", "no result", False
    stage = next((s for s in result["stages"] if s["id"] == stage_id), None)
    if stage is None:
        return "-", "not graded", False
    speed = stage["speed"]
    if not speed["graded"]:
        reason = "no GPU" if speed["reason"] == "needs a GPU" else speed["reason"]
        return "-", f"not graded: {reason}", False
    case = next((c for c in speed["cases"] if c["id"] == case_id), None)
    if case is None:
        return "-", "not timed", False
    speedup = f"{case['speedup']:.2f}x" if case.get("speedup") else "-"
    return speedup, "fast enough" if case["passed"] else case["summary"][:60], case["passed"]


def target_missed(stage, reference: tuple[str, str, bool], plain: tuple[str, str, bool]) -> bool:
    """Whether a graded speed case misses that aim: the reference fails it, or
    the plain solution passes it where tuning should have been needed (course.toml's
    `plain_at_limit` says where it is not)."""
    if reference[1].startswith("not graded"):
        return False
    return not reference[2] or (plain[2] and not stage.speed.plain_at_limit)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", action="append", choices=["triton", "cutile"])
    parser.add_argument("--only", action="append", help="stage id (repeatable)")
    parser.add_argument("--keep", type=Path, help="keep the plain solutions and results here")
    args = parser.parse_args()
    course = common.course()
    stages = [s for s in course.stages if s.speed and (not args.only or s.id in args.only)]
    if not stages:
        print("untuned check: no stage with speed cases selected")
        return 1
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    print(f"# {gpu}, torch {torch.__version__}: references against the plain solutions",
          flush=True)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="untuned-"))
    write_plain_solutions(course, scratch / "plain")
    status = 0
    print(f"{'stage':<16} {'track':<7} {'case':<34} {'ref':>7} {'reference verdict':<26} "
          f"{'plain':>7} plain verdict", flush=True)
    for track in args.track or ["triton", "cutile"]:
        chosen = [s.id for s in stages if track in s.modules]
        reference = grade(course.path, track, chosen, ["--solutions"],
                          scratch / f"reference-{track}.json")
        plain = grade(course.path, track, chosen, ["--submission", str(scratch / "plain")],
                      scratch / f"plain-{track}.json")
        status |= reference is None or plain is None
        rows = []
        for stage in (s for s in stages if s.id in chosen):
            for case in stage.speed.cases:
                ref = speed_cells(reference, stage.id, case.id)
                untuned = speed_cells(plain, stage.id, case.id)
                missed = target_missed(stage, ref, untuned)
                status |= missed
                rows.append(f"{stage.id:<16} {track:<7} {case.id[:34]:<34} {ref[0]:>7} "
                            f"{ref[1][:26]:<26} {untuned[0]:>7} {untuned[1]}"
                            f"{'  <- target missed' if missed else ''}")
        print(*rows, sep="\n", flush=True)
    if args.keep is None:
        print(f"(results in {scratch})")
    print(f"untuned check: {'FAILED' if status else 'OK'}")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
