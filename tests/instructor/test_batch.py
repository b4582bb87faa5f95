"""`grade batch` on a class: each student on their own track, folders that are not
submissions, hostile zips, the students' feedback files, and paths as students know them."""

import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

from grader.instructor import batch, isolation, submissions
from grader.intake import overlay, upload

TRITON_ADD, CUTILE_ADD = "triton/stage1_vector_add.py", "cutile/stage1_vector_add.py"
TRITON_GELU, CUTILE_GELU = "triton/stage2_fused_gelu.py", "cutile/stage2_fused_gelu.py"


def _solution(path: str) -> str:
    return (ROOT / "solutions" / path).read_text(encoding="utf-8")


def _student(folder: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")


def test_a_class_is_graded_each_on_their_own_track(tmp_path, run_grade, small_course,
                                                   monkeypatch):
    temp = tmp_path / "tmp"  # the batch's temporary folders, apart from other tests' ones
    temp.mkdir()
    monkeypatch.setattr(isolation.tempfile, "tempdir", str(temp))
    subs = tmp_path / "subs"
    _student(subs / "tia/exercises", {TRITON_ADD: _solution(TRITON_ADD)})
    # A wrong cuTile GELU: its failure and its file must reach the feedback.
    wrong_gelu = _solution(CUTILE_GELU).replace("0.044715", "0.5")
    assert wrong_gelu != _solution(CUTILE_GELU)
    _student(subs / "cuong/exercises", {CUTILE_ADD: _solution(CUTILE_ADD),
                                        CUTILE_GELU: wrong_gelu})
    # Mixed: one Triton stage, two cuTile ones; the cuTile track has more.
    _student(subs / "max", {TRITON_ADD: _solution(TRITON_ADD), CUTILE_ADD: _solution(CUTILE_ADD),
                            CUTILE_GELU: _solution(CUTILE_GELU)})
    # Empty: the handout as it was given out, nothing filled in.
    _student(subs / "emma/exercises", {TRITON_ADD: (ROOT / "exercises" / TRITON_ADD).read_text()})
    (subs / "nora/notes").mkdir(parents=True)
    (subs / "nora/notes/todo.md").write_text("start the course\n")
    # Dragged and dropped: a bare stage file, its track told by its imports.
    (subs / "bree").mkdir()
    (subs / "bree" / Path(TRITON_ADD).name).write_text(_solution(TRITON_ADD))
    out = tmp_path / "grades"

    code, stdout, _ = run_grade("--course", str(small_course.path), "batch", str(subs),
                                "--out", str(out), "--seed", "5", "--jobs", "2")
    assert code == 0, stdout
    rows = {r["student"]: r
            for r in csv.DictReader((out / "gradebook.csv").open(encoding="utf-8-sig"))}
    assert set(rows) == {"tia", "cuong", "max", "emma", "nora", "bree"}  # never "notes"
    assert {n: rows[n]["track"] for n in rows if n != "nora"} == {
        "tia": "triton", "cuong": "cutile", "max": "cutile", "emma": "triton", "bree": "triton"}
    assert float(rows["bree"]["vector_add"]) == 10
    assert float(rows["tia"]["vector_add"]) == 10 and float(rows["tia"]["total"]) == 10
    assert float(rows["cuong"]["vector_add"]) == 10 and float(rows["cuong"]["fused_gelu"]) == 0
    assert float(rows["max"]["total"]) == 20
    assert rows["emma"]["status"] == "graded" and float(rows["emma"]["total"]) == 0
    assert rows["emma"]["not started"] == "vector_add fused_gelu"
    assert rows["nora"]["status"] == "not a submission"
    assert rows["nora"]["error"].startswith("not a submission: no stage files found (looked for "
                                            "exercises/triton/stage1_vector_add.py")
    data = json.loads((out / "students/cuong.json").read_text())
    assert {s["backend"] for s in data["stages"]} == {"cutile-sim"}

    # Feedback for everyone, next to the results.
    feedback = {n: (out / f"students/{n}.md").read_text() for n in rows}
    assert "## cuong: 10/20 points, FAIL" in feedback["cuong"]
    assert "stage2 fused_gelu: FAIL" in feedback["cuong"]
    assert "File: `exercises/cutile/stage2_fused_gelu.py`" in feedback["cuong"]
    assert "elements mismatch" in feedback["cuong"].split("stage2 fused_gelu: FAIL")[1]
    assert "also started, not graded: triton: vector_add" in feedback["max"]
    assert "not a submission: no stage files found" in feedback["nora"]
    assert "20/20 points, PASS" in feedback["max"]
    assert "**How the submission was read:**" in feedback["bree"]
    assert ("stage1_vector_add.py: graded as exercises/triton/stage1_vector_add.py (it imports "
            "triton)") in feedback["bree"]
    assert "How the submission was read" not in feedback["tia"]  # in its place: nothing to say
    # The class report beside the gradebook, from the same results, linking each feedback.
    report = (out / "report.html").read_text(encoding="utf-8")
    assert all(f"href='students/{n}.html'" in report for n in rows) and "class report:" in stdout

    # Student-relative paths everywhere: logs, JSON, feedback.
    written = [*(out / "students").iterdir(), *(out / "logs").iterdir(), out / "gradebook.csv"]
    for path in written:
        text = path.read_text()
        assert "tilecourse-batch-" not in text and "<tmp>" not in text, path
    assert "exercises/cutile/stage2_fused_gelu.py" in json.dumps(data)
    assert not list(temp.glob("tilecourse-batch-*"))  # the batch removed its own


def _zip(path: Path, members: dict[str, bytes | str], links: tuple[str, ...] = ()) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16  # a symbolic link, as zip -y stores one
            archive.writestr(info, "/etc/passwd")
    return path


def test_a_zip_gives_only_its_stage_files_within_limits(tmp_path, small_course):
    solution = _solution(TRITON_ADD)
    archive = _zip(tmp_path / "zed.zip", {
        f"zed-main/exercises/{TRITON_ADD}": solution,
        "zed-main/exercises/triton/helper.py": "x = 1\n",
        "/etc/cron.d/evil": "x",
        f"../{CUTILE_ADD}": "x",
        "stage2_fused_gelu.py": "x" * (submissions.FILE_LIMIT + 1),
        "__MACOSX/zed-main/._stage1_vector_add.py": "metadata",
    }, links=(f"exercises/{CUTILE_GELU}",))
    unpacked = submissions.unpack(submissions.Entry("zed", archive), small_course, tmp_path / "w")
    assert (unpacked.exercises / TRITON_ADD).read_text() == solution
    assert (unpacked.exercises / CUTILE_GELU).read_text() == \
        (small_course.root / "exercises" / CUTILE_GELU).read_text()  # the skeleton stays
    assert not (unpacked.exercises / "triton/helper.py").exists()
    why = dict(item.split(": ", 1) for item in unpacked.ignored)
    assert why == {"zed-main/exercises/triton/helper.py": "not a stage file",
                   "/etc/cron.d/evil": "an absolute path",
                   f"../{CUTILE_ADD}": "a path outside the submission (..)",
                   "stage2_fused_gelu.py": "larger than 256 KiB",
                   f"exercises/{CUTILE_GELU}": "a symbolic link"}
    assert not list((tmp_path / "w").rglob("passwd")) and not (tmp_path / "etc").exists()


def test_gradescope_style_bare_files_find_their_track_by_what_they_import(tmp_path, small_course):
    archive = _zip(tmp_path / "gus.zip", {
        "stage1_vector_add.py": _solution(CUTILE_ADD),
        "stage2_fused_gelu.py": "print('hello')\n",
    })
    unpacked = submissions.unpack(submissions.Entry("gus", archive), small_course, tmp_path / "w")
    assert (unpacked.exercises / CUTILE_ADD).read_text() == _solution(CUTILE_ADD)
    assert unpacked.ignored == ["stage2_fused_gelu.py: could be either track's (triton/ or "
                                "cutile/): it imports neither triton nor cuda.tile; put it in "
                                "the folder of its track, or import only the language its "
                                "kernels use"]


def test_a_zip_beyond_the_total_limit_keeps_what_fits(tmp_path, small_course, monkeypatch):
    monkeypatch.setattr(upload, "TOTAL_LIMIT", 100)
    archive = _zip(tmp_path / "big.zip", {f"exercises/{TRITON_ADD}": "a" * 80,
                                          f"exercises/{TRITON_GELU}": "b" * 80})
    unpacked = submissions.unpack(submissions.Entry("big", archive), small_course, tmp_path / "w")
    assert (unpacked.exercises / TRITON_ADD).read_text() == "a" * 80
    assert unpacked.ignored == [f"exercises/{TRITON_GELU}: over the submission's 0 MiB of stage files"]


def test_a_zip_without_stage_files_is_not_a_submission(tmp_path, small_course):
    archive = _zip(tmp_path / "nia.zip", {"notes/todo.md": "later"})
    with pytest.raises(submissions.NotASubmission) as caught:
        submissions.unpack(submissions.Entry("nia", archive), small_course, tmp_path / "w")
    assert str(caught.value).startswith("not a submission: no stage files found")
    assert caught.value.ignored == ["notes/todo.md: not a stage file"]


def test_a_folder_named_alone_is_its_own_student_even_when_it_is_not_a_submission(tmp_path,
                                                                                   small_course):
    (tmp_path / "nora/notes").mkdir(parents=True)
    (tmp_path / "nora/notes/a.txt").write_text("x")
    assert submissions.entries(small_course, [tmp_path / "nora"]) == [
        submissions.Entry("nora", tmp_path / "nora")]
    _student(tmp_path / "class/ann/exercises", {TRITON_ADD: "x"})
    (tmp_path / "class/bo").mkdir()
    assert [e.name for e in submissions.entries(small_course, [tmp_path / "class"])] == ["ann", "bo"]


def test_a_folder_of_drag_and_drop_uploads_is_a_class(tmp_path, small_course):
    """Students who uploaded their stage files bare (as Gradescope's drag-and-drop brings
    them) are each a submission of a class folder; a folder with bare files of its own is
    one student."""
    for name in ("ann", "bo"):
        (tmp_path / "class" / name).mkdir(parents=True)
        (tmp_path / "class" / name / Path(TRITON_ADD).name).write_text(_solution(TRITON_ADD))
    assert [e.name for e in submissions.entries(small_course, [tmp_path / "class"])] == \
        ["ann", "bo"]
    assert submissions.entries(small_course, [tmp_path / "class/ann"]) == [
        submissions.Entry("ann", tmp_path / "class/ann")]


def test_a_straggler_is_ended_before_its_scratch_folder_goes(tmp_path):
    """A process the grading process left behind (its sandbox, say) must not outlive the
    scratch folder: it would write a traceback about the vanished folder into the log."""
    import sys
    import time

    log = tmp_path / "log"
    straggler = ("import subprocess, sys; "
                 "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                 "print('left behind', p.pid, flush=True)")
    with isolation.scratch() as tmp:
        code = isolation.run_isolated([sys.executable, "-c", straggler], log, {}, tmp, 20)
    pid = int(log.read_text().split("left behind ")[1].split()[0])
    deadline = time.monotonic() + 5  # SIGKILL is delivered, not waited for
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert code == 0 and not _running(pid) and not tmp.exists()
    with isolation.scratch() as tmp, pytest.raises(subprocess.TimeoutExpired):
        isolation.run_isolated([sys.executable, "-c", "import time; time.sleep(30)"], log, {},
                               tmp, 0.5)
    assert "stopped after 0.5 s" in log.read_text()


def test_a_stopped_batch_ends_its_grading_at_once(tmp_path):
    """Once the batch is stopped (Ctrl-C, SIGTERM), a grading under way is ended within a
    look or two, not at its --limit, and its scratch folder goes with it."""
    import threading
    import time

    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    start = time.monotonic()
    with pytest.raises(isolation.Stopped), isolation.scratch() as tmp:
        isolation.run_isolated([sys.executable, "-c", "import time; time.sleep(60)"],
                               tmp_path / "log", {}, tmp, 60, stop=stop)
    assert time.monotonic() - start < 5 and not tmp.exists()
    assert "stopped after" not in (tmp_path / "log").read_text()  # not its --limit


SLEEPS = _solution(TRITON_ADD).replace(
    '    """Return x + y for two 1-D tensors of the same shape and dtype."""\n',
    '    """Return x + y for two 1-D tensors of the same shape and dtype."""\n'
    "    import time\n    time.sleep(1000)\n")


@pytest.mark.parametrize("stop", ["Ctrl-C", "SIGTERM"])
def test_an_interrupted_batch_stops_at_once_and_leaves_nothing(tmp_path, small_course, stop):
    """Ctrl-C or SIGTERM (Slurm's scancel, `timeout`) while the first of three students,
    whose wrapper sleeps, is graded: no other student is started, the grading under way is
    ended and its scratch folder removed, the class files are written, and the command
    says so and exits 130."""
    import os
    import signal
    import time

    assert "time.sleep(1000)" in SLEEPS
    for name in ("ann", "ben", "cat"):
        _student(tmp_path / "class" / name, {TRITON_ADD: SLEEPS})
    temp, out = tmp_path / "tmp", tmp_path / "out"
    temp.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
           "TMPDIR": str(temp)}
    process = subprocess.Popen(
        [sys.executable, "-m", "grader", "--course", str(small_course.path), "batch",
         str(tmp_path / "class"), "--out", str(out), "--backend", "triton-interpret",
         "--jobs", "1"], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    deadline = time.monotonic() + 60
    while not list(temp.glob("tilecourse-batch-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1)  # the grading process started
    start = time.monotonic()
    process.send_signal(signal.SIGINT if stop == "Ctrl-C" else signal.SIGTERM)
    said, _ = process.communicate(timeout=60)
    assert process.returncode == 130, said
    assert time.monotonic() - start < 10
    assert f"interrupted ({stop}) after 0 of 3 submissions" in said
    assert "the same command grades the rest" in said and "Traceback" not in said
    assert not list(temp.iterdir())  # no scratch folder left
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["ann.log"]  # none started after
    assert (out / "gradebook.csv").is_file() and not list((out / "students").glob("*.json.*"))


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not yet reaped by its new parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_childs_file_systems_in_memory_fit_its_documented_budget():
    """tmpfs pages are RAM: each child's mounts are capped, 848 MiB in all (was 4 GiB)."""
    import inspect
    import re

    from grader.sandbox import filesystem

    def mib(size: str) -> int:
        number, unit = re.fullmatch(r"(\d+)([mg])", size).groups()
        return int(number) * (1024 if unit == "g" else 1)

    sizes = [filesystem.SCRATCH_SIZE, filesystem.TMP_SIZE, filesystem.SHM_SIZE]
    assert 16 + sum(mib(s) for s in sizes) == 848
    assert not re.search(r"size=\d+g", inspect.getsource(filesystem.build))  # all capped above


def test_paths_below_the_scratch_folder_become_the_students_own(tmp_path):
    tmp = tmp_path / "tilecourse-batch-x"
    text = (f'File "{tmp}/exercises/triton/stage3_softmax.py", line 4\n'
            f"copied to {tmp}/run/copy/exercises/cutile/stage1_vector_add.py: ok\n"
            f"cache in {tmp}/home")
    assert overlay.student_text(text, tmp) == (
        'File "exercises/triton/stage3_softmax.py", line 4\n'
        "copied to exercises/cutile/stage1_vector_add.py: ok\n"
        "cache in <tmp>/home")


@pytest.mark.slow  # a class of two, graded in a batch and each alone: half a minute
def test_the_batch_study_finds_each_students_points_alone_as_in_the_batch(capsys, monkeypatch,
                                                                         tmp_path):
    """`python -m scripts batch` on Triton's interpreter, the course cut to two stages: a
    whole student and one with a fault file in stage 1; both graded alone as well, with the
    same points as in the batch."""
    from scripts.__main__ import main

    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the study sets its own; put back after
    logs = tmp_path / "logs"
    assert main(["batch", "--students", "2", "--backend", "triton-interpret",
                 "--stages", "1", "2", "--logs", str(logs)]) == 0
    table = capsys.readouterr().out
    assert "| student01 | - | [10.0, 15.0] |" in table
    # The fault file costs stage 1 some of its points (how many depends on its cases: a grid
    # rounded down still passes the case of whole tiles) and no other stage any.
    row = next(line for line in table.splitlines() if line.startswith("| student02 |"))
    assert "| stage 1: stage1_" in row
    batch_points = row.split(" | ")[2]
    assert batch_points.endswith(", 15.0]")
    assert float(batch_points[1:].split(",")[0]) < 10.0
    assert table.count("| yes |") == 2 and "| NO |" not in table
    assert "grade batch: 2 students, --jobs 1, --backend triton-interpret:" in table
    # Every grading's output kept: the batch's, each student's in it, each alone's profile.
    assert sorted(p.name for p in logs.iterdir()) == [
        "batch-student01.log", "batch-student02.log", "batch.log",
        "student01-alone.log", "student02-alone.log"]
    assert "where the time went" in (logs / "student02-alone.log").read_text()


def test_the_readmes_batch_line_grades_a_class_in_the_course_folder(small_course, run_grade,
                                                                   monkeypatch):
    """`grade batch submissions/ --out grades/`, typed in the course's folder as README.md
    shows it: each student is graded by a process whose working folder is a scratch folder,
    and a relative --out once sent every result there (every student "no result", exit 0)."""
    root = small_course.root
    _student(root / "submissions/ada/exercises", {TRITON_ADD: _solution(TRITON_ADD)})
    monkeypatch.chdir(root)
    code, out, _ = run_grade("batch", "submissions/", "--out", "grades/", "--backend",
                             "triton-interpret")
    assert code == 0, out
    rows = {r["student"]: r for r in csv.DictReader(
        (root / "grades/gradebook.csv").open(encoding="utf-8-sig"))}
    assert float(rows["ada"]["vector_add"]) == 10, rows["ada"]


def test_a_batch_where_a_student_got_no_result_exits_1(small_course, run_grade, tmp_path):
    _student(tmp_path / "subs/ada/exercises", {TRITON_ADD: _solution(TRITON_ADD)})
    (tmp_path / "subs/nora").mkdir()  # not a submission: no student, no failure
    (tmp_path / "subs/nora/notes.md").write_text("start the course\n")
    code, out, _ = run_grade("--course", str(small_course.path), "batch", str(tmp_path / "subs"),
                             "--out", str(tmp_path / "grades"), "--backend", "triton-interpret",
                             "--limit", "1")
    assert code == 1, out
    assert "1 of them got no result (ada): the reasons are above" in " ".join(out.split())
