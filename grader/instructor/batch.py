"""`grade batch`: a class's submissions graded one by one, each in its own process.

A submission is a folder (a git checkout, say) or a zip (grader.instructor.submissions says
which paths are students, and what of each is taken); whatever it lacks stays the untouched
skeleton (NOT STARTED, its result saying the file was not in the submission). A path that
holds no stage file is reported as "not a submission" under its own name. Each student is
graded on their own track, the one whose stage files they filled in (or the one --track or a
backend's name forces), by a separate `grade all --submission exercises` process run in a
scratch folder of its own, in a session of its own, with a time limit; inside it, the
submission's code runs only in the sandbox (grader.sandbox), which cannot see the other
submissions, the results or this process. Every process of that session is ended before its
scratch folder is removed. On a GPU host one worker runs per GPU (CUDA_VISIBLE_DEVICES), on
a CPU host `--jobs N` workers.

Results, all naming the student's files by their own paths (exercises/triton/...), never
the scratch folder: OUT/students/NAME.json (written by the grading process, renamed into
place after it has ended), NAME.md (the student's feedback), NAME.intake.json (the track
and why, the zip members not taken), NAME.error (why there is no result), OUT/logs/NAME.log,
the stage files taken in OUT/files/NAME/ (grader.instructor.handed_in), and
OUT/gradebook.csv rebuilt from all of them. A student whose files are unchanged since their
result is skipped on the next run unless --force, so a batch can be resumed and run
again on a newer copy of the class (grader.instructor.regrade). A submission that runs out of
its --limit keeps the stages it finished.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path

from grader.backends import selection as backends
from grader.errors import GradeError
from grader.instructor.gradebook import (NOT_A_SUBMISSION, Intake, read_intake,  # noqa: F401
                                         write_feedback_files, write_gradebook, write_intake)
from grader.instructor import handed_in, history
from grader.instructor.regrade import keep_graded_stages
from grader.instructor.submissions import (  # noqa: F401
    Entry, NotASubmission, comparable, digest, entries, unpack)
from grader.grading.request import GradingRequest
from grader.instructor.isolation import Stopped, run_isolated, scratch
from grader.intake.overlay import Unpacked, from_the_handout, student_text
from grader.intake.upload import UploadError
from grader.results import Status, write_file
from grader.sandbox.privileges import NEEDED_FOR_A_CLASS

GRADED_EXIT_CODES = (0, 1)  # `grade all` graded the submission (passed or not)
SUBMISSION = "exercises"  # the submission's folder, relative to the grading process's own


@dataclass
class Graded:
    name: str
    json_path: Path | None
    error: str = ""
    note: str = ""  # what the run says of the result (an earlier one that stands instead)


def grade_one(entry: Entry, out: Path, request: GradingRequest, env: dict, limit: float,
              results: Path | None = None, stop: threading.Event | None = None) -> Graded:
    """Grade one submission in its own `grade all` process; its result goes to `results`
    (OUT/students/ unless given: a Slurm task's go to its run folder), its log to OUT/logs/,
    what its intake found to OUT/students/NAME.intake.json. Once `stop` is set, its grading
    is ended and Stopped raised, its scratch folder removed."""
    result = (results or out / "students") / f"{entry.name}.json"
    # The grader writes to a scratch name, renamed only once it has finished: a run that
    # crashes or times out leaves no result (nor half of one). An earlier result (--force,
    # a resubmission) goes to OUT/history/ first, so that it can never stand in for this
    # run, nor be lost by it.
    fresh = result.with_name(f"{entry.name}.json.partial")
    so_far = result.with_name(f"{entry.name}.json.so-far")  # the stages finished, as they end
    earlier = read_intake(out, entry.name)
    history.archive(out, entry.name, earlier.digest)
    for stale in (result, fresh, so_far):
        stale.unlink(missing_ok=True)
    log = out / "logs" / f"{entry.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    intake = Intake(versions=earlier.versions)  # kept by a run that finds no submission
    course = request.course
    try:
        with scratch() as tmp:
            try:
                unpacked = unpack(entry, course, tmp)
            except NotASubmission as exc:
                intake.ignored = exc.ignored
                handed_in.forget(out, entry.name)
                return _not_graded(entry, out, intake, str(exc))
            except UploadError as exc:  # a corrupt zip: as much a submission as none at all
                handed_in.forget(out, entry.name)
                return _not_graded(entry, out, intake, f"{NOT_A_SUBMISSION}: {exc}")
            except (ValueError, OSError) as exc:  # this host's failure, not the student's
                return _not_graded(entry, out, intake, str(exc))
            intake.ignored, intake.read_as = unpacked.ignored, unpacked.read_as()
            intake.digest = digest(unpacked.files)
            handed_in.keep(out, entry.name, unpacked.files)  # what the class report compares
            # A version of the files not graded before counts once (a regrade of the same
            # files, --force, does not; nor one whose earlier digest cannot tell).
            same = earlier.digest == intake.digest or (
                bool(earlier.digest) and not comparable(earlier.digest))
            intake.versions = earlier.versions if same else earlier.versions + 1
            # The student's own request: the one `grade all --submission` would resolve.
            student = replace(request, submission=unpacked.exercises)
            choice = student.choose_track(student.folder())
            try:
                backend = backends.select(request.backend, choice.track).backend
            except GradeError as exc:  # the student's track cannot be graded on this host
                intake.track, intake.why = choice.track or "", choice.why
                return _not_graded(entry, out, intake, str(exc))
            intake.track, intake.why = backend.track, choice.why
            write_intake(out, entry.name, intake)
            # The backend chosen here is the one the grading process uses: it cannot choose
            # another track than the intake recorded.
            command = [sys.executable, "-m", "grader", "--course", str(course.path), "all",
                       "--submission", SUBMISSION, "--json", str(fresh),
                       "--json-so-far", str(so_far),
                       *replace(request, backend=backend.name, track=None).child_options()]
            # Its own folder as the working folder and for temporary files (nothing is left
            # behind), and the submission named relative to it: what the grader prints and
            # records names the student's own paths (exercises/triton/...).
            try:
                code = run_isolated(command, log, {**importing_this_grader(env),
                                                   "TMPDIR": str(tmp)}, tmp, limit, stop=stop)
            except Stopped:  # nothing of a grading cut short stays beside the results
                fresh.unlink(missing_ok=True)
                so_far.unlink(missing_ok=True)
                raise
            except subprocess.TimeoutExpired:
                fresh.unlink(missing_ok=True)
                # Before the stages finished are kept: `finally` runs only after the return.
                student_paths(so_far, tmp)
                kept = _out_of_time(entry.name, so_far, fresh, request, backend.track, limit,
                                    unpacked)
                return _placed(kept, out, results, intake.digest)
            finally:
                student_paths(log, tmp)
                student_paths(so_far, tmp)
    except OSError as exc:  # the scratch folder itself (a full disk): a message, not a traceback
        return Graded(entry.name, None, f"not graded: the grader's temporary folder failed: {exc}")
    if code not in GRADED_EXIT_CODES or not whole_json(fresh):
        fresh.unlink(missing_ok=True)
        return Graded(entry.name, None, f"no result was written (exit code {code}); see "
                                        f"logs/{log.name}")
    so_far.unlink(missing_ok=True)
    student_paths(fresh, tmp)
    not_handed_in(fresh, unpacked)
    return _placed(Graded(entry.name, fresh), out, results, intake.digest)


def _placed(graded: Graded, out: Path, results: Path | None, digest: str) -> Graded:
    """A new result (at graded.json_path, a scratch name) put where it belongs: a Slurm
    task's in its run folder, where it is collected; else in OUT/students/, by the rule of
    which result stands (grader.instructor.history)."""
    if graded.json_path is None:
        return graded
    fresh, name = graded.json_path, graded.name
    if results is not None:
        os.replace(fresh, results / f"{name}.json")
        return Graded(name, results / f"{name}.json")
    note = history.install(out, name, fresh, digest)
    return Graded(name, out / "students" / f"{name}.json", note=note)


def _out_of_time(name: str, so_far: Path, result: Path, request: GradingRequest, track: str,
                 limit: float, unpacked: Unpacked) -> Graded:
    """A submission that ran out of --limit: the stages it finished are its result, written
    to `result` (a scratch name)."""
    kept = keep_graded_stages(so_far, result, request.stages, track, limit)
    so_far.unlink(missing_ok=True)
    if not kept:
        return Graded(name, None, f"grading took longer than {limit:g} s (--limit) before its "
                                  "first stage finished")
    not_handed_in(result, unpacked)
    return Graded(name, result)


def not_handed_in(path: Path, unpacked: Unpacked) -> None:
    """Say in the result `path` of each stage NOT STARTED whose file the submission lacks
    that the file was not in it. The grading process read the folder laid out here, where
    every stage file is (the handout's skeleton for one the student did not hand in), so it
    can only tell the student to fill in the TODOs."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    stages = data.get("stages", []) if isinstance(data, dict) else []
    told = 0
    for stage in stages:
        why = (stage.get("status") == Status.NOT_STARTED.value
               and from_the_handout(stage.get("module", ""), unpacked))
        if why:
            stage["message"], told = why, told + 1
    if told:
        write_file(path, json.dumps(data, indent=2) + "\n")


def _not_graded(entry: Entry, out: Path, intake: Intake, why: str) -> Graded:
    write_intake(out, entry.name, intake)
    return Graded(entry.name, None, why)


def importing_this_grader(env: dict) -> dict:
    """`env` with this grader's package first on PYTHONPATH: a student's grading runs in
    their own folder, where `python -m grader` finds the grader only if it is installed;
    from a checkout it would not be, and each student would fail with "No module named
    grader"."""
    root = str(Path(__file__).resolve().parents[2])
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    return {**env, "PYTHONPATH": os.pathsep.join([root, *rest])}


def student_paths(path: Path, tmp: Path) -> None:
    """Rewrite `path` so that it names the student's files as the student knows them
    (exercises/triton/stage3_softmax.py), never the batch's temporary folder."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    cleaned = student_text(text, tmp)
    if cleaned != text:
        write_file(path, cleaned)


def whole_json(path: Path) -> bool:
    """Whether `path` holds a complete JSON object (not one cut short by a crash)."""
    try:
        return isinstance(json.loads(path.read_text(encoding="utf-8")), dict)
    except (OSError, ValueError):
        return False


def pending(students: list[Entry], out: Path, force: bool) -> list[Entry]:
    """The submissions without a result yet (all of them with `force`); `grade batch`
    also grades again those whose files changed (grader.instructor.regrade.plan)."""
    return [e for e in students if force or not (out / "students" / f"{e.name}.json").is_file()]


def run(todo: list[Entry], out: Path, request: GradingRequest, jobs: int, gpus: list[str],
        limit: float, on_done: Callable[[Graded], None] = lambda g: None) -> list[Graded]:
    """Grade each submission in `todo`; returns what happened to each one. On Ctrl-C (or
    SIGTERM) no submission is started any more, those being graded are ended and their
    scratch folders removed, and then KeyboardInterrupt goes on: the results of the
    submissions graded before stay, and the same command grades the rest."""
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
            return grade_one(entry, out, request, env, limit, stop=stop)
        finally:
            free.put(gpu)

    done: list[Graded] = []
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=len(slots))
    try:
        futures = {pool.submit(grade_on_a_free_gpu, entry): entry for entry in todo}
        for future in as_completed(futures):
            graded = future.result()
            record(out / "students", graded)
            done.append(graded)
            on_done(graded)
    except BaseException:
        stop.set()  # the gradings under way end within WAIT_STEP
        raise
    finally:
        # Left to the pool's own exit, an interrupted batch went on grading every submission
        # not yet started, and waited for each one under way.
        pool.shutdown(wait=True, cancel_futures=True)
    return done


def record(folder: Path, graded: Graded) -> None:
    """Keep why a submission was not graded beside the results, so the gradebook shows it."""
    error_file = folder / f"{graded.name}.error"
    if graded.error:
        write_file(error_file, graded.error + "\n")
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


def require_a_safe_sandbox(protections, allow_weak: bool) -> None:
    """Refuse to grade a class where one submission could reach another or the results."""
    weak = [p for p in protections if p.name in NEEDED_FOR_A_CLASS and not p.in_force]
    if weak and not allow_weak:
        raise GradeError(
            "A class cannot be graded safely here: " + "; ".join(f"{p.name}: {p.detail}" for p in weak)
            + ". Run `grade batch` as root on Linux (a CI runner, a container with CAP_SYS_ADMIN, "
            "a cluster node), or where unprivileged user namespaces are allowed; "
            "--allow-weak-sandbox grades anyway.")
