"""The docs are tests: every command of README.md and docs/*.md runs here as typed, in the
folder its document names, and does what the document says (its exit code, and a part of
its output where the document promises one).

The directive above each block says how (tests/documented.py lists its keys). A block's
commands run in order in one folder, each as `bash -c` of its text, and what one exports
(`source .venv/bin/activate`) holds for the next, as in a terminal. The environment is the
one the documents set up: the tests' own `.venv`, activated, `grade` choosing its backend
by itself (Triton's interpreter and the cuTile simulator on a CPU). A command that needs
what this machine lacks is reported skipped with why, never passed. The blocks marked slow
run with `pytest -m slow`: those of docs/, which grade in more folders what README.md's
blocks grade in the default run, and README.md's contributors' block, which runs pytest.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

import pytest
import torch
from conftest import ROOT, copy_course, vector_add_course
from documented import Block, Command, read, read_all

BLOCKS, PROBLEMS = read_all()
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
SMALL_COURSE = vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]')
EXPORT = ROOT / "tests" / "instructor" / "gradescope_export"
TIMEOUT = 600  # seconds for one command


def test_every_fenced_block_says_how_it_runs():
    assert not PROBLEMS, "\n".join(PROBLEMS)
    assert {b.doc for b in BLOCKS} >= {"README.md", "docs/instructors.md"}


# --- the folders ------------------------------------------------------------------------


def _checkout_parts() -> tuple[str, ...]:
    """The checkout's top-level names a fresh clone has: none that .gitignore names."""
    ignored = [line.strip().rstrip("/") for line in
               (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")]
    return tuple(sorted(p.name for p in ROOT.iterdir() if p.name != ".git"
                        and not any(fnmatch(p.name, pattern) for pattern in ignored)))


def _grade(folder: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run(["grade", *args], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr


def _class(folder: Path, env: dict[str, str]) -> None:
    """submissions/: ada's checkout, stage 1 solved (Triton); bob's zip, a bare cuTile file."""
    ada = folder / "submissions" / "ada" / "exercises" / "triton"
    ada.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "triton" / "stage1_vector_add.py", ada)
    with zipfile.ZipFile(folder / "submissions" / "bob.zip", "w") as bob:
        bob.write(ROOT / "solutions" / "cutile" / "stage1_vector_add.py", "stage1_vector_add.py")


PREPARE = {
    "class": _class,
    "export": lambda folder, env: shutil.copytree(EXPORT, folder / "export"),
    "autograder": lambda folder, env: _grade(folder, env, "autograder", "autograder.zip"),
}


def _environment() -> dict[str, str]:
    """The tests' environment as a terminal of the set-up has it: its `.venv` activated,
    nothing of pytest's or of the tests' own Triton interpreter switch."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "TRITON_INTERPRET", "VIRTUAL_ENV"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def _folder(block: Block, base: Path, env: dict[str, str]) -> Path:
    """A fresh copy of the checkout (its `.venv` the tests' own), then what `block` asks."""
    folder = base / "tilecourse"
    copy_course(folder, _checkout_parts())
    (folder / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    if block.course == "small":
        (folder / "course.toml").write_text(SMALL_COURSE, encoding="utf-8")
    for name in block.prepare:
        PREPARE[name](folder, env)
    return folder


# --- running a block --------------------------------------------------------------------


@dataclass
class Ran:
    code: int
    output: str


# Names bash sets for itself: not carried from one command to the next.
OWN = {"PWD", "OLDPWD", "SHLVL", "_"}


@dataclass
class Transcript:
    """One block's folder and environment: its commands run in order, each once."""

    block: Block
    folder: Path
    env: dict[str, str]
    done: dict[int, Ran | str] = field(default_factory=dict)  # a result, or why not run

    def through(self, index: int) -> Ran | str:
        for earlier in range(index + 1):
            if earlier not in self.done:
                self.done[earlier] = self._run(self.block.commands[earlier])
        return self.done[index]

    def _run(self, command: Command) -> Ran | str:
        reason = not_run(command)
        if reason:
            return reason
        state = self.folder.parent / "environment"
        script = f'{command.text}\ncode=$?\nenv -0 > "{state}"\nexit $code\n'
        done = subprocess.run(["bash", "-c", script], cwd=self.folder, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=TIMEOUT)
        if state.is_file():
            pairs = (item.partition("=") for item in state.read_text().split("\0") if item)
            self.env = {k: v for k, _, v in pairs if k not in OWN}
        return Ran(done.returncode, done.stdout)


def _steps(line: str) -> list[str]:
    """A line's commands joined by `&&`, pytest's worker count left out (CI picks its own)."""
    return [re.sub(r" -n \S+", " -n N", step.strip()) for step in line.split("&&")]


def in_ci(command: Command) -> bool:
    """Whether a line of .ci/run runs `command`: all of it, or some of its `&&` steps."""
    wanted = _steps(command.name)
    return any(steps[i:i + len(wanted)] == wanted
               for steps in map(_steps, CI.splitlines()) for i in range(len(steps)))


def not_run(command: Command) -> str:
    """Why `command` cannot run here, or "" where it can."""
    why = []
    if "gpu" in command.needs and not torch.cuda.is_available():
        why.append("needs a CUDA GPU, and this machine has none")
    if "network" in command.needs:
        why.append("installs packages from the network, which the tests never do")
    if "ci" in command.needs:
        why.append("is the test suite itself")
    if why and in_ci(command):
        why.append(".ci/run runs it on a fresh checkout")
    return "; ".join(why)


_TRANSCRIPTS: dict[tuple[str, int], Transcript] = {}


def _transcript(block: Block, tmp_path_factory) -> Transcript:
    key = (block.doc, block.line)
    if key not in _TRANSCRIPTS:
        env = _environment()
        base = tmp_path_factory.mktemp(re.sub(r"\W", "_", f"{block.doc}_{block.line}"))
        _TRANSCRIPTS[key] = Transcript(block, _folder(block, base, env), env)
    return _TRANSCRIPTS[key]


def _cases():
    for block in BLOCKS:
        for index, command in enumerate(block.commands):
            marks = [pytest.mark.slow] if block.slow else []
            yield pytest.param(block, index, id=f"{block.doc}:{command.line} {command.name}",
                               marks=marks)


@pytest.mark.parametrize(("block", "index"), list(_cases()))
def test_the_command_does_what_its_document_says(block, index, tmp_path_factory):
    command = block.commands[index]
    if "ci" in command.needs:
        assert in_ci(command), f"{block.doc}:{command.line}: .ci/run does not run {command.name}"
    outcome = _transcript(block, tmp_path_factory).through(index)
    if isinstance(outcome, str):
        pytest.skip(f"{block.doc}:{command.line} not run: {outcome}")
    where = f"{block.doc}:{command.line}: `{command.name}`"
    assert outcome.code == command.exit, (
        f"{where} exited {outcome.code}, the document says {command.exit}:\n"
        f"{outcome.output[-4000:]}")
    for part in command.says:
        assert part in outcome.output, f"{where} did not say {part!r}:\n{outcome.output[-4000:]}"


# --- the reading of a document ----------------------------------------------------------


def test_a_block_without_a_directive_or_a_fence_without_a_language_is_refused():
    _, problems = read("```bash\ngrade 1\n```\n\n```\nout\n```\n", "x.md")
    assert [p.split(": ")[0] for p in problems] == ["x.md:1", "x.md:5"]
    assert "directive" in problems[0] and "names no language" in problems[1]
    for wrong in ("<!-- run: in=clone, on=gpu -->", "<!-- run: needs=gpu -->",
                  "<!-- run: in=clone\ngrade 2 -> exit=1\n-->"):
        assert read(f"{wrong}\n```bash\ngrade 1\n```\n", "x.md")[1], wrong


def test_a_directive_gives_each_command_its_promises():
    text = ('<!-- run: in=clone, course=small, prepare=class+export, slow\n'
            'grade 1 -> exit=1, says="NOT STARTED, yet", says=\'"score"\'\n-->\n'
            '```bash\n# a comment\ngrade 1   # the first stage\ngrade all \\\n'
            '  --solutions    # every stage\n    # more of the comment\n```\n'
            '<!-- run: in=clone -->\n```console\n$ grade list\nstage1\n```\n')
    blocks, problems = read(text, "x.md")
    assert not problems
    first, second = blocks
    assert (first.course, first.prepare) == ("small", ("class", "export"))
    one, every = first.commands
    assert (one.name, one.line, one.exit, one.says) == ("grade 1", 6, 1,
                                                        ("NOT STARTED, yet", '"score"'))
    assert (every.name, every.exit, first.slow) == ("grade all --solutions", 0, True)
    assert every.text == "grade all \\\n  --solutions    # every stage"
    [listed] = second.commands
    assert (listed.name, listed.says, second.slow) == ("grade list", ("stage1",), False)
