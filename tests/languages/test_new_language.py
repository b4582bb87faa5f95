"""A new tile language touches only its own files: its package and pyproject.toml.

A copy of the grader gets a third track, "toy": a package grader/languages/toy/ (its record,
one module for all its parts, its spellings), and in pyproject.toml its entry point of
`tilecourse.tracks`, its extra and its package; nothing else of the grader changes. The toy language is a pure-Python module, toytile, that stands for what the
extra would install. A temporary course teaches stage 1 (vector add) in all three languages.
`grade skeletons` makes the toy exercise, the untouched exercise grades NOT STARTED, and the
toy solution grades PASS, every case, on the toy language's CPU backend.
"""

import filecmp
import json
import os
import shutil
import subprocess
import sys
import textwrap

from conftest import ROOT

# The language: kernels are Python functions run once per program, on torch tensors.
TOYTILE = '''
"""toytile: a tiny tile language over torch, run on the CPU one program at a time."""

import torch

_program = [0]


class Kernel:
    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__

    def run(self, grid, args):  # a launch (the grader's hook replaces this method)
        run_programs(grid, self.fn, args)


def kernel(fn):
    return Kernel(fn)


def run_programs(grid, fn, args):
    count = 1
    for size in grid:
        count *= size
    for program in range(count):
        _program[0] = program
        fn(*args)


def launch(grid, kernel, args):
    kernel.run(tuple(grid), tuple(args))


def program_id():
    return _program[0]


def arange(n):
    return torch.arange(n)


def cdiv(a, b):
    return (a + b - 1) // b


def load(array, offsets, mask):
    flat = array.reshape(-1)
    safe = torch.where(mask, offsets, 0)
    return torch.where(mask, flat[safe], torch.zeros((), dtype=flat.dtype))


def store(array, offsets, value, mask):
    flat = array.reshape(-1)
    flat[offsets[mask]] = value[mask].to(flat.dtype)
'''

PARTS = '''
"""The toy language's code: one module for every part it has (grader.tracks.contract).
The toy language has no GPU backend (its record names no gpu part) and so no compiler
whose front end would check a launch, and no dtypes of its own: no front_end, dtype_name
or dtype here, the contracts' defaults answer."""

from __future__ import annotations

import importlib.util
import inspect

from grader.languages.toy.spellings import TOY as spellings  # noqa: F401


# --- the backends: the grading process ------------------------------------------------------

def probe(device):
    if importlib.util.find_spec("toytile") is None:
        return "the toy language is not installed: `pip install tilecourse[toy]`"
    return None


# --- a worker's bootstrap -------------------------------------------------------------------

def bind(role, device):
    try:
        import toytile  # noqa: F401
    except ImportError:
        pass  # the submission's own import then says what is missing


# --- the recorder: the child ----------------------------------------------------------------

def hook_launches():
    import toytile

    from grader.sandbox import launches

    original = toytile.Kernel.run

    def run(kernel, grid, args):
        session = launches.current()
        if session is None:
            return original(kernel, grid, args)
        session.propose("toy", kernel, grid, args, {})
        return None

    toytile.Kernel.run = run


# --- the reader: a kernel file --------------------------------------------------------------

def decorate(function, spelling, options, node, interpreted):
    import toytile

    return toytile.kernel(function)


def parameters(kernel):
    return list(inspect.signature(kernel.fn).parameters)


def optional(kernel):
    return {n for n, p in inspect.signature(kernel.fn).parameters.items()
            if p.default is not p.empty}


# --- the CPU runner -------------------------------------------------------------------------

def launch(step, kernel, args, kwargs):
    import toytile

    toytile.run_programs(step.grid, kernel.fn, args)


def runtime(filename):
    return "toy language" if filename.endswith("toytile.py") else None
'''


SPELLINGS = '''
"""What a toy kernel file may spell where the replay reads it."""

from grader.replay.spellings import Spellings

TOY = Spellings(
    track="toy", package="toytile", api="tt.*",
    modules=frozenset({"toytile"}),
    steps={},
    builtins=frozenset({"range", "min", "max", "int"}),
    host_only=frozenset({"toytile.launch", "toytile.kernel", "toytile.Kernel",
                         "toytile.run_programs"}),
    decorators={"toytile.kernel": "kernel"},
    annotations=frozenset({"int"}),
    constant_types=frozenset({"int"}),
    homes=("toytile",),
    shown="@tt.kernel",
    short={"toytile.": "tt."},
)
'''

RECORD = '''
"""The toy track's record (the `toy` entry point of `tilecourse.tracks`)."""

import re

from grader.tracks.record import Parts, Track, Words

TOY = Track(
    name="toy", title="Toy", module="toytile",
    imports=re.compile(r"^\\s*(import|from)\\s+toytile\\b", re.M),
    decorator="@tt.kernel",
    words=Words("program", "programs", "offsets", "tt.program_id",
                "give this tt.load a mask that keeps every lane inside the tensor",
                "give the tt.store a mask that keeps every lane inside the tensor", "mask"),
    nan_fix="give that `tt.load` a mask: masked lanes read 0",
    extra="toy", gpu_backend="toy-gpu", cpu_backend="toy-cpu",
    parts=Parts(backends="grader.languages.toy.parts", worker="grader.languages.toy.parts",
                recorder="grader.languages.toy.parts", reader="grader.languages.toy.parts",
                cpu="grader.languages.toy.parts"),
    gpu_summary="the toy language has no GPU backend",
    cpu_summary="toytile kernels run as Python on the CPU, one program at a time",
    cpu_runner="toytile",
)
'''

SOLUTION = '''
"""Stage 1 in the toy language: one program per tile of BLOCK elements."""

import torch
import toytile as tt

__all__ = ["vector_add"]


@tt.kernel
def vector_add_kernel(x, y, out, n, BLOCK: int):
    # Step 1: The offsets of this program's tile, and the mask of those inside the vector.
    # >>> solution
    offsets = tt.program_id() * BLOCK + tt.arange(BLOCK)
    mask = offsets < n
    # --- exercise
    # offsets = ...
    # mask = ...
    # <<<
    tt.store(out, offsets, tt.load(x, offsets, mask) + tt.load(y, offsets, mask), mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    tt.launch((tt.cdiv(n, 64),), vector_add_kernel, (x, y, out, n, 64))
    return out
'''


def grade(package, site, course, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(site)])}
    return subprocess.run([sys.executable, "-m", "grader", "--course", str(course), *args],
                          cwd=package, env=env, capture_output=True, text=True, timeout=600)


def changed(ours, copy):
    """The files below `copy` that differ from (or are not in) `ours`, relative paths."""
    found = []
    for folder, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            theirs = os.path.join(folder, name)
            path = os.path.relpath(theirs, copy)
            mine = ours / path
            if not mine.exists() or not filecmp.cmp(mine, theirs, shallow=False):
                found.append(path)
    return sorted(found)


def test_a_third_language_is_a_record_a_wing_and_an_extra(tmp_path):
    package = tmp_path / "package"
    shutil.copytree(ROOT / "grader", package / "grader",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", package / "pyproject.toml")

    toy = package / "grader/languages/toy"
    toy.mkdir()
    (toy / "__init__.py").write_text('"""The toy track: its record and its parts."""\n')
    (toy / "track.py").write_text(RECORD.lstrip())
    (toy / "parts.py").write_text(PARTS.lstrip())
    (toy / "spellings.py").write_text(SPELLINGS.lstrip())
    project = package / "pyproject.toml"
    extras = "[project.optional-dependencies]\n"
    points = '[project.entry-points."tilecourse.tracks"]\n'
    packaged = '"grader.languages.triton", '
    text = project.read_text()
    assert extras in text and points in text and packaged in text
    project.write_text(text.replace(extras, extras + "toy = []\n")
                       .replace(points, points + 'toy = "grader.languages.toy.track:TOY"\n')
                       .replace(packaged, packaged + '"grader.languages.toy", '))

    site = tmp_path / "site"  # what the extra would install
    site.mkdir()
    (site / "toytile.py").write_text(TOYTILE.lstrip())

    course = tmp_path / "course"
    ours = (ROOT / "course.toml").read_text()
    head = ours[: ours.index("\n[[stages]]\n")]
    first = ours.index("\n[[stages]]\n")
    following = ours.find("\n[[stages]]\n", first + 1)
    stage = ours[first:following if following > 0 else None]
    modules = 'modules = { triton = "triton/stage1_vector_add.py", ' \
              'cutile = "cutile/stage1_vector_add.py", toy = "toy/stage1_vector_add.py" }'
    tiles = 'tiles = { triton = ["BLOCK_SIZE"], cutile = ["TILE_SIZE"], toy = ["BLOCK"] }'
    stage = "\n".join(modules if line.startswith("modules =") else
                      tiles if line.startswith("tiles =") else line
                      for line in stage.splitlines())
    (course / "course.toml").parent.mkdir()
    (course / "course.toml").write_text(head + stage + "\n")
    for track in ("triton", "cutile"):
        (course / "solutions" / track).mkdir(parents=True)
        shutil.copy(ROOT / "solutions" / track / "stage1_vector_add.py",
                    course / "solutions" / track / "stage1_vector_add.py")
    (course / "solutions/toy").mkdir()
    (course / "solutions/toy/stage1_vector_add.py").write_text(SOLUTION.lstrip())

    made = grade(package, site, course / "course.toml", "skeletons")
    assert made.returncode == 0, made.stdout + made.stderr
    exercise = (course / "exercises/toy/stage1_vector_add.py").read_text()
    assert "# TODO 1:" in exercise and "mask = offsets < n" not in exercise

    untouched = grade(package, site, course / "course.toml", "1", "--track", "toy",
                      "--json", str(tmp_path / "exercise.json"))
    assert untouched.returncode == 1, untouched.stdout + untouched.stderr
    assert json.loads((tmp_path / "exercise.json").read_text())["stages"][0]["status"] == \
        "NOT STARTED"

    result = tmp_path / "toy.json"
    graded = grade(package, site, course / "course.toml", "1", "--solutions", "--track", "toy",
                   "--json", str(result))
    assert graded.returncode == 0, graded.stdout + graded.stderr
    report = json.loads(result.read_text())
    assert report["backend"] == "toy-cpu", report["backend_reason"]
    stage = report["stages"][0]
    assert stage["status"] == "PASS", stage
    assert stage["cases"] and all(c["passed"] for c in stage["cases"])

    assert changed(ROOT, package) == sorted([
        "pyproject.toml", "grader/languages/toy/__init__.py", "grader/languages/toy/track.py",
        "grader/languages/toy/parts.py", "grader/languages/toy/spellings.py"])
