"""`grade batch --slurm`: a class graded as a Slurm job array, one GPU per task.

The login node writes a run folder, OUT/slurm/N/ (manifest.json: the students of each
task, the grading options and the class seed; task.sh), and submits it with plain
`sbatch --array` (no Python object crosses hosts: each task reads the manifest and runs
`grade slurm-task`, which grades its students with the same isolated `grade all
--submission` process as a local batch, writing into OUT/slurm/N/results/). The login
node then follows the array with Slurm's own state (grader.instructor.slurm_state) and,
as each task ends, validates what it wrote and only then renames it into OUT/students/:
the login node owns the verdict, as a local batch does. A task that Slurm killed (time
limit, preemption, node failure) is submitted once more; after that, or for any other
end without a result, its students get "not graded: <why>" in OUT/students/NAME.error.

OUT, the course, the submissions and the Python environment must be on a filesystem
that the login node and the GPU nodes share, as home and project folders are on a cluster.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader import sandbox
from grader.course import Course
from grader.errors import GradeError
from grader.grading.request import GradingRequest
from grader.instructor import batch, history, slurm_state
from grader.instructor.gradebook import read_intake
from grader.results import write_file

NEEDED = ("sbatch", "squeue", "scancel")
RETRIED = {"TIMEOUT", "PREEMPTED", "NODE_FAIL", "BOOT_FAIL", "DEADLINE"}  # Slurm's doing
MARGIN_MINUTES = 10  # a task's time limit beyond its students' grading limits


@dataclass
class Options:
    partition: str | None = None
    gres: str | None = None
    minutes: int | None = None  # the task's time limit (default: from --limit)
    per_task: int = 1  # students graded one after another by one task
    extra: tuple[str, ...] = ()  # more sbatch options, as given
    poll: float = 15.0  # seconds between two looks at the array's state
    allow_mixed_gpus: bool = False
    allow_weak_sandbox: bool = False  # grade on a node whose sandbox is weak


@dataclass
class Run:
    """One submitted array: OUT/slurm/N/."""
    folder: Path
    job: str
    attempt: int  # 1, or 2 for the re-submission of tasks that Slurm killed
    tasks: list[list[batch.Entry]]
    grading: GradingRequest  # how its students are graded: backend, track, seed, limits
    limit: float
    collected: set[int] = field(default_factory=set)

    @property
    def open(self) -> bool:
        return len(self.collected) < len(self.tasks)


def require_slurm() -> None:
    missing = [tool for tool in NEEDED if shutil.which(tool) is None]
    if missing:
        raise GradeError(f"`grade batch --slurm` needs Slurm's {', '.join(missing)} on PATH: "
                         "run it on the cluster's login node (there, `module load slurm` if "
                         "the command is not found), or grade on this host without --slurm.")


def task_minutes(options: Options, limit: float) -> int:
    return options.minutes or math.ceil(options.per_task * limit / 60) + MARGIN_MINUTES


def gpu_types(sinfo: str) -> set[str]:
    """The GPU types in `sinfo -h -o %G` lines: gpu:a100:4(S:0-1) -> a100 (untyped: "")."""
    found = set()
    for line in sinfo.split():
        for gres in line.split(","):
            parts = gres.split("(")[0].split(":")
            if parts[0] == "gpu":
                found.add(parts[1] if len(parts) > 2 else "")
    return found


def require_one_gpu_kind(options: Options) -> None:
    """Refuse an array that Slurm could spread over GPUs of different kinds: speed
    thresholds are per architecture. Graded results are checked again as they come in."""
    if not options.gres or options.allow_mixed_gpus:
        return
    asked = options.gres.split(":")
    if len(asked) > 2 or any(a.startswith(("--constraint", "-C")) for a in options.extra):
        return  # a type (gpu:h100:1) or a constraint picks the kind
    command = ["sinfo", "-h", "-o", "%G"]
    command += [f"--partition={options.partition}"] if options.partition else []
    try:
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError:
        return
    kinds = sorted(gpu_types(done.stdout) - {""})
    if len(kinds) > 1:
        raise GradeError(f"the partition has GPUs of {len(kinds)} kinds ({', '.join(kinds)}), and "
                         "speed thresholds are per kind: ask for one, e.g. --gres "
                         f"gpu:{kinds[0]}:1, or pass --allow-mixed-gpus.")


def submit(todo: list[batch.Entry], out: Path, grading: GradingRequest, limit: float,
           options: Options, attempt: int = 1) -> Run:
    """Write a run folder for `todo` and submit it as one array; earlier results of these
    students are removed once Slurm has accepted it, so none can stand in for this run."""
    root = out / "slurm"
    root.mkdir(parents=True, exist_ok=True)
    number = 1 + max((int(p.name) for p in root.iterdir() if p.name.isdigit()), default=0)
    folder = root / str(number)
    (folder / "results").mkdir(parents=True)
    tasks = [todo[i:i + options.per_task] for i in range(0, len(todo), options.per_task)]
    manifest = {"course": str(grading.course.path.resolve()), "grading": grading.to_json(),
                "limit": limit,
                "attempt": attempt, "job": None, "allow_weak_sandbox": options.allow_weak_sandbox,
                "tasks": [[[e.name, str(e.source.resolve())] for e in t] for t in tasks]}
    write_file(folder / "manifest.json", json.dumps(manifest, indent=2))
    script = folder / "task.sh"
    script.write_text("#!/bin/sh\n# One task of `grade batch --slurm`: its students, one by one.\n"
                      + shlex.join([sys.executable, "-m", "grader", "--course", manifest["course"],
                                    "slurm-task", str(folder.resolve())]) + "\n")
    command = ["sbatch", "--parsable", f"--array=0-{len(tasks) - 1}", "--job-name=grade-batch",
               f"--output={folder.resolve()}/task-%a.out", f"--chdir={folder.resolve()}",
               # Slurm never runs a task again by itself: a second run is ours to decide.
               "--no-requeue", f"--time={task_minutes(options, limit)}"]
    command += [f"--partition={options.partition}"] if options.partition else []
    command += [f"--gres={options.gres}"] if options.gres else []
    command += [*options.extra, str(script)]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        shutil.rmtree(folder)
        raise GradeError(f"sbatch refused the array: {done.stderr.strip() or done.stdout.strip()}"
                         f" (the command was: {shlex.join(command)}); fix the Slurm options "
                         "(--partition, --gres, --time, --sbatch; --per-task where the class has more "
                         "tasks than the cluster's MaxArraySize) and run again.")
    manifest["job"] = done.stdout.strip().split(";")[0]
    write_file(folder / "manifest.json", json.dumps(manifest, indent=2))
    for entry in todo:
        for suffix in (".json", ".error"):
            (out / "students" / f"{entry.name}{suffix}").unlink(missing_ok=True)
    return Run(folder, manifest["job"], attempt, tasks, grading, limit)


def open_runs(course: Course, out: Path) -> list[Run]:
    """Runs submitted earlier whose tasks were not all collected (say, after a Ctrl-C)."""
    found = []
    for folder in sorted((out / "slurm").glob("*/manifest.json"), key=lambda p: int(p.parent.name)):
        manifest = json.loads(folder.read_text())
        if manifest["job"] is None:
            continue
        done = folder.parent / "collected.json"
        run = Run(folder.parent, manifest["job"], manifest["attempt"],
                  [[batch.Entry(n, Path(s)) for n, s in t] for t in manifest["tasks"]],
                  GradingRequest.from_json(course, manifest["grading"]), manifest["limit"],
                  set(json.loads(done.read_text())) if done.is_file() else set())
        if run.open:
            found.append(run)
    return found


def run_task(folder: Path, index: int) -> None:
    """In a Slurm task: grade this task's students, each in its own `grade all` process,
    into the run's results/ folder (the login node takes them from there)."""
    from grader.course import load_course

    manifest = json.loads((folder / "manifest.json").read_text())
    course = load_course(Path(manifest["course"]))
    out = folder.parents[1]
    try:
        batch.require_a_safe_sandbox(sandbox.probe(), manifest["allow_weak_sandbox"])
        weak = ""
    except GradeError as exc:  # this node cannot keep students apart: none is graded here
        weak = f"not graded on {socket.gethostname()}: {exc}"
    for name, source in manifest["tasks"][index]:
        if weak:
            batch.record(folder / "results", batch.Graded(name, None, weak))
            continue
        graded = batch.grade_one(batch.Entry(name, Path(source)), out,
                                 GradingRequest.from_json(course, manifest["grading"]),
                                 dict(os.environ), manifest["limit"], results=folder / "results")
        batch.record(folder / "results", graded)


def watch(course: Course, runs: list[Run], out: Path, seed: int, options: Options,
          on_update: Callable[[dict[str, int]], None]) -> list[batch.Graded]:
    """Follow the arrays until every task has ended; collect each task's students as it
    ends, and submit once more the tasks that Slurm killed. Returns what became of each."""
    states = slurm_state.SlurmStateReader()
    gpus = {g for g in (_gpu(p) for p in (out / "students").glob("*.json")) if g}
    graded: list[batch.Graded] = []
    while any(r.open for r in runs):
        now = states.read([r.job for r in runs if r.open])
        for run in [r for r in runs if r.open]:
            killed: list[batch.Entry] = []
            for index, students in enumerate(run.tasks):
                if index in run.collected:
                    continue
                state = states.state(now, f"{run.job}_{index}")
                if state is None or not state.ended:
                    continue
                for entry in students:
                    result = collect(run, index, entry, state, out, seed, gpus, options)
                    if result is None:
                        killed.append(entry)
                    else:
                        graded.append(result)
                run.collected.add(index)
                write_file(run.folder / "collected.json", json.dumps(sorted(run.collected)))
            if killed:
                runs.append(submit(killed, out, run.grading, run.limit, options, attempt=2))
        on_update(_counts(runs, now, graded))
        if any(r.open for r in runs):
            time.sleep(options.poll)
    return graded


def collect(run: Run, index: int, entry: batch.Entry, state: slurm_state.TaskState, out: Path,
            seed: int, gpus: set[str], options: Options) -> batch.Graded | None:
    """The student's result, validated and renamed into OUT/students/, or why there is
    none; None where the task is to be submitted once more."""
    staged = run.folder / "results" / f"{entry.name}.json"
    error = run.folder / "results" / f"{entry.name}.error"
    taken = out / "students" / f"{entry.name}.json"
    if taken.is_file() and not staged.exists():  # taken before a Ctrl-C stopped the collection
        return batch.Graded(entry.name, taken)
    if batch.whole_json(staged):
        data = json.loads(staged.read_text(encoding="utf-8"))
        gpu = _gpu(staged)
        if data.get("seed") != seed or not isinstance(data.get("stages"), list):
            why = f"the result in {staged} is not one of this class (seed {seed}); not taken"
        elif gpus and gpu not in gpus and not options.allow_mixed_gpus:
            why = (f"graded on {gpu}, but this class on {', '.join(sorted(gpus))}: speed "
                   "thresholds are per GPU kind; ask Slurm for one kind (--gres gpu:TYPE:1 or "
                   "--sbatch=--constraint=...), or pass --allow-mixed-gpus")
        else:
            gpus.add(gpu)
            note = history.install(out, entry.name, staged, read_intake(out, entry.name).digest)
            graded = batch.Graded(entry.name, out / "students" / f"{entry.name}.json", note=note)
            batch.record(out / "students", graded)
            return graded
    elif error.is_file():  # graded by the task, and it failed: a bad zip, the --limit, ...
        why = error.read_text().strip()
    elif state.name in RETRIED and run.attempt == 1:
        return None
    elif state.name in RETRIED:
        why = f"not graded: {state.text} (Slurm job {run.job}_{index}, also after a re-submission)"
    elif state.name in ("COMPLETED", "FAILED"):
        why = (f"not graded: the Slurm task ended ({state.text}) without a result; see "
               f"{run.folder / f'task-{index}.out'}")
    else:
        why = f"not graded: {state.text} (Slurm job {run.job}_{index})"
    graded = batch.Graded(entry.name, None, why)
    batch.record(out / "students", graded)
    return graded


def _gpu(result: Path) -> str | None:
    """The GPU a result was graded on ("CPU" for none), as its grading process recorded it."""
    try:
        machine = json.loads(result.read_text(encoding="utf-8")).get("machine") or {}
    except (OSError, ValueError, AttributeError):
        return None
    return machine.get("gpu") or "CPU"


def _counts(runs: list[Run], now: dict[str, slurm_state.TaskState],
            graded: list[batch.Graded]) -> dict[str, int]:
    failed = sum(bool(g.error) for g in graded)
    counts = {"done": len(graded) - failed, "failed": failed, "running": 0, "pending": 0}
    for run in runs:
        for index, students in enumerate(run.tasks):
            state = now.get(f"{run.job}_{index}")
            if index not in run.collected:
                key = "running" if state and state.name != "PENDING" else "pending"
                counts[key] += len(students)
    return counts


def cancel_hint(runs: list[Run]) -> str:
    jobs = " ".join(r.job for r in runs if r.open)
    return (f"the Slurm array keeps running on the cluster: run the same `grade batch --slurm` "
            f"command again to follow it and collect its results, or cancel it with "
            f"`scancel {jobs}`")
