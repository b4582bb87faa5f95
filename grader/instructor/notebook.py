"""The handout's notebook (tilecourse.ipynb), for Colab and any Jupyter: set up, then one
cell per stage, then the other track's.

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
scorecard is not broken at 80 columns.

Everywhere, the setup cell defines `%grade`, which runs the grader of the notebook's own
environment, whether or not a virtual environment is active in the shell Jupyter started
from: the `grade` of the kernel's Python (its scripts folder, or `python -m grader` where
the package is installed without it), else the course's `.venv`, else one on PATH; where
there is none it says how to install it. Each stage's cell grades the track whose exercises
are started (the scorecard's `backend:` line says which, and how to grade the other); a
cell per track grades every stage of that track. CI executes the notebook on a plain
Jupyter kernel, on a CPU.
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
                  "Fill in the TODOs of each stage's file, then run its cell: `%grade` checks "
                  "your kernel against PyTorch and says what is wrong and where.\n\n"
                  "On Colab, choose a GPU runtime (Runtime > Change runtime type) for speed "
                  "grading; without one, correctness is graded on the CPU. The setup cell "
                  "keeps the course in your Google Drive (`MyDrive/tilecourse`), so your "
                  "work survives when Colab recycles the runtime: run it first in every "
                  "session. Open a file by double-clicking it in the Files pane on the left "
                  "(under `drive/MyDrive/tilecourse/exercises`); Colab saves it as you type.\n\n"
                  "In Jupyter on your own machine, open this notebook from the course folder "
                  "and run the setup cell first too: `%grade` uses the grader installed for "
                  "this notebook's Python (or the course's `.venv`), or says how to install it."),
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
              + _FIND_GRADE +
              "%grade doctor"),
    ]
    for stage in course.stages:
        files = " or ".join(f"`exercises/{stage.modules[t]}`" for t in TRACKS if t in stage.modules)
        cells.append(_markdown(f"## Stage {stage.number}: {stage.title}\n\n"
                               f"Edit {files}, then run the cell below. It grades the track "
                               "you started; with both started, the scorecard's `backend:` "
                               "line says which it graded, and how to grade the other."))
        cells.append(_code(f"%grade {stage.number}"))
    one = course.stages[0].number  # the example of grading one stage of a track
    for track in TRACKS.values():  # a track chosen, not the one more started
        cells.append(_markdown(f"## Every stage of the {track.title} track\n\n"
                               "The cells above grade the track you started. This one grades "
                               f"every stage of the {track.title} track "
                               f"(`exercises/{track.name}/`); `%grade {one} --track {track.name}` "
                               "grades one stage of it."))
        cells.append(_code(f"%grade all --track {track.name}"))
    for number, cell in enumerate(cells):
        cell["id"] = f"cell-{number}"
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"},
                         "language_info": {"name": "python"},
                         "accelerator": "GPU", "colab": {"provenance": []}}}


# The `%grade` magic: the grader of this notebook's environment, found again at each call
# (so that the install in the Colab branch above, or one made later, is found), or how to
# get it. Plain Python and IPython's API only: the kernel may have no grader at all.
_FIND_GRADE = """\
import importlib.metadata, shlex, shutil, sysconfig
from IPython.core.magic import register_line_magic

def grade_command():
    \"\"\"The grader of this notebook: its Python's, else the course's .venv's, else PATH's.\"\"\"
    here = os.path.abspath('.')  # the course: the nearest folder with a course.toml
    while not os.path.exists(os.path.join(here, 'course.toml')) and os.path.dirname(here) != here:
        here = os.path.dirname(here)
    for folder in (sysconfig.get_path('scripts'), os.path.dirname(sys.executable),
                   os.path.join(here, '.venv', 'bin'), os.path.join(here, '.venv', 'Scripts')):
        found = shutil.which('grade', path=folder)
        if found:
            return shlex.quote(os.path.abspath(found))
    try:  # installed without its script (a user site, say): the module runs the same
        importlib.metadata.distribution('tilecourse')
        return f'{shlex.quote(sys.executable)} -m grader'
    except importlib.metadata.PackageNotFoundError:
        found = shutil.which('grade')
        return shlex.quote(found) if found else None

@register_line_magic
def grade(line):
    \"\"\"%grade ARGS: `grade ARGS` with the grader of this notebook's environment.\"\"\"
    command = grade_command()
    if command is None:
        print(f'grade is not installed for this notebook\\'s Python ({sys.executable}), nor in '
              'the course\\'s .venv, nor on PATH. Install it for this notebook: run '
              f'!{shlex.quote(sys.executable)} -m grader.install  in a cell, in the course '
              'folder (add  cutile  for the cuTile track); or choose the Jupyter kernel of the '
              'environment where you installed it.')
        return
    get_ipython().system(f'{command} {line}')

"""


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(text: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": text}
