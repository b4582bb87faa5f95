"""What `grade` answers without grading comes without what grading loads.

`grade --help`, `grade list`, the help of a command and a stage that is NOT STARTED import
neither PyTorch nor pytest nor pydantic (1-2 s on a laptop before the first line), nor Jinja2,
which only an HTML page drawn needs: each runs in a fresh process (`python -X importtime`),
which lists the modules it holds at its end. A failure names the imports that brought one
in, from -X importtime's record.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest

from grader.backends.selection import GPU_DEVICES
from grader.cli import COMMANDS, cli, requested
from grader.course import outline as outlines
from grader.grading.unstarted import unstarted_report
from tests.conftest import ROOT, copy_course

HEAVY = ("torch", "pytest", "pydantic", "jinja2")
# Runs the command line as `grade` does, then says which modules the process holds.
WRAPPER = textwrap.dedent("""
    import json, sys
    from grader.cli import main
    try:
        code = main(sys.argv[1:])
    except SystemExit as stop:
        code = stop.code
    print("MODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr)
    sys.exit(code)
""")


def run(args, folder: Path, cache: Path, env: dict | None = None):
    """`grade ARGS` in a fresh process in `folder`, its cache folder `cache`: (exit code,
    output, the heavy modules it imported, what brought each in)."""
    environment = {**os.environ, "XDG_CACHE_HOME": str(cache), **(env or {})}
    environment = {k: v for k, v in environment.items() if v is not None}
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", WRAPPER, *args], cwd=folder,
                          env=environment, capture_output=True, text=True, timeout=300)
    marker = done.stderr.rindex("MODULES ")
    modules = json.loads(done.stderr[marker + len("MODULES "):].splitlines()[0])
    heavy = sorted(name for name in HEAVY if name in modules)
    return done.returncode, done.stdout + done.stderr[:marker], heavy, _brought_in(done.stderr, heavy)


def _brought_in(record: str, names) -> str:
    """For each heavy module, the chain of imports that brought it in (-X importtime prints
    a module after its own imports, one indent deeper than the module importing it)."""
    lines = [(len(m.group(1)), m.group(2)) for m in
             re.finditer(r"^import time:\s+\d+ \|\s+\d+ \| ( *)(\S+)$", record, re.M)]
    chains = []
    for name in names:
        at = next(i for i, (_, module) in enumerate(lines) if module == name)
        chain, depth = [name], lines[at][0]
        for indent, module in lines[at + 1:]:
            if indent < depth:
                chain.append(module)
                depth = indent
        chains.append(" <- ".join(chain))
    return "; ".join(chains)


@pytest.fixture(scope="module")
def untouched(tmp_path_factory):
    """A copy of the course whose exercises hold only their TODOs, its outline kept in a
    cache folder of its own by a first `grade list` (the course checked)."""
    folder = tmp_path_factory.mktemp("untouched")
    copy_course(folder, parts=("course.toml", "exercises"))
    cache = folder / "cache"
    code, out, _, _ = run(["list"], folder, cache)
    assert code == 0 and "flash_attention" in out, out
    return folder, cache


# Where a GPU device is, PyTorch is asked whether it can use it: a track named (no
# TRITON_INTERPRET to choose for it) is then chosen with PyTorch, and graded on the GPU.
GPU_HERE = any(os.path.exists(device) for device in GPU_DEVICES)
ON_A_CPU = pytest.mark.skipif(GPU_HERE, reason="a GPU device is here: PyTorch is asked")


@pytest.mark.parametrize("args", [["--help"], ["list"], ["3"], ["all"], ["1", "3"],
                                  pytest.param(["--track", "cutile", "3"], marks=ON_A_CPU),
                                  ["list", "--help"], ["doctor", "--help"],
                                  ["compile", "--help"]],
                         ids=" ".join)
def test_what_needs_no_grading_imports_no_grading(untouched, args):
    folder, cache = untouched
    code, out, heavy, why = run(args, folder, cache)
    assert not heavy, f"`grade {' '.join(args)}` imported {heavy}: {why}"
    if args[-1] in ("3", "all"):
        assert code == 1 and "NOT STARTED" in out and "total: 0/" in out, out
    else:
        assert code == 0, out


@ON_A_CPU
def test_a_student_shell_without_a_gpu_is_answered_so_too(untouched):
    """No TRITON_INTERPRET (the tests set it): the backend is chosen as on a student's
    laptop, and where Linux has no GPU device PyTorch is not needed to know there is none."""
    folder, cache = untouched
    code, out, heavy, why = run(["3"], folder, cache, env={"TRITON_INTERPRET": None})
    assert not heavy, why
    assert code == 1 and "no usable CUDA GPU" in out and "NOT STARTED" in out, out


def test_a_course_changed_since_its_check_is_checked_again(untouched, tmp_path):
    """The outline is kept for the course as checked: changed, it is checked again and says
    what is wrong (with the checker's pydantic and problems)."""
    folder, cache = untouched
    changed = tmp_path / "course"
    copy_course(changed, parts=("course.toml", "exercises"))
    text = (changed / "course.toml").read_text(encoding="utf-8")
    (changed / "course.toml").write_text(text.replace("points = 10", "points = -3", 1),
                                         encoding="utf-8")
    code, out, heavy, _ = run(["list"], changed, cache)
    assert code == 2 and "points: must not be negative" in out, out
    assert "pydantic" in heavy
    code, out, _, _ = run(["3"], changed, cache)
    assert code == 2 and "points: must not be negative" in out, out


def test_a_stage_that_is_started_is_graded(untouched, tmp_path):
    """A started file is graded: only NOT STARTED is answered from the file alone."""
    folder, cache = untouched
    started = tmp_path / "course"
    copy_course(started, parts=("course.toml", "exercises", "solutions"))
    solution = started / "solutions/triton/stage1_vector_add.py"
    (started / "exercises/triton/stage1_vector_add.py").write_text(solution.read_text())
    code, out, heavy, _ = run(["1", "--seed", "3"], started, cache)
    assert code == 0 and "PASS" in out, out
    assert "torch" in heavy


def test_the_answer_without_grading_is_the_grading_s(untouched, run_grade, monkeypatch):
    """NOT STARTED, answered from the outline and the files, reads as the grading says it:
    the same progress, scorecard, footer and exit code."""
    folder, _ = untouched
    monkeypatch.setattr(outlines, "CACHE_FILE", folder / "cache" / "tilecourse" / "courses.json")
    answered = []
    monkeypatch.setattr(requested, "unstarted_report",
                        lambda *a: answered.append(unstarted_report(*a)) or answered[-1])
    course = str(folder / "course.toml")
    asked = [["3"], ["all", "--fail-on", "failure"]]
    asked += [] if GPU_HERE else [["--track", "cutile", "1", "2"]]  # the simulator
    for args in asked:
        light = run_grade("--course", course, *args, "--seed", "11")
        assert answered.pop() is not None, args
        with monkeypatch.context() as graded:
            graded.setattr(requested, "outline_of", lambda ctx: None)
            full = run_grade("--course", course, *args, "--seed", "11")
        assert not answered and light == full, args


def test_every_command_is_listed_with_its_own_short_help():
    """`grade --help` lists the commands from grader.cli.COMMANDS without loading them: each
    entry's short help is its command's first sentence, and hidden commands stay hidden."""
    context = click.Context(cli, info_name="grade")
    for name, lazy in COMMANDS.items():
        command = cli.get_command(context, name)
        assert command.hidden == (lazy.short_help is None), name
        if lazy.short_help is not None:
            first = " ".join(command.help.partition("\n\n")[0].split())
            assert lazy.short_help == first, name


def test_the_outline_changes_with_the_grader(tmp_path, monkeypatch):
    """A grader whose sources changed checks the course again: its sources are in the key."""
    path = ROOT / "course.toml"
    source = tmp_path / "module.py"
    source.write_text("A = 1\n")
    monkeypatch.setattr(outlines, "_sources", lambda: [source])
    before = outlines.key(path)
    source.write_text("A = 22\n")
    assert outlines.key(path) != before
