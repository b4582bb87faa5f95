"""A class on one host: students graded by `grade batch`, each against a grading alone.

A class is graded in minutes only if a batch keeps every student's grade what it would be
alone: a student graded while others are (one after another on one GPU, or one per GPU
with --jobs) must get the points a grading of the same files alone gives. This study makes
a class and checks it:

1. the class: STUDENTS copies of the track's reference solutions, every other one with one
   stage's file replaced by a fault file of tests/faults/<track>/ (the first of that stage,
   by name, a different stage for each), so that the students' points differ and a
   mix-up between two of them shows; with --stages, a copy of the course cut to those
   stages grades them (a class of 8 on one GPU in one sitting);
2. `grade batch` grades the class (--jobs, one seed for all), timed by the wall clock;
3. ALONE of the students (the first whole one and the first faulty one, by default) are
   graded again, each alone, by `grade all --submission --profile` with the class's seed
   (with --logs, every grading's output is kept there: where a slow one's seconds went);
4. a table: per student, the batch's points per stage and, where graded alone, the points
   alone; the wall time of the batch and per student.

Exit code 1 when a student's points alone differ from the batch's, or a grading failed.

Usage:  python -m scripts batch [--students N] [--jobs J] [--backend B] [--alone K]
                                [--stages 1 2 ...] [--logs DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts import common

SEED = 20261204  # the class's seed: the batch and the gradings alone draw the same inputs


def cut_course(folder: Path, numbers: list[int]) -> Path:
    """A copy of the course with only the stages numbered (its exercises and solutions
    linked, not copied); returns its course.toml."""
    text = (common.ROOT / "course.toml").read_text(encoding="utf-8")
    head, *stages = text.split("\n[[stages]]\n")
    kept = [block for number, block in enumerate(stages, 1) if number in numbers]
    folder.mkdir(parents=True)
    for name in ("exercises", "solutions"):
        (folder / name).symlink_to(common.ROOT / name)
    path = folder / "course.toml"
    path.write_text("\n[[stages]]\n".join([head, *kept]), encoding="utf-8")
    return path


def make_class(folder: Path, students: int, track: str,
               numbers: list[int] | None = None) -> dict[str, str]:
    """Write the submissions (the stages numbered, else all); return, per student, what was
    changed ("" for none)."""
    course = common.course()
    stages = [s for s in course.stages
              if track in s.modules and (not numbers or s.number in numbers)]
    changed = {}
    for i in range(students):
        name = f"student{i + 1:02d}"
        fault = None
        if i % 2:  # every other student: one stage from a fault file
            stage = stages[(i // 2) % len(stages)]
            folder_of_faults = common.ROOT / "tests/faults" / track
            faults = sorted(folder_of_faults.glob(f"stage{stage.number}_*.py"))
            fault = (stage, faults[0]) if faults else None
        for stage in stages:
            module = stage.modules[track]
            target = folder / name / module
            target.parent.mkdir(parents=True, exist_ok=True)
            source = (fault[1] if fault and fault[0] is stage
                      else course.module_path(stage, track, solutions=True))
            shutil.copyfile(source, target)
        changed[name] = f"stage {fault[0].number}: {fault[1].name}" if fault else ""
    return changed


def grade(args: list[str], log: Path) -> tuple[int, float]:
    """`grade ARGS` in a process of its own (as an instructor runs it): exit code, seconds."""
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.call([sys.executable, "-m", "grader", *args], stdout=out,
                               stderr=subprocess.STDOUT, cwd=common.ROOT)
    return code, time.perf_counter() - start


def stage_points(result: dict) -> list[float]:
    return [stage["total_points"] for stage in result["stages"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=1, help="`grade batch --jobs`")
    parser.add_argument("--backend", default="triton",
                        help="the backend everyone is graded on (its track's references)")
    parser.add_argument("--alone", type=int, default=2,
                        help="how many students to grade alone as well")
    parser.add_argument("--stages", type=int, nargs="+", default=None,
                        help="grade only these stages (by number), of a copy of the course")
    parser.add_argument("--logs", type=Path, default=None,
                        help="keep every grading's output here (the gradings alone with "
                             "--profile: where their seconds went)")
    options = parser.parse_args()
    track = "cutile" if options.backend.startswith("cutile") else "triton"
    work = Path(tempfile.mkdtemp(prefix="tilecourse-batch-check-"))
    try:
        return _run(options, track, work)
    finally:
        if options.logs:
            _keep_logs(work, options.logs)
        shutil.rmtree(work, ignore_errors=True)


def _keep_logs(work: Path, logs: Path) -> None:
    """The batch's log, each student's log in it, and each grading alone's, copied to LOGS."""
    logs.mkdir(parents=True, exist_ok=True)
    found = [*work.glob("*.log"), *(work / "results" / "logs").glob("*.log")]
    for log in found:
        prefix = "" if log.parent == work else "batch-"
        shutil.copyfile(log, logs / f"{prefix}{log.name}")


def _run(options, track: str, work: Path) -> int:
    changed = make_class(work / "class", options.students, track, options.stages)
    course = (["--course", str(cut_course(work / "course", options.stages))]
              if options.stages else [])
    out = work / "results"
    code, batch_seconds = grade(
        [*course, "batch", *sorted(str(p) for p in (work / "class").iterdir()), "--out", str(out),
         "--backend", options.backend, "--jobs", str(options.jobs), "--seed", str(SEED)],
        work / "batch.log")
    if code not in (0, 1):  # 1: some student did not pass everything, as planned
        print((work / "batch.log").read_text()[-4000:])
        print(f"grade batch exited with {code}")
        return 1
    missing = [n for n in changed if not (out / "students" / f"{n}.json").is_file()]
    if missing:  # a student the batch did not grade: what it and the batch said
        print((work / "batch.log").read_text()[-4000:])
        for name in missing[:2]:
            log = out / "logs" / f"{name}.log"
            print(f"--- {name}: no result; its log:\n"
                  + (log.read_text()[-4000:] if log.is_file() else "(none)"))
        print(f"grade batch exited with {code}, without a result for {', '.join(missing)}")
        return 1
    batch = {name: json.loads((out / "students" / f"{name}.json").read_text())
             for name in changed}
    faulty = [n for n in changed if changed[n]]
    whole = [n for n in changed if not changed[n]]
    picked = [n for pair in zip(whole, faulty) for n in pair][:options.alone]
    alone, alone_seconds, status = {}, [], 0
    for name in picked:
        result = work / f"{name}-alone.json"
        code, seconds = grade([*course, "all", "--submission", str(work / "class" / name),
                               "--backend", options.backend, "--seed", str(SEED),
                               "--json", str(result), "--profile"], work / f"{name}-alone.log")
        alone_seconds.append(seconds)
        if not result.is_file():
            print((work / f"{name}-alone.log").read_text()[-4000:])
            print(f"{name} alone: no result (exit code {code})")
            status = 1
            continue
        alone[name] = json.loads(result.read_text())
    print("| student | changed | batch: points per stage | alone: points per stage | same |")
    print("| --- | --- | --- | --- | --- |")
    for name in changed:
        theirs = stage_points(batch[name])
        here = stage_points(alone[name]) if name in alone else None
        same = "" if here is None else ("yes" if here == theirs else "NO")
        status |= same == "NO"
        print(f"| {name} | {changed[name] or '-'} | {theirs} | {here or '-'} | {same} |")
    per_student = batch_seconds / options.students
    print(f"\ngrade batch: {options.students} students, --jobs {options.jobs}, "
          f"--backend {options.backend}: {batch_seconds:.0f} s, {per_student:.1f} s a student"
          + (f"; alone: {', '.join(f'{s:.0f} s' for s in alone_seconds)}" if alone_seconds
             else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
