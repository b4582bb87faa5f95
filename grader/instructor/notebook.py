"""The handout's notebook (tilecourse.ipynb), for Colab: set up, then one cell per stage.

Written by `grade release` from the course, so a new stage is in it without an edit. The
student edits the exercise files themselves (Colab's file browser opens them in an
editor); the notebook only points at each file and grades it, so running a cell never
overwrites their work. Outside Colab the setup cell does nothing but `grade doctor`, which
is how CI executes the notebook on a CPU (tests/test_instructor.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.course import TRACKS, Course

NAME = "tilecourse.ipynb"


def write_notebook(course: Course, out: Path) -> Path:
    path = out / NAME
    path.write_text(json.dumps(notebook(course), indent=1) + "\n", encoding="utf-8")
    return path


def notebook(course: Course) -> dict:
    fetch = (f"        !git clone {course.handout} tilecourse\n" if course.handout else
             "        raise SystemExit('Upload the handout folder (or clone it) first.')\n")
    cells = [
        _markdown(f"# {course.title}\n\n"
                  "Fill in the TODOs of each stage's file, then run its cell: `grade` checks "
                  "your kernel against PyTorch and says what is wrong and where.\n\n"
                  "On Colab, choose a GPU runtime (Runtime > Change runtime type) for speed "
                  "grading; without one, correctness is graded on the CPU. Open a file by "
                  "double-clicking it in the Files pane on the left; Colab saves it as you "
                  "type."),
        _code("# Setup: on Colab, fetch the handout and install the grader (once per session).\n"
              "import os, sys\n"
              "if 'google.colab' in sys.modules and not os.path.exists('course.toml'):\n"
              "    if not os.path.exists('tilecourse'):\n"
              + fetch +
              "    %cd tilecourse\n"
              "    !pip install -q -e .\n"
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
