"""What a student reads first: the scorecard's last lines, usage errors, a stage file in the
wrong folder, PyTorch called inside a cuTile kernel on the simulator."""

import io
import json
from types import SimpleNamespace

import pytest
from conftest import ROOT, broken, failure_text
from rich.console import Console

from grader.intake import misplaced
from grader.quoting import is_quoted
from grader.results import Report, StageResult, Status
from grader.report.scorecard import render

MACHINE = {"python": "3.11.7", "torch": "2.13.0+cpu", "triton": "3.9.0", "gpu": None}


def _scorecard(verbose: bool) -> str:
    stage = StageResult(1, "vector_add", "Vector add", "triton-interpret",
                        "exercises/triton/stage1_vector_add.py", 10, status=Status.PASS,
                        points=10)
    stage.sandbox = [SimpleNamespace(name="private file system", in_force=True, detail=""),
                     SimpleNamespace(name="no network", in_force=False, detail="no namespace")]
    report = Report("tilecourse", "exercises", "triton-interpret", "no usable GPU", MACHINE,
                    "2026-01-01T00:00:00+00:00", seed=4242, seconds=3.5, stages=[stage])
    out = io.StringIO()
    render(report, Console(file=out, width=200, highlight=False), verbose)
    return out.getvalue()


def test_the_scorecard_leaves_versions_and_the_sandbox_to_verbose():
    plain, verbose = _scorecard(False), _scorecard(True)
    for text in (plain, verbose):
        assert "backend: triton-interpret (no usable GPU)" in text
        assert "--seed 4242 reproduces the inputs" in text
    assert "sandbox:" not in plain and "torch 2.13.0+cpu" not in plain
    # the footer, then the total: the last line is always the grader's own
    *_, footer, last = plain.rstrip().splitlines()
    assert footer.endswith("(--seed 4242 reproduces the inputs)")
    assert last == "total: 10/10 points, PASS"
    assert "torch 2.13.0+cpu" in verbose and "no GPU" in verbose
    assert "sandbox: in force: private file system; NOT in force: no network (no namespace)" \
        in verbose


# --- usage errors ------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["--json"], "--json needs a file path; for example `grade 1 --json results.json`."),
    (["3", "--json"], "--json needs a file path; for example `grade 3 --json results.json`."),
    (["all", "--seed", "7", "--json"],
     "--json needs a file path; for example `grade all --json results.json`."),
    (["--seed"], "--seed needs a number; for example `grade 1 --seed 1234`."),
    (["--submission"], "--submission needs a folder or a file; for example `grade 1 --submission my_work`."),
    (["--course"], "--course needs a file path; for example `grade --course course.toml 1`."),
])
def test_an_option_without_its_value_says_what_it_takes(run_grade, args, message):
    code, out, err = run_grade(*args)
    assert code == 2
    assert message in err
    assert "grade --json 1" not in err and "requires an argument" not in err


@pytest.mark.parametrize("args", [["--backend", "cuda", "1"], ["1", "--frobnicate"],
                                  ["--seed", "x", "2"]])
def test_a_bad_option_of_a_stage_shows_grades_own_usage(run_grade, course, args):
    code, out, err = run_grade("--course", str(course.path), *args)
    assert code == 2
    assert "Usage: grade [--course PATH] STAGE... | all | list" in err
    assert "Try 'grade --help' for help." in err
    assert "grade stage" not in err and "SELECTORS" not in err


# --- a stage file in the wrong folder ----------------------------------------------------


def test_a_flat_upload_is_graded_where_each_file_goes(run_grade, course, tmp_path):
    """Gradescope uploads arrive flat: stage files at the folder's root, each graded on the
    track its imports tell (grader.intake.upload); a stage not uploaded is NOT STARTED."""
    upload = tmp_path / "submission"
    upload.mkdir()
    (upload / "stage1_vector_add.py").write_text(
        (ROOT / "solutions/triton/stage1_vector_add.py").read_text())
    out = tmp_path / "r.json"
    code, stdout, _ = run_grade("--course", str(course.path), "1", "2", "--backend",
                                "triton-interpret", f"--submission={upload}", "--json", str(out))
    stages = json.loads(out.read_text())["stages"]
    assert code == 1
    assert [s["status"] for s in stages] == ["PASS", "NOT STARTED"]
    assert stages[0]["module"] == "exercises/triton/stage1_vector_add.py"
    assert "stage1_vector_add.py: graded as exercises/triton/stage1_vector_add.py (it imports " \
           "triton)" in " ".join(stdout.split())
    assert stages[1]["message"] == ("stage2_fused_gelu.py is not in the submission, so the "
                                    "handout's untouched skeleton was graded: fill in its "
                                    "TODOs and submit it")
    assert str(tmp_path) not in out.read_text() + stdout.replace(f"wrote {out}", "")


def test_a_misplaced_file_is_told_the_folder_in_use(tmp_path):
    """Where the course's own exercises/ (or a folder a tool lays out) misses a stage file
    that sits one folder off."""
    # The upload already has a track folder: the file goes there, not into a new exercises/.
    (tmp_path / "up" / "triton").mkdir(parents=True)
    (tmp_path / "up" / "stage3_softmax.py").write_text("")
    assert misplaced(tmp_path / "up" / "triton" / "stage3_softmax.py") == \
        "stage3_softmax.py is at the folder's root; move it to triton/stage3_softmax.py"
    # The course's own exercises/: a file left directly in it.
    (tmp_path / "course" / "exercises" / "triton").mkdir(parents=True)
    (tmp_path / "course" / "exercises" / "stage3_softmax.py").write_text("")
    assert misplaced(tmp_path / "course" / "exercises" / "triton" / "stage3_softmax.py") == \
        "stage3_softmax.py is in exercises/; move it to exercises/triton/stage3_softmax.py"
    assert misplaced(tmp_path / "course" / "exercises" / "cutile" / "stage4_matmul.py") is None


# --- PyTorch inside a cuTile kernel ------------------------------------------------------


@pytest.mark.parametrize("call", ["torch.exp(x_tile) * 0 + x_tile + y_tile",
                                  "torch.add(x_tile, y_tile)"])
def test_pytorch_inside_a_kernel_on_the_simulator_is_refused_at_its_line(grade_source, call):
    """The grader reads every kernel body before it builds any: PyTorch in a kernel body is
    refused at the student's line, before the simulator (or cuTile's front end) sees it."""
    source = broken("cutile", "stage1_vector_add.py", "tile=x_tile + y_tile", f"tile={call}")
    line = next(n for n, text in enumerate(source.splitlines(), 1) if call in text)
    result = grade_source("vector_add", source, backend="cutile-sim")
    assert result.status is Status.FAIL and result.cases_passed == 0
    for case in result.cases:
        assert case.summary == "its kernels are refused before they run:", case.summary
        said = " ".join(text for text in case.details if is_quoted(text))
        assert f"line {line} of vector_add_submission.py: `torch` cannot be used in a kernel" \
            in said, said
