"""The handout's notebook (grader.instructor.notebook): executed as a student runs it on a
plain Jupyter kernel, outside Colab, with no virtual environment active in the shell, on
both tracks; its Colab branch checked as code; its `%grade` when the kernel has no grader."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import re
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import ROOT

from grader.instructor.notebook import notebook


def _release(run_grade, course, out: Path) -> None:
    assert run_grade("--course", str(course.path), "release", str(out))[0] == 0


def _execute(path: Path, folder: Path, monkeypatch) -> list:
    """The notebook's code cells once executed top to bottom in `folder` by a plain Python
    kernel of this environment, from a shell where no virtual environment is active: PATH
    holds no folder with a `grade` in it."""
    import nbclient
    import nbformat

    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    bare = [d for d in os.environ["PATH"].split(os.pathsep)
            if d and not shutil.which("grade", path=d)]
    monkeypatch.setenv("PATH", os.pathsep.join(bare))
    assert shutil.which("grade") is None
    for name in [k for k in os.environ if k.startswith("PYTEST_")]:
        monkeypatch.delenv(name)
    nbclient.NotebookClient(book, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}}).execute()
    return [c for c in book.cells if c.cell_type == "code"]


def _text(cell) -> str:
    """What a cell printed, its colours dropped and its lines, wrapped at the notebook's
    width, joined again."""
    text = "".join(o.get("text", "") for o in cell.outputs)
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())


@pytest.mark.slow
def test_the_notebook_grades_both_tracks_and_says_which_it_graded(tmp_path, run_grade, course,
                                                                  monkeypatch):
    """The notebook as a student runs it in Jupyter on a CPU, top to bottom, stage 1 started
    on both tracks (the references copied in): the setup cell (no clone outside Colab) finds
    the grader of the kernel's own Python; stage 1's cell grades one track and says so, with
    the option that grades the other; the later stages' cells say NOT STARTED; the track
    cells grade each, Triton on its interpreter and cuTile on the simulator. The course's
    own copy of the notebook (the one release writes, below), run from exercises/ where it
    lies."""
    out = tmp_path / "handout"
    _release(run_grade, course, out)
    for track in ("triton", "cutile"):
        shutil.copy(ROOT / "solutions" / track / "stage1_vector_add.py",
                    out / "exercises" / track / "stage1_vector_add.py")
    shutil.copy(ROOT / "exercises/tilecourse.ipynb", out / "exercises/tilecourse.ipynb")
    code = _execute(out / "exercises/tilecourse.ipynb", out / "exercises", monkeypatch)
    assert len(code) == 1 + len(course.stages) + 2
    for cell in code:
        assert "command not found" not in _text(cell) and "Traceback" not in _text(cell)
        assert "is not installed for this notebook" not in _text(cell)
    assert "backend" in _text(code[0]).lower()  # grade doctor ran
    for stage, cell in zip(course.stages, code[1:]):
        assert cell.source == f"%grade {stage.number}"
        assert f"stage{stage.number} {stage.id}" in _text(cell)
        assert stage.number == 1 or "NOT STARTED" in _text(cell)
    assert code[-2].source == "%grade all --track triton"
    assert code[-1].source == "%grade all --track cutile"
    stage1, triton, cutile = _text(code[1]), _text(code[-2]), _text(code[-1])
    assert "PASS" in stage1 and "triton-interpret" in stage1
    assert "also started, not graded: cutile: vector_add (`--track cutile` grades it)" in stage1
    assert "stage1 vector_add" in triton and "triton-interpret" in triton
    assert "stage1 vector_add" in cutile and "cutile-sim" in cutile
    total = sum(stage.points for stage in course.stages)
    for text in (triton, cutile):  # stage 1 passes, the others are not started
        assert f"total: {course.stages[0].points:g}/{total:g} points" in text
        assert "NOT STARTED" in text and "Traceback" not in text


def test_the_courses_notebook_is_the_one_release_writes(course):
    """exercises/tilecourse.ipynb is in the repository for students who start from it; it
    must be what `grade release` writes, so that a new stage is in it too."""
    kept = json.loads((ROOT / "exercises/tilecourse.ipynb").read_text(encoding="utf-8"))
    assert kept == notebook(course), "regenerate it: grader.instructor.notebook.write_notebook"


def test_the_notebooks_example_of_one_stage_is_a_stage_of_the_course(course):
    later = dataclasses.replace(course, stages=course.stages[1:])  # stage 1 taken out
    text = "".join(c["source"] for c in notebook(later)["cells"] if c["cell_type"] == "markdown")
    number = later.stages[0].number
    assert f"`%grade {number} --track triton`" in text and "%grade 1 " not in text


def test_the_notebooks_colab_setup_is_valid_ipython_and_keeps_work_on_drive(course):
    """The setup cell's Colab branch never runs in CI: it must at least be valid code once
    IPython has turned its ! and % lines into calls, and keep the course on Drive."""
    from IPython.core.inputtransformer2 import TransformerManager

    setup = notebook(course)["cells"][1]["source"]
    compile(TransformerManager().transform_cell(setup), "setup cell", "exec")
    assert "drive.mount" in setup and "MyDrive/tilecourse" in setup
    assert "grader.install cutile" in setup  # the simulator for the cuTile track
    assert "Upload the handout" in setup or "git clone" in setup


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """An IPython shell in an empty folder whose Python has no grader: no `grade` in its
    scripts folder or on PATH, no tilecourse installed."""
    from IPython.core.interactiveshell import InteractiveShell

    def no_distribution(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.chdir(tmp_path)
    # IPython's `!` and `system()` start $SHELL, else the `sh` on PATH: with PATH emptied
    # below, a machine whose environment sets no SHELL (CI's) would find no shell at all.
    monkeypatch.setenv("SHELL", shutil.which("sh") or "/bin/sh")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(sysconfig, "get_path", lambda *a, **k: str(tmp_path / "bin"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python3"))
    monkeypatch.setattr(importlib.metadata, "distribution", no_distribution)
    yield InteractiveShell.instance()
    InteractiveShell.clear_instance()


def test_the_notebook_says_how_to_install_grade_where_its_python_has_none(shell, course,
                                                                          capfd):
    shell.run_cell(notebook(course)["cells"][1]["source"])
    said = capfd.readouterr().out
    assert "grade is not installed for this notebook's Python" in said
    assert f"!{sys.executable} -m grader.install" in said and "cutile" in said


def test_the_notebook_finds_the_courses_venv_from_a_folder_below(shell, course, tmp_path, capfd):
    """A kernel without the grader, opened in exercises/ of a course whose .venv has it."""
    (tmp_path / "course.toml").write_text("")
    script = tmp_path / ".venv" / "bin" / "grade"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\necho \"the course's grade: $*\"\n")
    script.chmod(0o755)
    (tmp_path / "exercises").mkdir()
    os.chdir(tmp_path / "exercises")
    shell.run_cell(notebook(course)["cells"][1]["source"])
    shell.run_cell("%grade 3 --track cutile")
    said = capfd.readouterr().out
    assert "the course's grade: doctor" in said and "the course's grade: 3 --track cutile" in said
    assert "is not installed" not in said
