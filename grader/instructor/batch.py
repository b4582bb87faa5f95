"""`grade batch`: a class's submissions graded one by one, each in its own process.

A submission is a folder (a git checkout, say) or a zip. Its regular files overlay the
course's exercises/ (a symbolic link is refused: it could point at anything the instructor
can read); whatever it lacks stays the untouched skeleton (NOT STARTED). Each submission is
graded by a separate `grade all --submission ...` process, in a session and a temporary
folder of its own, with a time limit; inside it, the submission's code runs only in the
sandbox (grader.sandbox), which cannot see the other submissions, the results or this
process. On a GPU host one worker runs per GPU (CUDA_VISIBLE_DEVICES), on a CPU host
`--jobs N` workers. Results: one JSON per student under OUT/students/, written by the
grading process and renamed into place after it has ended, and OUT/gradebook.csv rebuilt
from all of them. Graded students are skipped on the next run unless --force, so a batch
can be resumed.
"""

from __future__ import annotations

import csv
import json
import os
import queue
import secrets
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from grader.course import TRACKS, Course
from grader.errors import GradeError
from grader.report.results import write_file
from grader.sandbox.privileges import NEEDED_FOR_A_CLASS

MACOS_FORKS = "__MACOSX"  # a macOS zip's copies of file metadata, mirroring the real folders
GRADED_EXIT_CODES = (0, 1)  # `grade all` graded the submission (passed or not)


@dataclass
class Entry:
    name: str  # the student, from the folder or zip name
    source: Path


@dataclass
class Graded:
    name: str
    json_path: Path | None
    error: str = ""


def entries(paths: list[Path]) -> list[Entry]:
    """Submissions named on the command line: folders and zips, or a folder of them."""
    found = []
    for path in paths:
        if path.is_dir() and not _looks_like_submission(path):
            found += [Entry(_name(p), p) for p in sorted(path.iterdir())
                      if p.is_dir() or p.suffix == ".zip"]
        else:
            found.append(Entry(_name(path), path))
    return found


def _looks_like_submission(path: Path) -> bool:
    return (path / "exercises").is_dir() or _has_track(path)


def _has_track(path: Path) -> bool:
    """Whether `path` holds a folder per tile language, as exercises/ does."""
    return any((path / track).is_dir() for track in TRACKS)


def _name(path: Path) -> str:
    return path.stem if path.suffix == ".zip" else path.name


def unpack(entry: Entry, course: Course, into: Path) -> Path:
    """The course's exercises overlaid with the submission's files; raises ValueError."""
    exercises = into / "exercises"
    shutil.copytree(course.root / "exercises", exercises)
    if entry.source.suffix == ".zip":
        source = into / "unzipped"
        try:
            with zipfile.ZipFile(entry.source) as archive:
                for member in archive.namelist():
                    target = (source / member).resolve()
                    if not target.is_relative_to(source.resolve()):
                        raise ValueError(f"the zip has an entry outside its folder: {member}")
                archive.extractall(source)
        except zipfile.BadZipFile:
            raise ValueError(f"{entry.source.name} is not a valid zip file") from None
    elif entry.source.is_dir():
        source = entry.source
    else:
        raise ValueError(f"{entry.source} is neither a folder nor a .zip file")
    root = _exercise_root(source)
    if root is None:
        first, *rest = TRACKS
        also = "".join(f" (or {track}/...)" for track in rest)
        raise ValueError(f"no exercises found: expected exercises/{first}/... or {first}/..."
                         f"{also} inside the submission")
    for file in _python_files(root):
        target = exercises / file.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target, follow_symlinks=False)
    return exercises


def _python_files(root: Path) -> list[Path]:
    """The submission's .py files (outside __MACOSX/); raises ValueError for a link."""
    found = []
    for folder, dirs, files in os.walk(root):  # never into linked folders
        here = Path(folder)
        if MACOS_FORKS in here.relative_to(root).parts:
            continue
        for name in dirs + files:
            if (here / name).is_symlink() and (name in dirs or name.endswith(".py")):
                raise ValueError(f"{(here / name).relative_to(root)} is a symbolic link; "
                                 "submit the files themselves")
        found += [here / name for name in files if name.endswith(".py")]
    return sorted(found)


def _exercise_root(source: Path) -> Path | None:
    """The shallowest folder that is, or holds, the exercises (outside __MACOSX/)."""
    def depth(path: Path) -> int:
        return len(path.relative_to(source).parts)

    folders = [p for p in source.rglob("*")
               if p.is_dir() and MACOS_FORKS not in p.relative_to(source).parts]
    for candidate in [source, *sorted(folders, key=lambda p: (depth(p), str(p)))]:
        if (candidate / "exercises").is_dir():
            return candidate / "exercises"
        if _has_track(candidate):
            return candidate
    return None


def grade_one(entry: Entry, course: Course, out: Path, options: list[str], env: dict,
              limit: float, results: Path | None = None) -> Graded:
    """Grade one submission in its own `grade all` process; its result goes to `results`
    (OUT/students/ unless given: a Slurm task's go to its run folder), its log to OUT/logs/."""
    result = (results or out / "students") / f"{entry.name}.json"
    # The grader writes to a scratch name, renamed only once it has finished: a run that
    # crashes or times out leaves no result (nor half of one). An earlier result (--force)
    # is removed first, so that it can never stand in for this run.
    fresh = result.with_name(f"{entry.name}.json.partial")
    result.unlink(missing_ok=True)
    fresh.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="tilecourse-batch-") as tmp:
        try:
            exercises = unpack(entry, course, Path(tmp))
        except (ValueError, OSError) as exc:
            return Graded(entry.name, None, str(exc))
        command = [sys.executable, "-m", "grader", "--course", str(course.path), "all",
                   "--submission", str(exercises), "--json", str(fresh), *options]
        log = out / "logs" / f"{entry.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        # Its own session (a signal to a process group cannot reach this batch), its own
        # folder as the working folder and for temporary files (nothing is left behind).
        env = {**env, "TMPDIR": tmp}
        try:
            with log.open("w") as handle:
                finished = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT,
                                          env=env, timeout=limit, stdin=subprocess.DEVNULL,
                                          cwd=tmp, start_new_session=True, check=False)
        except subprocess.TimeoutExpired:
            fresh.unlink(missing_ok=True)
            return Graded(entry.name, None, f"grading took longer than {limit:g} s")
    if finished.returncode not in GRADED_EXIT_CODES or not whole_json(fresh):
        fresh.unlink(missing_ok=True)
        return Graded(entry.name, None, f"no result was written (exit code "
                                        f"{finished.returncode}); see {log}")
    os.replace(fresh, result)
    return Graded(entry.name, result)


def whole_json(path: Path) -> bool:
    """Whether `path` holds a complete JSON object (not one cut short by a crash)."""
    try:
        return isinstance(json.loads(path.read_text(encoding="utf-8")), dict)
    except (OSError, ValueError):
        return False


def pending(submissions: list[Entry], out: Path, force: bool) -> list[Entry]:
    """The submissions without a result yet (all of them with `force`)."""
    return [e for e in submissions if force or not (out / "students" / f"{e.name}.json").is_file()]


def run(course: Course, todo: list[Entry], out: Path, options: list[str], jobs: int,
        gpus: list[str], limit: float,
        on_done: Callable[[Graded], None] = lambda g: None) -> list[Graded]:
    """Grade each submission in `todo`; returns what happened to each one."""
    (out / "students").mkdir(parents=True, exist_ok=True)
    slots = gpus or [None] * max(1, jobs)
    free: queue.SimpleQueue[str | None] = queue.SimpleQueue()  # GPUs no submission is using
    for slot in slots:
        free.put(slot)

    def grade_on_a_free_gpu(entry: Entry) -> Graded:
        gpu = free.get()  # one per worker, so there is always one free
        try:
            env = dict(os.environ)
            if gpu is not None:
                env["CUDA_VISIBLE_DEVICES"] = gpu
            return grade_one(entry, course, out, options, env, limit)
        finally:
            free.put(gpu)

    done: list[Graded] = []
    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        futures = {pool.submit(grade_on_a_free_gpu, entry): entry for entry in todo}
        for future in as_completed(futures):
            graded = future.result()
            record(out / "students", graded)
            done.append(graded)
            on_done(graded)
    return done


def record(folder: Path, graded: Graded) -> None:
    """Keep why a submission was not graded beside the results, so the gradebook shows it."""
    error_file = folder / f"{graded.name}.error"
    if graded.error:
        error_file.write_text(graded.error + "\n")
    else:
        error_file.unlink(missing_ok=True)


def class_seed(out: Path, seed: int | None, force: bool) -> int:
    """The class's one seed: the one OUT/class.json recorded, a new one only with --force
    or before any student was graded. The seed is written down before anyone is graded."""
    recorded = out / "class.json"
    earlier = json.loads(recorded.read_text())["seed"] if recorded.is_file() else None
    # Results, or a Slurm array (OUT/slurm/) that may still be grading with that seed.
    started = any((out / "students").glob("*.json")) or (out / "slurm").is_dir()
    if earlier is not None and seed not in (None, earlier) and started and not force:
        raise GradeError(f"{out} holds results graded with seed {earlier}: pass --seed {earlier} "
                         "(or no --seed) to go on with this class, --force to grade everyone "
                         "again with the new seed, or another --out.")
    if seed is None:
        seed = earlier if earlier is not None else secrets.randbelow(2**31)
    out.mkdir(parents=True, exist_ok=True)
    write_file(recorded, json.dumps({"seed": seed}) + "\n")
    return seed


def write_gradebook(course: Course, out: Path, submissions: list[Entry]) -> Path:
    """OUT/gradebook.csv: one row per student, one column per stage, from the JSON files."""
    path = out / "gradebook.csv"
    stage_ids = [s.id for s in course.stages]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *stage_ids, "total", "max", "speed graded on", "seed",
                         "not started", "error"])
        for entry in submissions:
            result = out / "students" / f"{entry.name}.json"
            error_file = out / "students" / f"{entry.name}.error"
            if not result.is_file():
                error = error_file.read_text().strip() if error_file.is_file() else "not graded"
                writer.writerow([entry.name, *[""] * len(stage_ids), "", "", "", "", "", error])
                continue
            data = json.loads(result.read_text())
            points = {s["id"]: s["total_points"] for s in data["stages"]}
            speed = any(s["speed"]["graded"] for s in data["stages"])
            problems = "; ".join(f"{s['id']}: {s['message']}" for s in data["stages"]
                                 if s["status"] == "ERROR")
            # A stage whose file was missing from the submission kept the skeleton.
            untouched = " ".join(s["id"] for s in data["stages"] if s["status"] == "NOT STARTED")
            writer.writerow([entry.name, *[points.get(i, "") for i in stage_ids], data["points"],
                             data["max_points"], data["machine"]["gpu"] if speed else "",
                             data["seed"], untouched, problems])
    return path


def require_a_safe_sandbox(protections, allow_weak: bool) -> None:
    """Refuse to grade a class where one submission could reach another or the results."""
    weak = [p for p in protections if p.name in NEEDED_FOR_A_CLASS and not p.in_force]
    if weak and not allow_weak:
        raise GradeError(
            "A class cannot be graded safely here: " + "; ".join(f"{p.name}: {p.detail}" for p in weak)
            + ". Run `grade batch` as root on Linux (a CI runner, a container with CAP_SYS_ADMIN, "
            "a cluster node), or where unprivileged user namespaces are allowed; "
            "--allow-weak-sandbox grades anyway.")
