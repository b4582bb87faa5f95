"""Shared fixtures for the grader's own tests.

The tests run on machines without a GPU, so Triton must be in interpreter mode, and that
has to be decided before anything imports triton.
"""

import dataclasses
import os

os.environ["TRITON_INTERPRET"] = "1"
# `grade` adds GitHub annotations to its output under GitHub Actions; the tests that want
# them set this themselves, so that the others read the same output on any CI.
os.environ.pop("GITHUB_ACTIONS", None)

import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from grader import sandbox  # noqa: E402
from grader.backends import selection as backends  # noqa: E402
from grader.cli import main  # noqa: E402
from grader.course import load_course  # noqa: E402
from grader.grading.request import GradingRequest, Limits, Outputs  # noqa: E402
from grader.grading.stages import grade_stage  # noqa: E402
# The course's [submissions] rules, strict and relaxed, and the one-stage courses the tests
# write: shared with the GPU studies that grade the corpus again (scripts/corpus_files.py).
from scripts.corpus_files import RELAXED_RULES, RULES, vector_add_course  # noqa: E402,F401

# Gradings follow one another here: each one's processes are forks of a template that
# imported PyTorch once (grader.sandbox.spares).
sandbox.keep_warm()

ROOT = Path(__file__).resolve().parents[1]
COURSE_FILE = ROOT / "course.toml"


def relax(course_file: Path) -> Path:
    """A course.toml (a copy) with RELAXED_RULES for its [submissions] rules."""
    text = course_file.read_text(encoding="utf-8")
    course_file.write_text(text.replace(RULES, RELAXED_RULES), encoding="utf-8")
    assert RELAXED_RULES in course_file.read_text(encoding="utf-8")
    return course_file


# What a copy of the course holds: enough to grade, release and regenerate skeletons.
COURSE_PARTS = ("course.toml", "exercises", "solutions", "grader", "README.md", "pyproject.toml")


@pytest.fixture(scope="session")
def course():
    return load_course(COURSE_FILE)


@pytest.fixture(scope="session")
def interpret():
    return backends.select("triton-interpret")


@pytest.fixture
def grade_source(course, tmp_path):
    """Grade `source` as the submission for a stage; returns the StageResult.

    `backend` is a backend name or a ready Selection; `course_toml`, when given, is the text
    of a one-off course.toml to grade against instead of the real one; the other keyword
    arguments are the request's (grader.grading.request).
    """

    def grade(stage_id: str, source: str, backend="triton-interpret", course_toml=None,
              timeout=None, keep_going=False, seed=0, benchmark_json=None):
        graded = course
        if course_toml is not None:
            (tmp_path / "course.toml").write_text(course_toml, encoding="utf-8")
            graded = load_course(tmp_path / "course.toml")
        module = tmp_path / f"{stage_id}_submission.py"
        module.write_text(source, encoding="utf-8")
        stage = graded.select(stage_id)
        request = GradingRequest(graded, (stage,), backend if isinstance(backend, str) else
                                 backends.AUTO, module=module, seed=seed,
                                 limits=Limits(timeout, keep_going),
                                 outputs=Outputs(benchmark_json=benchmark_json))
        resolved = request.resolve()
        if not isinstance(backend, str):  # a stand-in backend (a GPU's timing on the CPU)
            resolved = dataclasses.replace(resolved, selection=backend)
        return grade_stage(resolved, stage)

    return grade


def broken(track: str, stage_file: str, old: str, new: str, count: int | None = 1) -> str:
    """The reference solution `solutions/<track>/<stage_file>` with every `old` replaced by
    `new`. `old` must occur exactly `count` times (None: at least once), so that a test fails
    loudly, rather than grading the unbroken reference, once a solution is rewritten."""
    source = (ROOT / "solutions" / track / stage_file).read_text()
    found = source.count(old)
    if count is None:
        assert found, f"{track}/{stage_file} no longer contains {old!r}"
    else:
        assert found == count, f"{track}/{stage_file} contains {old!r} {found} times, not {count}"
    return source.replace(old, new)


# Where a reference sends some calls to a second, faster kernel before the kernel the
# exercise teaches (a tuned block that launches and returns), and the line that makes it.
SHORTCUTS = {
    ("triton", "stage3_softmax.py"): "    if N <= BLOCK_N:\n",
    ("triton", "stage4_matmul.py"): "    if hopper and aligned and a.element_size() == 2:\n",
}


def without_shortcuts(track: str, stage_file: str, source: str) -> str:
    """`source` (a reference, or one with a fault put in) with its shortcut to a second
    kernel never taken, so that every call reaches the kernel a student writes: a fault put
    there must show."""
    shortcut = SHORTCUTS.get((track, stage_file))
    if shortcut is None:
        return source
    assert source.count(shortcut) == 1, f"{track}/{stage_file} no longer contains {shortcut!r}"
    return source.replace(shortcut, "    if False:  # the kernel a student writes, always\n")


def failing(result) -> list:
    """The cases of a StageResult that did not pass."""
    return [c for c in result.cases if not c.passed]


def case_text(case, details: bool = True) -> str:
    """A case's summary, and its diagnostic details unless details=False."""
    return "\n".join([case.summary, *(case.details if details else ())])


def failure_text(result, details: bool = True) -> str:
    """What the failing cases of a StageResult report, one after another."""
    return "\n".join(case_text(c, details) for c in failing(result))


def schema_errors(value, schema: dict) -> list[str]:
    """Every place where `value` breaks `schema`, as 'path: problem' strings, by the draft of
    JSON Schema that the schema declares (`$schema`), the schema checked against it first."""
    from jsonschema.validators import validator_for

    validator = validator_for(schema)
    validator.check_schema(schema)
    return [f"{error.json_path}: {error.message}"
            for error in sorted(validator(schema).iter_errors(value), key=lambda e: e.json_path)]


def copy_course(dest: Path, parts=COURSE_PARTS) -> Path:
    """Copy this course (the `parts` of it) into `dest`; returns the copy's course.toml."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in parts:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, dest / name)
    return dest / "course.toml"


# A second stage for a small course's `extra`: fused GELU, one small case.
GELU_STAGE = """
[[stages]]
id = "fused_gelu"
title = "Fused GELU"
points = 10
modules = { triton = "triton/stage2_fused_gelu.py", cutile = "cutile/stage2_fused_gelu.py" }
tolerance.float32 = { atol = 1e-5, rtol = 1e-5 }
cases = [ { M = 3, N = 70, dtypes = ["float32"] } ]
"""


@pytest.fixture
def small_course(tmp_path):
    """Two stages (vector add, fused GELU), one small case each: a few seconds per student."""
    root = tmp_path / "course"
    root.mkdir()
    shutil.copytree(ROOT / "exercises", root / "exercises",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "course.toml").write_text(
        vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]', GELU_STAGE),
        encoding="utf-8")
    return load_course(root / "course.toml")


def fewer_cases(course, keep: int):
    """`course` with only the first `keep` correctness cases of each stage: for tests whose
    claim is about the machinery, not about the cases."""
    return dataclasses.replace(course, stages=tuple(
        dataclasses.replace(stage, cases=stage.cases[:keep]) for stage in course.stages))


@pytest.fixture
def run_grade(capsys):
    """Run the `grade` CLI in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


_LEFT_OUT: set[str] = set()  # the slow tests this run deselected, by node id

# `--dist loadfile` gives each test file to one worker (its tests share fixtures and module
# caches), in the order the files are collected: the longest files of the slow sweeps come
# first, so that no worker starts one of them last (each took 4 to 20 minutes of one worker
# on CI's two cores; the rest follow in their order, each a few minutes at most).
LONGEST_FIRST = ("tests/test_fault_seeds.py", "tests/test_fault_files.py",
                 "tests/instructor/test_ci_templates.py", "tests/languages/test_cutile.py",
                 "tests/instructor/test_batch.py", "tests/instructor/test_slurm.py")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The longest files first; a file's tests stay together and in their order."""
    first = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: first.get(item.nodeid.split("::")[0], len(first)))


def pytest_deselected(items):
    _LEFT_OUT.update(item.nodeid for item in items if item.get_closest_marker("slow"))


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker tells the controller
        session.config.workeroutput["left_out"] = sorted(_LEFT_OUT)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _LEFT_OUT.update(getattr(node, "workeroutput", {}).get("left_out", ()))


def pytest_terminal_summary(terminalreporter, config):
    """Say what the default run left out, and how to run it: a deselected sweep is not a
    pass."""
    if _LEFT_OUT:
        files = sorted({nodeid.split("::")[0] for nodeid in _LEFT_OUT})
        terminalreporter.write_line(
            f"not run here: {len(_LEFT_OUT)} slow tests ({', '.join(files)}); "
            "`pytest -m slow` runs them (CI runs them as its second step)", yellow=True)
