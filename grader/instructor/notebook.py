"""The handout's notebook (tilecourse.ipynb), for Colab: set up, then one cell per stage.

Written by `grade release` from the course, so a new stage is in it without an edit; the
course's own copy is exercises/tilecourse.ipynb (kept in step with this module by
tests/instructor/test_instructor.py). The student edits the exercise files themselves (Colab's file
browser opens them in an editor); the notebook only points at each file and grades it, so
running a cell never overwrites their work.

On Colab the setup cell keeps the course on the student's Google Drive, where a recycled
runtime does not lose it: the first time it clones the handout there (or unpacks an
uploaded handout zip, for a course without a handout address); every later time it finds
it. It installs the grader with PyTorch's build for the runtime and the cuTile extra (the
simulator runs the cuTile track where the GPU cannot), and widens the output so that the
scorecard is not broken at 80 columns. Outside Colab it does nothing but `grade doctor`,
which is how CI executes the notebook on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.course import Course
from grader.tracks import TRACKS

NAME = "tilecourse.ipynb"


def write_notebook(course: Course, out: Path) -> Path:
    path = out / NAME
    path.write_text(json.dumps(notebook(course), indent=1) + "\n", encoding="utf-8")
    return path


def notebook(course: Course) -> dict:
    fetch = (f"        !git clone -q {course.handout} \"$home\"\n" if course.handout else
             "        from google.colab import files\n"
             "        print('Upload the handout zip your instructor gave you.')\n"
             "        for name in files.upload():\n"
             "            !unzip -q -o \"$name\" -d \"$home\"\n")
    cells = [
        _markdown(f"# {course.title}\n\n"
                  "Fill in the TODOs of each stage's file, then run its cell: `grade` checks "
                  "your kernel against PyTorch and says what is wrong and where.\n\n"
                  "On Colab, choose a GPU runtime (Runtime > Change runtime type) for speed "
                  "grading; without one, correctness is graded on the CPU. The setup cell "
                  "keeps the course in your Google Drive (`MyDrive/tilecourse`), so your "
                  "work survives when Colab recycles the runtime: run it first in every "
                  "session. Open a file by double-clicking it in the Files pane on the left "
                  "(under `drive/MyDrive/tilecourse/exercises`); Colab saves it as you type."),
        _code("# Setup: on Colab, the course on your Drive and the grader installed (each session).\n"
              "import os, sys\n"
              "os.environ.setdefault('COLUMNS', '110')  # the scorecard's width in cell output\n"
              "if 'google.colab' in sys.modules and not os.path.exists('course.toml'):\n"
              "    from google.colab import drive\n"
              "    drive.mount('/content/drive')\n"
              "    home = '/content/drive/MyDrive/tilecourse'\n"
              "    def course_in(top):  # the handout folder, or the one a zip held\n"
              "        inner = [os.path.join(top, d) for d in sorted(os.listdir(top))] if os.path.isdir(top) else []\n"
              "        return next((d for d in [top, *inner] if os.path.exists(os.path.join(d, 'course.toml'))), None)\n"
              "    if course_in(home) is None:\n"
              + fetch +
              "    %cd {course_in(home)}\n"
              "    !python -m grader.install cutile\n"
              "!grade doctor"),
    ]
    for stage in course.stages:
        files = " or ".join(f"`exercises/{stage.modules[t]}`" for t in TRACKS if t in stage.modules)
        cells.append(_markdown(f"## Stage {stage.number}: {stage.title}\n\n"
                               f"Edit {files}, then run the cell below."))
        cells.append(_code(f"!grade {stage.number}"))
    for number, cell in enumerate(cells):
        cell["id"] = f"cell-{number}"
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"},
                         "language_info": {"name": "python"},
                         "accelerator": "GPU", "colab": {"provenance": []}}}


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(text: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": text}
