"""A new tile language touches only its own files: its record, its wing, its extra.

A copy of the grader gets a third track, "toy": a record in grader/tracks.py (and its entry in
TRACKS), a wing in grader/languages/toy/, and an extra in pyproject.toml; nothing else of the
grader changes. The toy language is a pure-Python module, toytile, that stands for what the
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

WING = '''
"""The toy language's wing (grader.tracks.Wing): toytile kernels, run on the CPU one program
at a time. The toy language has no GPU backend, no compiler and no dtypes of its own, so its
GPU members refuse and its front-end check is not made."""

from __future__ import annotations

import contextlib
import importlib.util
import inspect

from grader.tracks import Wing

_NO_GPU = "the toy language has no GPU backend: use --backend toy-cpu"


class Toy(Wing):
    name = "toy"

    # --- the grading process ------------------------------------------------------------

    summaries = {"cuda": "the toy language has no GPU backend",
                 "cpu": "toytile kernels run as Python on the CPU, one program at a time"}

    def summary(self, device):
        return self.summaries[device]

    def probe(self, device):
        if device == "cuda":
            return _NO_GPU
        if importlib.util.find_spec("toytile") is None:
            return "the toy language is not installed: `pip install tilecourse[toy]`"
        return None

    def prepare(self, backend):
        pass

    def note(self, backend):
        return None

    def reason(self, device):
        return "the toy language runs on the CPU only"

    def forced(self):
        return None

    def unavailable(self, missing):
        return f"The toy track cannot be graded here: {missing}"

    def versions(self):
        return {}

    def readable(self):
        # toytile is a Python module on Python's path (PYTHONPATH here, site-packages once
        # installed), which a worker's view shows already: no toolchain of its own.
        return []

    # --- a worker's bootstrap -----------------------------------------------------------

    preload = ()

    def bind(self, role, device):
        try:
            import toytile  # noqa: F401
        except ImportError:
            pass  # the submission's own import then says what is missing

    # --- the child ------------------------------------------------------------------------

    def hook_launches(self):
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

    def dtype_name(self, value):
        return None  # the toy language has no dtypes of its own

    def build_offline(self, launches, archs):
        raise NotImplementedError("the toy language builds no binaries")

    # --- a kernel file --------------------------------------------------------------------

    @property
    def spellings(self):
        from grader.languages.toy.spellings import TOY

        return TOY

    helpers_are_tile_code = False

    def decorate(self, function, spelling, options, node, interpreted):
        import toytile

        return toytile.kernel(function)

    constructors = {}

    def dtype(self, name):
        return None

    def parameters(self, kernel):
        return list(inspect.signature(kernel.fn).parameters)

    def optional(self, kernel):
        return {n for n, p in inspect.signature(kernel.fn).parameters.items()
                if p.default is not p.empty}

    # --- the replay on a CPU --------------------------------------------------------------

    def front_end(self, step, kernel, args, kwargs, path):
        return None  # the toy language has no compiler whose front end could check a launch

    def launch(self, step, kernel, args, kwargs):
        import toytile

        toytile.run_programs(step.grid, kernel.fn, args)

    def watch(self, watch, launch, grid, notes):
        return contextlib.nullcontext()  # the toy language reports no loads and stores

    def runtime(self, filename):
        return "toy language" if filename.endswith("toytile.py") else None

    # --- on a GPU -------------------------------------------------------------------------

    def build(self, kernel, args, kwargs, grid):
        raise NotImplementedError(_NO_GPU)

    def load_binary(self, record, files, folder, kept, name):
        raise NotImplementedError(_NO_GPU)

    skipped = ()


WING = Toy()
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
TOY = Track(
    name="toy", title="Toy", module="toytile",
    imports=re.compile(r"^\\s*(import|from)\\s+toytile\\b", re.M),
    decorator="@tt.kernel",
    words=Words("program", "programs", "offsets", "tt.program_id",
                "give this tt.load a mask that keeps every lane inside the tensor",
                "give the tt.store a mask that keeps every lane inside the tensor", "mask"),
    nan_fix="give that `tt.load` a mask: masked lanes read 0",
    extra="toy", gpu_backend="toy-gpu", cpu_backend="toy-cpu",
    wing="grader.languages.toy",
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

    tracks = package / "grader/tracks.py"
    text = tracks.read_text()
    listed = "TRACKS: dict[str, Track] = {t.name: t for t in (TRITON, CUTILE)}"
    assert listed in text
    text = text.replace(listed, RECORD.lstrip() + listed.replace("CUTILE)", "CUTILE, TOY)"))
    tracks.write_text(text)
    toy = package / "grader/languages/toy"
    toy.mkdir()
    (toy / "__init__.py").write_text(WING.lstrip())
    (toy / "spellings.py").write_text(SPELLINGS.lstrip())
    project = package / "pyproject.toml"
    extras = "[project.optional-dependencies]\n"
    packaged = '"grader.languages.triton", '
    assert extras in project.read_text() and packaged in project.read_text()
    project.write_text(project.read_text().replace(extras, extras + "toy = []\n")
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
        "grader/tracks.py", "pyproject.toml",
        "grader/languages/toy/__init__.py", "grader/languages/toy/spellings.py"])
