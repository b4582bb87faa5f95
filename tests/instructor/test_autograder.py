"""The Gradescope autograder as Gradescope runs it: the zip's setup.sh (its downloads stood in
for) and its run_autograder (for real) under a fake /autograder root, on a drag-and-drop
upload, a cuTile upload and the odd uploads of tests/uploads/: every run leaves a valid
results.json, and no path outside the submission."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, vector_add_course

from grader.course import load_course
from grader.instructor.release import autograder

UPLOADS = ROOT / "tests/uploads"
GELU = """
[[stages]]
id = "fused_gelu"
title = "Fused GELU"
points = 15
modules = { triton = "triton/stage2_fused_gelu.py", cutile = "cutile/stage2_fused_gelu.py" }
tolerance.float32 = { atol = 1e-5, rtol = 1e-5 }
cases = [ { M = 3, N = 70, dtypes = ["float32"] }, { M = 4, N = 64, dtypes = ["float32"] } ]
"""
# Two stages, a few small cases: the autograder as built, on a course that grades in seconds.
SMALL_COURSE = vector_add_course('[ { n = 1000, dtypes = ["float32"] }, '
                                 '{ n = 4097, dtypes = ["float32"] } ]', GELU)
SEED = "5"


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("zip") / "autograder.zip"
    autograder(load_course(ROOT / "course.toml"), out)
    return out


@pytest.fixture
def root(tmp_path, autograder_zip):
    """A fake /autograder: the zip unpacked into source/ (with the small course), and an
    empty submission/."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(autograder_zip) as z:
        z.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):  # zipfile keeps no modes on extraction
        (root / "source" / script).chmod(0o755)
    (root / "source/course.toml").write_text(SMALL_COURSE, encoding="utf-8")
    (root / "submission").mkdir()
    return root


def run_autograder(root: Path, path: str | None = None, **env: str) -> tuple[dict, str]:
    """Run the zip's run_autograder as Gradescope does; (results.json, its output)."""
    path = path or f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    run = subprocess.run([str(root / "source/run_autograder")], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "AUTOGRADER_ROOT": str(root),
                                           "GRADE_SEED": SEED, "PATH": path, **env})
    assert run.returncode == 0, run.stdout + run.stderr
    text = (root / "results/results.json").read_text(encoding="utf-8")
    assert str(root) not in text  # no path outside the submission reaches the student
    results = json.loads(text)
    output = results.get("output", "")
    if "late:" not in output and "not graded" not in output:  # a penalty, a result held
        assert results["score"] == round(sum(t["score"] for t in results["tests"]), 2)
    return results, run.stdout + run.stderr


def _solution(path: str) -> str:
    return (ROOT / "solutions" / path).read_text(encoding="utf-8")


def test_a_drag_and_drop_upload_scores_what_grade_scores(root, tmp_path, run_grade):
    files = {"triton/stage1_vector_add.py": _solution("triton/stage1_vector_add.py"),
             "triton/stage2_fused_gelu.py":
                 (ROOT / "tests/faults/triton/stage2_row_mask_only.py").read_text()}
    for path, text in files.items():  # dropped on Gradescope: the files alone, at the top
        (root / "submission" / Path(path).name).write_text(text, encoding="utf-8")
    results, _ = run_autograder(root)

    laid_out = tmp_path / "mine/exercises"  # the same files where the handout has them
    for path, text in files.items():
        (laid_out / path).parent.mkdir(parents=True, exist_ok=True)
        (laid_out / path).write_text(text, encoding="utf-8")
    expected = tmp_path / "expected.json"
    run_grade("--course", str(root / "source/course.toml"), "all", "--submission",
              str(laid_out.parent), "--seed", SEED, "--gradescope", str(expected))
    graded = json.loads(expected.read_text())
    assert [(t["name"], t["score"]) for t in results["tests"]] == \
        [(t["name"], t["score"]) for t in graded["tests"]]
    assert results["score"] == graded["score"] and 10 <= results["score"] < 25
    assert "stage1_vector_add.py: graded as exercises/triton/stage1_vector_add.py (it imports " \
           "triton)" in results["output"]
    assert [t["status"] for t in results["tests"]] == ["passed", "passed", "failed", "passed"]


def test_a_cutile_upload_gets_its_points_on_the_simulator(root):
    (root / "submission/stage1_vector_add.py").write_text(_solution("cutile/stage1_vector_add.py"))
    results, _ = run_autograder(root)  # --backend auto: the track told by the upload
    assert results["extra_data"]["backend"] == "cutile-sim"
    assert results["score"] == 10
    stage2 = [t for t in results["tests"] if "fused_gelu" in t["name"]]
    assert stage2 == [{**stage2[0], "score": 0, "status": "failed"}]
    assert "stage2_fused_gelu.py is not in the submission, so the handout's untouched " \
           "skeleton was graded" in stage2[0]["output"]


ODD = {  # tests/uploads/<name>: what results.json must say
    "syntax_error": ("stage1_vector_add.py has a syntax error at line 14",),
    "neither_track": ("stage2_fused_gelu.py: could be either track's (triton/ or cutile/): it "
                      "imports neither triton nor cuda.tile", "Not graded: not a submission"),
    "both_tracks": ("it imports both triton and cuda.tile",),
    "binary": ("stage1_vector_add.py: not a text file, so its track cannot be told",),
    "misplaced": ("mywork/notes/stage1_vector_add.py: a stage file's name, but neither at the "
                  "submission's top nor in a triton/ or cutile/ folder",),
    "empty": ("Not graded: not a submission: no stage files found", "Submit your stage files"),
}


@pytest.mark.parametrize("name", ODD)
def test_an_odd_upload_still_gets_a_result_that_says_what_is_wrong(root, name):
    shutil.rmtree(root / "submission")
    shutil.copytree(UPLOADS / name, root / "submission")
    results, _ = run_autograder(root)
    assert results["score"] == 0
    text = results["output"] + "".join(t["output"] for t in results["tests"])
    for words in ODD[name]:
        assert words in " ".join(text.split()), (words, text)


def test_a_stage_file_past_the_size_limit_is_named_not_graded(root):
    (root / "submission/stage1_vector_add.py").write_text("import triton\n" + "#" * (300 << 10))
    results, _ = run_autograder(root)
    assert results["score"] == 0 and "stage1_vector_add.py: larger than 256 KiB" in results["output"]


def test_a_grader_that_cannot_start_still_leaves_a_result(root, tmp_path):
    broken = tmp_path / "bin"
    broken.mkdir()
    (broken / "grade").write_text("#!/bin/sh\necho 'ImportError: torch' >&2\nexit 1\n")
    (broken / "grade").chmod(0o755)
    (root / "results").mkdir()
    (root / "results/results.json").write_text('{"score": 99, "tests": []}')  # a stale one
    results, output = run_autograder(root, f"{broken}{os.pathsep}{os.environ['PATH']}")
    assert results["score"] == 0 and results["tests"] == []
    assert results["output"].startswith("Not graded: the autograder failed before it could "
                                        "grade your submission (exit code 1)")
    assert "ImportError: torch" in output  # for the instructor, in Gradescope's stdout


def _stand_ins(folder: Path, python_has_venv: bool) -> Path:
    """python3 and apt-get that log their calls instead of downloading: `-m venv DIR`
    makes DIR/bin/python, a stand-in that logs too."""
    folder.mkdir()
    log = folder / "calls.log"
    python = f"""#!/bin/sh
echo "python3 $*" >> {log}
case "$1" in
  -c) {'exit 0' if python_has_venv else 'exit 1'} ;;
  -m) if [ "$2" = venv ]; then mkdir -p "$3/bin"
        printf '#!/bin/sh\\necho "venv-python $* (in $PWD)" >> {log}\\n' > "$3/bin/python"
        chmod +x "$3/bin/python"; fi ;;
esac
"""
    for name, text in (("python3", python), ("apt-get", f'#!/bin/sh\necho "apt-get $*" >> {log}\n')):
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return log


@pytest.mark.parametrize("python_has_venv", [True, False])
def test_setup_installs_the_course_with_cutile_into_a_venv_of_its_own(root, tmp_path,
                                                                      python_has_venv):
    (root / "source/course.hidden.toml").write_text("seed = 1\n")
    log = _stand_ins(tmp_path / "bin", python_has_venv)
    run = subprocess.run(["bash", str(root / "source/setup.sh")], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "AUTOGRADER_ROOT": str(root),
                                          "PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin"})
    assert run.returncode == 0, run.stdout + run.stderr
    calls = log.read_text().splitlines()
    apt = [c for c in calls if c.startswith("apt-get")]
    # Where Python lacks venv (python3-venv is a package of its own on Ubuntu), apt brings it.
    assert bool(apt) is not python_has_venv
    if apt:
        assert apt[-1].split()[:2] == ["apt-get", "install"] and "python3-venv" in apt[-1]
    assert f"python3 -m venv {root}/venv" in calls
    # The course's own installer, with the cuTile extra, from the venv: never pip by hand
    # (the CUDA build of torch), never --break-system-packages.
    assert calls[-1] == f"venv-python -m grader.install cutile (in {root}/source)"
    assert not [c for c in calls if "-m pip" in c or "pip install" in c
                or "break-system-packages" in c]
    assert oct((root / "source/course.hidden.toml").stat().st_mode & 0o777) == "0o600"


POLICY = """
[policy]
due = 2026-12-18T23:59:00-08:00
max_submissions = 2

[policy.late]
percent_per_day = 10
"""


def _metadata(root: Path, created_at: str, earlier: list[dict], own_due: str = "") -> None:
    """submission_metadata.json as Gradescope writes it beside the upload."""
    user = {"email": "ada@example.edu", "id": 1, "name": "Ada"}
    if own_due:  # an extension Gradescope granted this student
        user["assignment"] = {"due_date": own_due}
    (root / "submission_metadata.json").write_text(json.dumps({
        "id": 7, "created_at": created_at, "submission_method": "upload",
        "assignment": {"due_date": "2026-12-18T23:59:00.000000-08:00", "title": "tiles"},
        "users": [user], "previous_submissions": earlier}), encoding="utf-8")


EARLIER = [{"submission_time": "2026-12-10T10:00:00.000000-08:00", "score": 4.0,
            "results": {"score": 4.0, "output": "the first", "tests": []}},
           {"submission_time": "2026-12-12T10:00:00.000000-08:00", "score": 7.0,
            "results": {"score": 7.0, "output": "the second", "tests": []}}]


@pytest.mark.parametrize("created_at, own_due, percent", [
    ("2026-12-20T05:59:00.000000-08:00", "", 20),  # 30 hours late: two days begun
    ("2026-12-20T05:59:00.000000-08:00", "2026-12-21T23:59:00.000000-08:00", 0),
    ("2026-12-18T23:00:00.000000-08:00", "", 0)])
def test_gradescope_applies_the_late_penalty_from_its_metadata(root, created_at, own_due,
                                                               percent):
    (root / "source/course.toml").write_text(SMALL_COURSE + POLICY, encoding="utf-8")
    (root / "submission/stage1_vector_add.py").write_text(_solution("triton/stage1_vector_add.py"))
    _metadata(root, created_at, EARLIER[:1], own_due)
    results, _ = run_autograder(root)
    earned = sum(t["score"] for t in results["tests"])
    assert earned == 10 and results["score"] == round(earned * (1 - percent / 100), 2)
    late = "Submitted 2 days late: the class's policy takes 20% off, so 8 of the 10 points"
    assert results["output"].startswith(late) == bool(percent), results["output"]


def test_gradescope_holds_a_submission_past_the_limit(root):
    """The third submission where the class counts two: not graded, the second's result
    stands (as `grade batch` holds it)."""
    (root / "source/course.toml").write_text(SMALL_COURSE + POLICY, encoding="utf-8")
    (root / "submission/stage1_vector_add.py").write_text(_solution("triton/stage1_vector_add.py"))
    _metadata(root, "2026-12-13T10:00:00.000000-08:00", EARLIER)
    results, said = run_autograder(root)
    assert results["score"] == 7.0 and results["tests"] == []
    assert results["output"] == ("This is your submission 3, and the class counts at most 2: it "
                                 "was not graded, and the result of submission 2 stands.\n\n"
                                 "the second")
    assert "not graded; the result of submission 2 stands" in said


def test_gradescope_weighs_each_stage_by_its_own_due_date(root):
    """A stage due later ([policy.stage_due]) keeps its points from the class's penalty."""
    stage_due = "\n[policy.stage_due]\nvector_add = 2026-12-22T23:59:00-08:00\n"
    (root / "source/course.toml").write_text(SMALL_COURSE + POLICY + stage_due, encoding="utf-8")
    (root / "submission/stage1_vector_add.py").write_text(_solution("triton/stage1_vector_add.py"))
    _metadata(root, "2026-12-20T05:59:00.000000-08:00", EARLIER[:1])
    results, _ = run_autograder(root)
    assert results["score"] == 10 and "late" not in results["output"].split("\n")[0]
