"""Instructor workflow: the student handout, hidden cases, grading a submission folder, and
grading a class in a batch."""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, copy_course

from grader.course import load_course
from grader.grading.request import GradingRequest
from grader.errors import CourseError
from grader.instructor.release import secret_lines

HIDDEN = """
seed = 4242
[[stages]]
id = "vector_add"
cases = [ { n = 3001, dtypes = ["float32"] }, { n = 77, dtypes = ["float16"] } ]
"""


# --- the handout ------------------------------------------------------------------------


def test_release_builds_a_handout_without_solutions_or_hidden_cases(tmp_path, run_grade):
    course_file = copy_course(tmp_path / "course")
    (course_file.parent / "course.hidden.toml").write_text(HIDDEN)
    out = tmp_path / "handout"
    code, stdout, _ = run_grade("--course", str(course_file), "release", str(out))
    assert code == 0 and "no solutions/" in " ".join(stdout.split())  # wrapped at any word
    files = [p.relative_to(out) for p in out.rglob("*") if p.is_file()]
    assert Path("course.toml") in files and Path("grader/cli/__init__.py") in files
    assert Path("exercises/triton/stage3_softmax.py") in files
    assert Path("exercises/cutile/stage5_flash_attention.py") in files
    assert not [f for f in files if f.parts[0] in ("solutions", "tests", "scripts")]
    assert not (out / "course.hidden.toml").exists()
    # No line of reference code anywhere in the handout.
    secret = secret_lines(sorted((ROOT / "solutions").rglob("*.py")))
    assert len(secret) > 20  # the check has something to look for
    for file in out.rglob("*"):
        if file.is_file() and file.suffix in (".py", ".md", ".toml"):
            text = {line.strip() for line in file.read_text().splitlines()}
            assert not text & secret, file


def test_grading_in_the_handout_reports_every_stage_not_started(tmp_path, run_grade, course):
    out = tmp_path / "handout"
    assert run_grade("--course", str(course.path), "release", str(out))[0] == 0
    result = tmp_path / "r.json"
    code, _, _ = run_grade("--course", str(out / "course.toml"), "all", "--backend",
                           "triton-interpret", "--json", str(result))
    data = json.loads(result.read_text())
    assert code == 1
    assert [s["status"] for s in data["stages"]] == ["NOT STARTED"] * len(course.stages)
    code, _, err = run_grade("--course", str(out / "course.toml"), "all", "--solutions")
    assert code == 2 and "no solutions/ folder" in err


def test_the_handout_readme_is_the_students_and_its_quick_start_works(tmp_path, run_grade, course):
    """The handout's README.md is exercises/README.md: a quick start first, nothing for
    instructors, no file the handout lacks; and its quick start's grade commands run in a
    fresh handout as written (the stages NOT STARTED)."""
    out = tmp_path / "handout"
    assert run_grade("--course", str(course.path), "release", str(out))[0] == 0
    readme = (out / "README.md").read_text()
    assert readme == (ROOT / "exercises/README.md").read_text()
    assert not (out / "exercises/README.md").exists()
    assert readme.index("## Quick start") < readme.index("## Working on a stage")
    for instructor_only in ("grade calibrate", "grade release", "grade batch", "grade skeletons",
                            "--solutions", "course.hidden", "BENCHMARKS.md", "tests/",
                            "scripts/", "solutions/"):
        assert instructor_only not in readme, instructor_only
    for mentioned in re.findall(r"`(exercises/[\w/]+\.py)`", readme):
        assert (out / mentioned).is_file(), mentioned
    quick_start = readme.split("## Quick start")[1].split("```")[1]
    commands = [line.split("#")[0].split() for line in quick_start.splitlines()
                if line.startswith("grade ")]
    assert [c[:2] for c in commands] == [["grade", "doctor"], ["grade", "1"], ["grade", "3"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    for command in commands:
        run = subprocess.run([sys.executable, "-m", "grader", *command[1:]], cwd=out, env=env,
                             capture_output=True, text=True, timeout=300)
        wanted = 0 if command[1] == "doctor" else 1
        assert run.returncode == wanted, (command, run.stdout, run.stderr)
        if command[1] != "doctor":
            assert "NOT STARTED" in run.stdout and "Traceback" not in run.stdout + run.stderr


def test_release_never_overwrites_without_force(tmp_path, run_grade, course):
    out = tmp_path / "handout"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, _, err = run_grade("--course", str(course.path), "release", str(out))
    assert code == 2 and "is not empty" in err and "--force" in err
    assert not (out / "course.toml").exists()
    code, _, _ = run_grade("--course", str(course.path), "release", str(out), "--force")
    assert code == 0 and (out / "course.toml").exists()
    assert (out / "notes.txt").read_text() == "mine"  # --force adds, it never deletes


def test_release_refuses_a_handout_that_would_leak(tmp_path, run_grade):
    course_file = copy_course(tmp_path / "course")
    exercise = course_file.parent / "exercises/triton/stage1_vector_add.py"
    exercise.write_text(exercise.read_text() + "\n    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n")
    code, _, err = run_grade("--course", str(course_file), "release", str(tmp_path / "out"))
    assert code == 2 and "would contain reference code" in err
    assert "offsets = pid * BLOCK_SIZE" in err


# --- hidden cases -------------------------------------------------------------------------


def test_hidden_cases_join_their_stage_with_secret_seeds(tmp_path):
    course_file = copy_course(tmp_path)
    public = load_course(course_file)
    (tmp_path / "course.hidden.toml").write_text(HIDDEN)
    full = load_course(course_file)
    stage = full.select("vector_add")
    hidden = [c for c in stage.cases if c.hidden]
    assert len(stage.cases) == len(public.select("vector_add").cases) + 2
    assert [c.id for c in hidden] == ["hidden1-float32", "hidden2-float16"]
    assert "3001" not in " ".join(c.id for c in hidden)
    assert full.hidden_file == tmp_path / "course.hidden.toml"


def test_hidden_case_errors_name_the_hidden_file(tmp_path):
    course_file = copy_course(tmp_path)
    (tmp_path / "course.hidden.toml").write_text(HIDDEN.replace('id = "vector_add"', 'id = "sort"'))
    with pytest.raises(CourseError) as info:
        load_course(course_file)
    assert "course.hidden.toml" in str(info.value) and "no stage 'sort'" in str(info.value)


def test_hidden_feedback_says_pass_or_fail_without_the_inputs(tmp_path, run_grade):
    course_file = copy_course(tmp_path)
    (tmp_path / "course.hidden.toml").write_text(HIDDEN)
    # A kernel that is right only for lengths that fit one block: the hidden n=3001 fails.
    solution = (tmp_path / "solutions/triton/stage1_vector_add.py").read_text()
    broken = solution.replace("pid = tl.program_id(axis=0)", "pid = 0 * tl.program_id(axis=0)")
    assert broken != solution
    submission = tmp_path / "student"
    (submission / "triton").mkdir(parents=True)
    (submission / "triton/stage1_vector_add.py").write_text(broken)
    result = tmp_path / "r.json"
    code, out, _ = run_grade("--course", str(course_file), "1", "--submission", str(submission),
                             "--backend", "triton-interpret", "--json", str(result), "-v")
    cases = json.loads(result.read_text())["stages"][0]["cases"]
    hidden = [c for c in cases if c["hidden"]]
    assert code == 1 and len(hidden) == 2
    failed = next(c for c in hidden if c["id"] == "hidden1-float32")
    assert not failed["passed"] and failed["summary"] == "hidden case failed"
    assert failed["failure"] == "failed" and failed["seconds"] == 0.0
    assert failed["params"] == {} and failed["details"] == [] and failed["stats"] == {}
    assert "3001" not in out and "hidden case failed" in out and "hidden case failed:" not in out


# --- a class, in a batch ----------------------------------------------------------------------


def test_batch_grades_folders_and_zips_and_keeps_going(tmp_path, run_grade,
                                                        small_course):
    course = small_course  # two stages, one small case each: the batch's ways are the claim
    solution = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()
    subs = tmp_path / "subs"
    (subs / "ada/exercises/triton").mkdir(parents=True)
    (subs / "ada/exercises/triton/stage1_vector_add.py").write_text(solution)
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:
        archive.writestr("bob-main/triton/stage1_vector_add.py",
                         solution.replace("x + y, mask=mask)", "x - y, mask=mask)"))
    (subs / "carol.zip").write_bytes(b"this is not a zip")
    (subs / "dan").mkdir()
    (subs / "dan/notes.txt").write_text("forgot to submit")
    (subs / "erin/triton").mkdir(parents=True)
    (subs / "erin/triton/stage1_vector_add.py").write_text("def vector_add(x, y)\n    return x\n")
    out = tmp_path / "results"
    args = ("--course", str(course.path), "batch", str(subs), "--out", str(out),
            "--backend", "triton-interpret", "--seed", "7", "--jobs", "2")
    code, stdout, _ = run_grade(*args)
    assert code == 0
    rows = {r["student"]: r
            for r in csv.DictReader((out / "gradebook.csv").open(encoding="utf-8-sig"))}
    assert set(rows) == {"ada", "bob", "carol", "dan", "erin"}
    # one line: the grader's sentence, then what the student's process said, quoted
    assert ("vector_add: loading stage1_vector_add.py failed: ┆ stage1_vector_add.py has a "
            "syntax error at line 1") in rows["erin"]["error"]
    assert float(rows["ada"]["vector_add"]) == course.select("vector_add").points
    assert float(rows["bob"]["vector_add"]) == 0 and float(rows["ada"]["fused_gelu"]) == 0
    assert rows["carol"]["error"].startswith("not a submission: carol.zip is not a valid zip")
    assert rows["dan"]["error"].startswith("not a submission: no stage files found")
    assert rows["dan"]["status"] == "not a submission" and rows["ada"]["track"] == "triton"
    assert rows["ada"]["seed"] == "7" and rows["ada"]["graded on"] == "CPU" and rows["ada"]["speed"] == ""
    assert rows["ada"]["not started"] == "fused_gelu"
    assert json.loads((out / "students/ada.json").read_text())["stages"][0]["status"] == "PASS"

    # Resumable: graded students are skipped; --force grades them again.
    code, stdout, _ = run_grade(*args)
    assert "graded 2 now (3 already had results)" in stdout
    code, stdout, _ = run_grade(*args, "--force")
    assert "graded 5 now (0 already had results)" in stdout


def test_a_resumed_batch_keeps_the_class_seed(tmp_path):
    """One seed per class: a batch resumed without --seed takes the recorded one, and
    another seed is refused once a student was graded with the first (unless --force)."""
    from grader.errors import GradeError
    from grader.instructor import batch

    out = tmp_path / "out"
    first = batch.class_seed(out, None, force=False)
    assert json.loads((out / "class.json").read_text()) == {"seed": first}
    assert batch.class_seed(out, None, force=False) == first
    (out / "students").mkdir()
    (out / "students/ada.json").write_text("{}")
    other = (first + 1) % 2**31
    with pytest.raises(GradeError, match=f"graded with seed {first}: pass --seed {first}"):
        batch.class_seed(out, other, force=False)
    assert batch.class_seed(out, first, force=False) == first
    assert batch.class_seed(out, other, force=True) == other
    assert batch.class_seed(out, None, force=False) == other


def test_a_zip_cannot_write_outside_its_folder(tmp_path, course):
    from grader.instructor import batch

    archive = tmp_path / "eve.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("../../escaped.py", "x = 1")
    with pytest.raises(ValueError, match="not a submission") as caught:
        batch.unpack(batch.Entry("eve", archive), course, tmp_path / "work")
    assert caught.value.ignored == ["../../escaped.py: a path outside the submission (..)"]
    assert not (tmp_path / "escaped.py").exists()


def test_batch_runs_one_worker_per_gpu(tmp_path, run_grade, course, monkeypatch):
    """On a GPU host every GPU gets its own worker (CUDA_VISIBLE_DEVICES); no GPU is needed
    to check the dispatch, so grading itself is replaced by a recorder here."""
    import dataclasses
    import threading

    import torch

    from grader.backends import selection as backends
    from grader.instructor import batch

    seen, lock, running, peak = [], threading.Lock(), [0], [0]

    def fake_grade_one(entry, out, request, env, limit, stop=None):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            seen.append((entry.name, env.get("CUDA_VISIBLE_DEVICES"), request))
        threading.Event().wait(0.2)
        with lock:
            running[0] -= 1
        return batch.Graded(entry.name, None, "recorded only")

    gpu = backends.Selection(dataclasses.replace(backends.BACKENDS["triton"], probe=lambda: None), "test")
    monkeypatch.setattr(backends, "select", lambda name, track=None: gpu)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(batch, "grade_one", fake_grade_one)
    subs = tmp_path / "subs"
    for name in ("a", "b", "c", "d"):
        (subs / name / "triton").mkdir(parents=True)
        (subs / name / "triton/stage1_vector_add.py").write_text("# started\n")
    code, stdout, _ = run_grade("--course", str(course.path), "batch", str(subs),
                                "--out", str(tmp_path / "out"), "--seed", "3")
    assert code == 1 and "2 GPU workers" in stdout  # every grading recorded only: no results
    assert sorted(gpu for _, gpu, _ in seen) == ["0", "0", "1", "1"]
    assert peak[0] == 2  # the two GPUs were used at the same time
    assert all(r.backend == "auto" and r.seed == 3 for _, _, r in seen)


def test_batch_never_runs_two_submissions_on_one_gpu(tmp_path, course, monkeypatch):
    """A worker that finishes early takes the GPU that was freed, not the next one in turn
    (which may still be busy)."""
    import threading

    from grader.instructor import batch

    lock, busy, clashes, used = threading.Lock(), {}, [], []
    seconds = {"a": 0.01, "b": 0.5}  # b holds its GPU while a, c, d and e go through

    def fake_grade_one(entry, out, request, env, limit, stop=None):
        gpu = env.get("CUDA_VISIBLE_DEVICES")
        with lock:
            if busy.get(gpu):
                clashes.append((entry.name, gpu))
            busy[gpu] = True
            used.append(gpu)
        threading.Event().wait(seconds.get(entry.name, 0.05))
        with lock:
            busy[gpu] = False
        return batch.Graded(entry.name, None, "recorded only")

    monkeypatch.setattr(batch, "grade_one", fake_grade_one)
    todo = [batch.Entry(name, tmp_path / name) for name in "abcde"]
    graded = batch.run(todo, tmp_path / "out", GradingRequest(course, course.stages), 1,
                       ["0", "1"], 60)
    assert sorted(g.name for g in graded) == list("abcde")
    assert not clashes
    assert set(used) == {"0", "1"}


def _fake_grader(behaviour):
    """A stand-in for the `grade all` subprocess: `behaviour(json_path)` returns its exit code."""
    def fake_run(command, log, env, cwd, limit, stop=None):
        return behaviour(Path(command[command.index("--json") + 1]))

    return fake_run


@pytest.mark.parametrize("failure", ["timeout", "crash", "killed", "cut short"])
def test_batch_force_never_keeps_an_old_result_for_a_failed_run(tmp_path, course, monkeypatch,
                                                                 failure):
    import subprocess

    from grader.instructor import batch

    submission = tmp_path / "ada/triton"
    submission.mkdir(parents=True)
    (submission / "stage1_vector_add.py").write_text("# started\n")
    out = tmp_path / "out"
    (out / "students").mkdir(parents=True)
    old = out / "students/ada.json"
    old.write_text('{"old": true}')

    def fail(json_path):
        if failure == "timeout":
            json_path.write_text('{"stages": [')
            raise subprocess.TimeoutExpired("grade", 5)
        if failure == "killed":
            json_path.write_text('{"stages": [')
            return -9  # killed while writing
        if failure == "cut short":
            json_path.write_text('{"stages": [')
            return 1  # a traceback while writing (disk full, say)
        return 1  # exited without writing anything

    monkeypatch.setattr(batch, "run_isolated", _fake_grader(fail))
    entry = batch.Entry("ada", tmp_path / "ada")
    assert batch.pending([entry], out, force=True) == [entry]
    [graded] = batch.run([entry], out, GradingRequest(course, course.stages, "triton-interpret"),
                           1, [], 5)
    assert graded.error and graded.json_path is None
    assert not old.exists()
    assert sorted(p.name for p in (out / "students").iterdir()) == ["ada.error", "ada.intake.json"]
    batch.write_gradebook(course, out, [entry])
    rows = list(csv.DictReader((out / "gradebook.csv").open(encoding="utf-8-sig")))
    assert rows[0]["student"] == "ada" and rows[0]["total"] == "" and rows[0]["error"]

    # A run that finishes replaces the result, and the error goes.
    def succeed(json_path):
        json_path.write_text('{"new": true}')
        return 0

    monkeypatch.setattr(batch, "run_isolated", _fake_grader(succeed))
    [graded] = batch.run([entry], out, GradingRequest(course, course.stages, "triton-interpret"),
                           1, [], 5)
    assert not graded.error and json.loads(old.read_text()) == {"new": True}
    assert sorted(p.name for p in (out / "students").iterdir()) == ["ada.intake.json", "ada.json"]


def test_batch_finds_the_real_exercises_not_a_macos_copy(tmp_path, course):
    from grader.instructor import batch

    archive = tmp_path / "bob.zip"
    with zipfile.ZipFile(archive, "w") as z:
        # What macOS's "Compress" adds: metadata files that mirror the real folders, and
        # that sort before them.
        z.writestr("__MACOSX/bob/exercises/triton/._stage1_vector_add.py", "\x00\x05\x16\x07")
        z.writestr("__MACOSX/bob/exercises/triton/stage1_vector_add.py", "mac metadata")
        z.writestr("bob/exercises/triton/stage1_vector_add.py", "# bob's kernel\n")
    exercises = batch.unpack(batch.Entry("bob", archive), course, tmp_path / "work").exercises
    assert (exercises / "triton/stage1_vector_add.py").read_text() == "# bob's kernel\n"
    assert not list(exercises.rglob("__MACOSX")) and not list(exercises.rglob("._*"))

    # The shallowest folder wins over one that merely sorts first.
    folder = tmp_path / "carol"
    (folder / "a/old/exercises/triton").mkdir(parents=True)
    (folder / "a/old/exercises/triton/stage1_vector_add.py").write_text("# old\n")
    (folder / "z/exercises/triton").mkdir(parents=True)
    (folder / "z/exercises/triton/stage1_vector_add.py").write_text("# new\n")
    exercises = batch.unpack(batch.Entry("carol", folder), course, tmp_path / "work2").exercises
    assert (exercises / "triton/stage1_vector_add.py").read_text() == "# new\n"


CALIBRATE_COURSE = """[course]
title = "t"

[[stages]]
id = "vector_add"
speed.points = 5   # a speed table written with dotted keys, no [stages.speed] header
speed.thresholds.sm_90.triton = { min_speedup = 0.5 }

[[stages]]
id = "softmax"

[stages.speed]
points = 5
thresholds.sm_90.triton = { min_fraction = 0.4 }  # set by hand; keep
thresholds.sm_80.triton = { copied_from = "sm_90", min_fraction = 0.4 }
# the next stage
"""


def test_calibrate_writes_only_into_the_stages_own_speed_table(tmp_path):
    from grader.course import Threshold
    from grader.errors import GradeError
    from grader.instructor.calibrate import Calibration, write_thresholds

    path = tmp_path / "course.toml"
    path.write_text(CALIBRATE_COURSE)

    def cal(stage, backend, value, arch="sm_90"):
        return Calibration(stage, backend, [], Threshold(min_speedup=value), arch)

    # vector_add has no [stages.speed] of its own: softmax's must not be written instead.
    with pytest.raises(GradeError, match="vector_add stage has no \\[stages.speed\\] table"):
        write_thresholds(path, [cal("softmax", "cutile", 1.5), cal("vector_add", "triton", 0.9)])
    with pytest.raises(GradeError, match='no \\[\\[stages\\]\\] entry has id = "sort"'):
        write_thresholds(path, [cal("sort", "triton", 0.9)])
    assert path.read_text() == CALIBRATE_COURSE and list(tmp_path.iterdir()) == [path]

    # In its own table: the value is set, the hand-written key and comment stay, a copied
    # line becomes this architecture's own, and a new backend's line goes at the end of the
    # table, before the comment about the next stage.
    kept = write_thresholds(path, [cal("softmax", "triton", 0.85), cal("softmax", "cutile", 1.5),
                                   cal("softmax", "triton", 0.7, "sm_80")])
    assert kept.read_text() == CALIBRATE_COURSE
    assert path.read_text() == CALIBRATE_COURSE.replace(
        "thresholds.sm_90.triton = { min_fraction = 0.4 }  # set by hand; keep\n"
        'thresholds.sm_80.triton = { copied_from = "sm_90", min_fraction = 0.4 }\n',
        "thresholds.sm_90.triton = { min_speedup = 0.85, min_fraction = 0.4 }  # set by hand; keep\n"
        "thresholds.sm_80.triton = { min_speedup = 0.7, min_fraction = 0.4 }\n"
        "thresholds.sm_90.cutile = { min_speedup = 1.5 }\n")

    # A layout it cannot edit in place (a [stages.speed.thresholds.*] table) is left alone.
    nested = CALIBRATE_COURSE.replace("thresholds.sm_90.triton = { min_fraction = 0.4 }",
                                      "[stages.speed.thresholds.sm_90.triton]\nmin_fraction = 0.4")
    path.write_text(nested)
    with pytest.raises(GradeError, match="cannot edit safely.*by hand:\n  softmax: thresholds.sm_90.triton"):
        write_thresholds(path, [cal("softmax", "triton", 0.85)])
    assert path.read_text() == nested


def test_calibrate_says_what_is_wrong_without_a_traceback(tmp_path, run_grade, course,
                                                         monkeypatch):
    from types import SimpleNamespace

    from grader.errors import GradeError
    from grader.instructor import calibrate

    # In a student handout there is nothing to time.
    course_file = copy_course(tmp_path / "handout")
    shutil.rmtree(course_file.parent / "solutions")
    code, _, err = run_grade("--course", str(course_file), "calibrate")
    assert code == 2 and "no solutions/ folder" in err and "Traceback" not in err

    # A reference that computes the wrong thing cannot set a threshold.
    class FakeChild:
        def __init__(self, *args, **kwargs):
            pass

        def load(self):
            pass

        def close(self):
            pass

    class WrongCheck:
        def __init__(self, *args, **kwargs):
            pass

        def time(self, case):
            return SimpleNamespace(case=SimpleNamespace(passed=False, speedup=1.0,
                                                        summary="wrong result at [3]"))

    monkeypatch.setattr(calibrate, "ChildProcess", FakeChild)
    monkeypatch.setattr(calibrate, "SpeedCheck", WrongCheck)
    backend = SimpleNamespace(prepare=lambda: None, track="triton", device="cuda", name="triton")
    with pytest.raises(GradeError, match="vector_add reference .* is wrong on a speed case.*"
                                         "wrong result at \\[3\\]"):
        calibrate.calibrate_stage(course, course.select("vector_add"),
                                  SimpleNamespace(backend=backend), 0.8)
