"""The Gradescope autograder grades an upload into a valid results.json, and `grade` marks
a failing stage at the student's line under GitHub Actions. The CI files a student's
repository runs are tested in test_ci_templates.py."""

import json
import os
import shutil
import subprocess
import stat
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import COURSE_PARTS, copy_course


ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"


HIDDEN = 'seed = 99\n[[stages]]\nid = "vector_add"\ncases = [ { n = 2049, dtypes = ["float32"] } ]\n'


@pytest.fixture
def autograder_zip(tmp_path, run_grade):
    """`grade autograder` on a copy of the course with hidden cases: (zip path, output)."""
    course_file = copy_course(tmp_path / "course", (*COURSE_PARTS, "templates"))
    (course_file.parent / "course.hidden.toml").write_text(HIDDEN)
    archive = tmp_path / "autograder.zip"
    code, stdout, _ = run_grade("--course", str(course_file), "autograder", str(archive))
    assert code == 0, stdout
    return archive, stdout


def test_the_autograder_zip_holds_the_handout_the_hidden_cases_and_the_scripts(
        autograder_zip, run_grade, tmp_path):
    archive, stdout = autograder_zip
    assert "with the hidden cases" in " ".join(stdout.split())  # wrapped at any word
    with zipfile.ZipFile(archive) as z:
        infos = {i.filename: i for i in z.infolist()}
        assert z.read("course.hidden.toml").decode() == HIDDEN
        assert z.read("run_autograder") == (TEMPLATES / "gradescope/run_autograder").read_bytes()
    for script in ("setup.sh", "run_autograder"):  # at the top, where Gradescope looks
        assert stat.S_IMODE(infos[script].external_attr >> 16) == 0o755, script
    for needed in ("course.toml", "pyproject.toml", "grader/cli/__init__.py",
                   "exercises/triton/stage1_vector_add.py", "exercises/cutile/stage5_flash_attention.py"):
        assert needed in infos, needed
    assert not [n for n in infos if n.split("/")[0] in ("solutions", "tests", "scripts", "templates")]
    assert not [n for n in infos if "__pycache__" in n or n.endswith(".pyc")]
    # Nothing a user wrote is replaced without --force.
    before = archive.read_bytes()
    code, _, err = run_grade("--course", str(tmp_path / "course/course.toml"), "autograder",
                             str(archive))
    assert code == 2 and "--force" in err and archive.read_bytes() == before


def test_gradescope_autograder_grades_an_upload(tmp_path, course, autograder_zip):
    root = tmp_path / "autograder"
    # The autograder zip, unpacked where Gradescope puts it.
    with zipfile.ZipFile(autograder_zip[0]) as z:
        z.extractall(root / "source")
    # The student's upload: stage 1 done, nothing else.
    (root / "submission/triton").mkdir(parents=True)
    shutil.copy(ROOT / "solutions/triton/stage1_vector_add.py", root / "submission/triton/")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "GRADE_BACKEND": "triton-interpret",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(["bash", str(root / "source/run_autograder")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads((root / "results/results.json").read_text())
    assert results["score"] == course.select("vector_add").points
    names = [t["name"] for t in results["tests"]]
    hidden = [t for t in results["tests"] if t["visibility"] == "after_published"]
    assert len(hidden) == 1 and hidden[0]["status"] == "passed" and "2049" not in json.dumps(hidden)
    assert any("softmax" in n for n in names)  # not started stages are listed, with 0 points
    assert json.loads((root / "results/tilecourse.json").read_text())["stages"][0]["status"] == "PASS"


def test_github_actions_gets_an_annotation_per_failing_stage_at_the_students_line(
        tmp_path, run_grade, monkeypatch):
    submission = tmp_path / "exercises/triton"
    submission.mkdir(parents=True)
    source = (ROOT / "solutions/triton/stage1_vector_add.py").read_text().splitlines()
    source.append("def broken(:")  # a syntax error on the file's last line
    (submission / "stage1_vector_add.py").write_text("\n".join(source) + "\n")
    shutil.copy(ROOT / "exercises/triton/stage3_softmax.py", submission)
    monkeypatch.chdir(tmp_path)  # the repository's checkout, where the job runs
    args = ("--course", str(ROOT / "course.toml"), "1", "3", "--submission", str(tmp_path),
            "--backend", "triton-interpret")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    _, stdout, _ = run_grade(*args)
    assert "::error" not in stdout  # only where GitHub Actions runs
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, stdout, _ = run_grade(*args)
    found = [line for line in stdout.splitlines() if line.startswith("::")]
    assert code == 1 and len(found) == 1  # stage 3 is NOT STARTED: no annotation
    assert found[0].startswith(f"::error file=exercises/triton/stage1_vector_add.py,"
                               f"line={len(source)},title=stage1 vector_add%3A ERROR::")


def test_annotations_escape_what_github_would_read_as_commands():
    from grader.report.annotations import annotations
    from grader.results import Report, StageResult, Status

    stage = StageResult(1, "vector_add", "t", "triton-interpret", "exercises/triton/a,b.py", 10,
                        Status.ERROR, message="ValueError (at a,b.py, line 12: x): 100% off\nnext")
    report = Report("c", "exercises", "triton-interpret", "", {}, "", stages=[stage])
    assert annotations(report) == [
        "::error file=exercises/triton/a%2Cb.py,line=12,title=stage1 vector_add%3A ERROR::"
        "ValueError (at a,b.py, line 12: x): 100%25 off"]


@pytest.mark.parametrize("said, line", [
    ("read outside a tensor, as the watch saw:\n┆ line 28 (`x = tl.load(x_ptr + offsets)`): "
     "reads 255 elements past the end of `x`", 28),
    ("the kernel launched at line 41 of stage1_vector_add.py has no grid", 41),
    ("stage1_vector_add.py has a syntax error at line 7", 7),
    ("1 of 1 elements mismatch (100%)", None)])
def test_an_annotation_is_placed_at_the_line_a_finding_names(said, line):
    """A wrong-result stage's ::error named the file but not the line its finding names."""
    from grader.report.annotations import annotations
    from grader.results import CaseResult, Report, StageResult, Status

    case = CaseResult("n=1000-float32", "float32", {"n": 1000}, 0, False, said)
    stage = StageResult(1, "vector_add", "t", "triton-interpret",
                        "exercises/triton/stage1_vector_add.py", 10, Status.FAIL, cases=[case])
    [found] = annotations(Report("c", "exercises", "triton-interpret", "", {}, "", stages=[stage]))
    assert (f",line={line}," in found) if line else ",line=" not in found, found
