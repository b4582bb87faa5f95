"""Shared fixtures for the grader's own tests.

The tests run on machines without a GPU, so Triton must be in interpreter mode, and that
has to be decided before anything imports triton.
"""

import os

os.environ["TRITON_INTERPRET"] = "1"

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from grader import backends  # noqa: E402
from grader.cli import main  # noqa: E402
from grader.course import load_course  # noqa: E402
from grader.grading import grade_stage  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COURSE_FILE = ROOT / "course.toml"


@pytest.fixture(scope="session")
def course():
    return load_course(COURSE_FILE)


@pytest.fixture(scope="session")
def interpret():
    return backends.select("triton-interpret")


@pytest.fixture
def grade_source(course, tmp_path):
    """Grade `source` as the submission for a stage; returns the StageResult."""

    def grade(stage_id: str, source: str, backend: str = "triton-interpret"):
        module = tmp_path / f"{stage_id}_submission.py"
        module.write_text(source, encoding="utf-8")
        return grade_stage(course, course.select(stage_id), backends.select(backend), module=module)

    return grade


def vector_add_course(cases: str, extra: str = "") -> str:
    """A one-stage course.toml: vector add in float32 with these cases, then `extra`."""
    return f"""
[course]
title = "small"

[[stages]]
id = "vector_add"
title = "Vector add"
points = 10
modules = {{ triton = "triton/stage1_vector_add.py", cutile = "cutile/stage1_vector_add.py" }}
tolerance.float32 = {{ atol = 1e-6, rtol = 1e-6 }}
cases = {cases}
{extra}"""


@pytest.fixture
def run_grade(capsys):
    """Run the `grade` CLI in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run
