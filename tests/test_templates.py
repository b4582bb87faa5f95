"""The CI templates: the GitHub Actions workflow uses only commands and options that exist,
and the Gradescope autograder grades an upload into a valid results.json."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click

from grader.cli import cli

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "templates"


def workflow_commands() -> list[list[str]]:
    """Every `grade ...` command in the workflow, with folded (>) lines joined."""
    text = (TEMPLATES / "github/grade.yml").read_text()
    commands, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*run: (>)?\s*(.*)$", line)
        if not m:
            continue
        body = m.group(2)
        if m.group(1):  # a folded block: the indented lines that follow
            indent = len(lines[i + 1]) - len(lines[i + 1].lstrip())
            block = []
            for follow in lines[i + 1:]:
                if follow.strip() and len(follow) - len(follow.lstrip()) < indent:
                    break
                block.append(follow.strip())
            body = " ".join(block)
        if body.startswith("grade "):
            commands.append(shlex.split(body.replace('"$GITHUB_STEP_SUMMARY"', "summary.md"))[1:])
    return commands


def parses(args: list[str]) -> bool:
    """Whether `grade ARGS` parses: the command exists and every option and value is valid.
    Nothing runs."""
    name, *rest = args
    command = cli.commands.get(name)
    if command is None:  # `grade stage3 ...` is the hidden `stage` command
        command, rest = cli.commands["stage"], args
    try:
        command.make_context(name, list(rest), parent=click.Context(cli, info_name="grade"))
    except click.UsageError:
        return False
    return True


def test_the_workflow_uses_only_real_grade_commands():
    commands = workflow_commands()
    assert len(commands) >= 5
    for args in commands:
        assert parses(args), args
    flat = [" ".join(c) for c in commands]
    assert any("--backend triton-interpret" in c and "--junit" in c for c in flat)
    assert any("--backend cutile" in c for c in flat) and any("--backend triton " in c + " " for c in flat)


def test_a_wrong_option_would_be_caught():
    assert parses(["all", "--junit", "x.xml"]) and parses(["3", "--backend", "cutile"])
    assert not parses(["all", "--junitt", "x.xml"])
    assert not parses(["all", "--backend", "cuda"])


def test_gradescope_autograder_grades_an_upload(tmp_path, course):
    root = tmp_path / "autograder"
    # The autograder zip: the handout, the class's hidden cases, and the two scripts.
    from grader.instructor.release import release

    release(course, root / "source")
    (root / "source/course.hidden.toml").write_text(
        'seed = 99\n[[stages]]\nid = "vector_add"\ncases = [ { n = 2049, dtypes = ["float32"] } ]\n')
    for name in ("setup.sh", "run_autograder"):
        shutil.copy(TEMPLATES / "gradescope" / name, root / "source" / name)
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
