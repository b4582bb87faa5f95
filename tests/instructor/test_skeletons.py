"""Exercises are generated from the solutions, stay in sync, and never contain solution code."""

import importlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, copy_course

from grader.course.todos import todo_state
from grader.instructor.release import secret_lines
from grader.instructor.skeletons import (MarkerError, make_exercise, make_plain_solution, regions,
                                         write_plain_solutions)
from grader.sandbox.submission import Submission

SOLUTION = '''\
def kernel(x):
    # Step 1: Double x.
    # >>> solution
    y = x * 2
    # --- exercise
    # y = ...
    # <<<
    return y
'''


def test_markers_turn_a_solution_into_a_skeleton():
    assert make_exercise(SOLUTION) == (
        "def kernel(x):\n"
        "    # TODO 1: Double x.\n"
        "    y = ...\n"
        "    return y\n"
    )


@pytest.mark.parametrize(
    "broken, message",
    [
        (SOLUTION.replace("    # >>> solution\n", ""), "'# --- exercise' found while in the code part"),
        (SOLUTION.replace("    # <<<\n    return y\n", ""), "is not closed"),
        (SOLUTION.replace("    # y = ...", "    y = ..."), "placeholder lines"),
    ],
)
def test_marker_mistakes_are_named(broken, message):
    with pytest.raises(MarkerError, match=message):
        make_exercise(broken, "sol.py")


def test_todo_state_tells_untouched_from_started():
    skeleton = make_exercise(SOLUTION + SOLUTION.replace("Step 1", "Step 2").replace("kernel", "k2"))
    state = todo_state(skeleton)
    assert state.todos == (1, 2) and state.not_started
    started = skeleton.replace("y = ...", "y = x * 2", 1)
    state = todo_state(started)
    assert not state.not_started
    assert state.unfilled == ((2, 7),) and "TODO 2 (line 7)" in state.describe()
    assert not todo_state(make_exercise(SOLUTION).replace("...", "x")).unfilled


def stage_files(course):
    for stage in course.stages:
        for track in stage.modules:
            yield (stage, course.module_path(stage, track, solutions=True),
                   course.module_path(stage, track, solutions=False))


def test_exercises_are_generated_from_the_solutions(course):
    for _, solution, exercise in stage_files(course):
        wanted = make_exercise(solution.read_text(), str(solution))
        assert exercise.read_text() == wanted, (
            f"{exercise} is out of date with {solution}: run `grade skeletons`")


def test_exercises_contain_no_solution_code(course):
    solutions = [solution for _, solution, _ in stage_files(course)]
    secret = secret_lines(solutions)
    assert len(secret) > 20  # the check has something to look for
    for _, _, exercise in stage_files(course):
        leaked = [line.strip() for line in exercise.read_text().splitlines() if line.strip() in secret]
        assert not leaked, f"{exercise} contains solution lines: {leaked}"


def test_every_skeleton_is_untouched_and_imports(course):
    for stage, _, exercise in stage_files(course):
        state = todo_state(exercise.read_text())
        assert state.not_started and len(state.todos) >= 2, exercise
        assert state.todos == tuple(range(1, len(state.todos) + 1)), exercise
        Submission(exercise, stage.problem.function).load()  # raises if it does not import


def test_every_solution_is_complete(course):
    for _, solution, _ in stage_files(course):
        assert not todo_state(solution.read_text()).unfilled, solution


def test_skeletons_check_passes_on_the_course(run_grade, course):
    code, out, _ = run_grade("--course", str(course.path), "skeletons", "--check")
    assert code == 0, out
    assert "up to date" in out


def test_skeletons_regenerates_stale_files_but_keeps_filled_in_work(run_grade, tmp_path):
    root = copy_course(tmp_path).parent
    stale = root / "exercises/triton/stage1_vector_add.py"
    stale.write_text(stale.read_text().replace("TODO 1:", "TODO 1: (old text)"))
    worked = root / "exercises/triton/stage3_softmax.py"
    student = worked.read_text().replace("...", "None")
    worked.write_text(student)
    cmd = ("--course", str(root / "course.toml"), "skeletons")

    code, out, _ = run_grade(*cmd, "--check")
    assert code == 1 and "out of date: exercises/triton/stage1_vector_add.py" in out

    code, out, _ = run_grade(*cmd)
    assert code == 1 and "kept exercises/triton/stage3_softmax.py" in out
    assert "(old text)" not in stale.read_text()
    assert worked.read_text() == student

    code, out, _ = run_grade(*cmd, "--force")
    assert code == 0
    assert (root / "exercises/triton/stage3_softmax.py.bak").read_text() == student
    assert todo_state(worked.read_text()).not_started


def test_skeletons_needs_the_solutions(run_grade, tmp_path):
    root = copy_course(tmp_path).parent
    shutil.rmtree(root / "solutions")
    code, _, err = run_grade("--course", str(root / "course.toml"), "skeletons")
    assert code == 2 and "student handout does not include" in err


def test_every_store_a_todo_asks_for_has_a_placeholder(course):
    """A student who fills in every `...` line must not forget a statement the TODO asks for
    (the store, the pointer advance): each has a placeholder line of its own, marked by what
    it stands for."""
    for stage in course.stages:
        for track in ("triton", "cutile"):
            lines = course.module_path(stage, track, solutions=False).read_text().splitlines()
            starts = [i for i, line in enumerate(lines) if re.match(r"\s*# TODO \d+:", line)]
            for n, start in enumerate(starts):
                end = starts[n + 1] if n + 1 < len(starts) else len(lines)
                header = [ln for ln in lines[start:end] if ln.strip().startswith("#")]
                asks = " ".join(header[:4]).lower()
                body = [ln for ln in lines[start:end] if "..." in ln and not ln.strip().startswith("#")]
                for verb in ("store", "advance"):
                    if re.search(rf"\b{verb}\b", asks):
                        assert any(verb in ln for ln in body), (stage.id, track, lines[start])


TUNED_SOLUTION = '''\
def kernel(x):
    # Step 1: Double x.
    # >>> solution
    # >>> tuned
    y = x * 2.0  # the fast form
    # --- plain
    # y = x + x
    # <<<
    # --- exercise
    # y = ...
    # <<<
    # >>> tuned: how many copies (see "Making it fast")
    copies = 8
    # --- plain
    # copies = 1
    # <<<
    return [y] * copies
'''


def test_a_tuned_block_becomes_a_tune_place_with_the_plain_lines():
    exercise = make_exercise(TUNED_SOLUTION)
    assert exercise == (
        "def kernel(x):\n"
        "    # TODO 1: Double x.\n"
        "    y = ...\n"
        '    # TUNE: how many copies (see "Making it fast")\n'
        "    copies = 1\n"
        "    return [y] * copies\n"
    )
    plain = make_plain_solution(TUNED_SOLUTION)
    assert "y = x + x\n" in plain and "copies = 1\n" in plain and "# TUNE: how many" in plain
    assert "x * 2.0" not in plain and "copies = 8" not in plain and "..." not in plain
    namespace = {}
    exec(plain, namespace)  # the plain solution is working code
    assert namespace["kernel"](3) == [6]
    exec(TUNED_SOLUTION, namespace)  # the solution itself runs the tuned lines only
    assert namespace["kernel"](3) == [6.0] * 8


def test_tune_places_are_not_todos():
    state = todo_state(make_exercise(TUNED_SOLUTION))
    assert state.todos == (1,) and state.not_started
    filled = todo_state(make_exercise(TUNED_SOLUTION).replace("y = ...", "y = 2 * x"))
    assert not filled.not_started and not filled.unfilled


def test_tuned_lines_are_reference_code_for_the_release_check(tmp_path):
    solution = tmp_path / "stage.py"
    solution.write_text(TUNED_SOLUTION.replace("y = x * 2.0", "y = x * 2.0 + 0.0 * x"))
    secret = secret_lines([solution])
    assert "y = x * 2.0 + 0.0 * x  # the fast form" in secret  # tuned, inside a TODO
    assert not any("copies = 1" in line for line in secret)  # the exercise shows it


@pytest.mark.parametrize(
    "broken, message",
    [
        (TUNED_SOLUTION.replace(': how many copies (see "Making it fast")', ""),
         "a TUNE place says what it controls"),
        (TUNED_SOLUTION.replace("    # >>> tuned: how many", "    # how many"),
         "'# --- plain' found while in the code part"),
        (TUNED_SOLUTION.replace("    # <<<\n    return [y] * copies\n", ""),
         "'# >>> tuned' block is not closed"),
        (TUNED_SOLUTION.replace("    # copies = 1\n", "    # copies = ...\n"), "a `...` there would count"),
        (TUNED_SOLUTION.replace("    # copies = 1\n", "    copies = 1\n"), "plain lines between"),
        (TUNED_SOLUTION.replace("    copies = 8\n", "    # >>> solution\n"),
         "'# >>> solution' found while in the tuned part"),
        (TUNED_SOLUTION.replace("    # y = x + x\n    # <<<\n", "    # y = x + x\n"),
         "'# --- exercise' found while in the solution-plain part"),
    ],
)
def test_tune_marker_mistakes_are_named(broken, message):
    with pytest.raises(MarkerError, match=re.escape(message)):
        make_exercise(broken, "sol.py")


def tuned_only(source: str) -> set[str]:
    """The code lines of a solution's tuned parts that neither its shared code nor its plain
    lines repeat."""
    parts: dict[str, set[str]] = {}
    for part, _, line in regions(source):
        text = line.strip().removeprefix("#").strip() if part.endswith("plain") else line.strip()
        if text and not text.startswith("#"):
            parts.setdefault(part, set()).add(text)
    shown = parts.get("code", set()) | parts.get("plain", set()) | parts.get("solution-plain", set())
    return (parts.get("tuned", set()) | parts.get("solution-tuned", set())) - shown


def test_tuned_lines_never_appear_in_the_exercises(course):
    files = list(stage_files(course))
    secret = secret_lines([solution for _, solution, _ in files])
    # A line one exercise shows (another stage's plain tiles) is no secret in any file.
    anywhere = {line.strip() for _, _, exercise in files for line in exercise.read_text().splitlines()}
    for stage, solution, exercise in files:
        tuned = tuned_only(solution.read_text())
        if stage.id != "vector_add":  # plain already reaches the copy ceiling there
            assert tuned, f"{solution} has no TUNE place"
        shown = {line.strip() for line in exercise.read_text().splitlines()}
        assert not tuned & shown, f"{exercise} shows the reference's tuned lines {tuned & shown}"
        # `grade release` refuses a handout with any of them.
        assert {line for line in tuned - anywhere if len(line) >= 16} <= secret


def test_every_exercise_ends_its_lesson_with_making_it_fast(course):
    for stage, solution, exercise in stage_files(course):
        text = exercise.read_text()
        doc = text[:text.index('"""', 3)]
        assert "Making it fast." in doc, exercise
        assert stage.id == "vector_add" or "# TUNE: " in text, exercise
        # One GPU's measured figures belong in BENCHMARKS.md, not in the lesson.
        for source in (text, solution.read_text()):
            assert not re.search(r"H[12]00|\d+(\.\d+)?x (faster|slower)|\d+% (faster|slower)",
                                 source), solution


@pytest.fixture(scope="module")
def plain_folder(tmp_path_factory, course):
    folder = tmp_path_factory.mktemp("plain")
    written = write_plain_solutions(course, folder)
    assert len(written) == sum(len(stage.modules) for stage in course.stages)
    return folder


# A sweep of content, as the fault files are (about 30 s a track): with `-m slow`.
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["triton-interpret", "cutile-sim"])
def test_every_plain_solution_passes_every_correctness_case(run_grade, course, plain_folder,
                                                           backend, tmp_path):
    """The untuned configuration, filled in correctly, is a correct kernel on every case;
    what tuning adds is speed only."""
    out = tmp_path / "result.json"
    code, _, _ = run_grade("--course", str(course.path), "all", "--backend", backend,
                           "--submission", str(plain_folder), "--json", str(out))
    data = json.loads(out.read_text())
    failing = {s["id"]: s["message"] or [c["summary"] for c in s["cases"] if not c["passed"]]
               for s in data["stages"] if s["status"] != "PASS"}
    assert code == 0 and not failing, failing
    assert [s["cases_passed"] for s in data["stages"]] == [len(s.cases) for s in course.stages]
    # The replay watched every load and store: a reference draws no finding at all.
    warned = [(s["id"], c["id"], c["stats"].get("traffic")) for s in data["stages"]
              for c in s["cases"] if c["stats"].get("traffic")]
    assert not warned, warned


def load_untuned_check():
    return importlib.import_module("scripts.untuned_check")


def test_untuned_check_judges_the_speed_cases_by_issue_15(course):
    check = load_untuned_check()
    matmul, vector_add = course.select("matmul"), course.select("vector_add")
    assert vector_add.speed.plain_at_limit and not matmul.speed.plain_at_limit
    case = {"id": "M=1-float32", "passed": True, "speedup": 1.5, "summary": "fast enough"}
    result = {"stages": [{"id": "matmul", "speed": {"graded": True, "reason": "", "cases": [case]}}]}
    fast = check.speed_cells(result, "matmul", "M=1-float32")
    assert fast == ("1.50x", "fast enough", True)
    case["passed"], case["summary"] = False, "too slow: 0.60x, needs 0.75x"
    slow = check.speed_cells(result, "matmul", "M=1-float32")
    assert slow == ("1.50x", "too slow: 0.60x, needs 0.75x", False)
    assert check.target_missed(matmul, fast, slow) is False  # what the issue asks for
    assert check.target_missed(matmul, fast, fast)  # the plain kernel earned the points
    assert check.target_missed(matmul, slow, slow)  # the reference did not
    assert not check.target_missed(vector_add, fast, fast)  # plain may reach the ceiling
    cpu = {"stages": [{"id": "matmul", "speed": {"graded": False, "reason": "needs a GPU"}}]}
    assert check.speed_cells(cpu, "matmul", "M=1-float32") == ("-", "not graded: no GPU", False)


def test_untuned_check_says_not_graded_without_a_gpu(tmp_path):
    """On a CPU the study grades (correctness only) and says so, rather than crashing."""
    run = subprocess.run([sys.executable, "-m", "scripts", "untuned",
                          "--only", "vector_add", "--track", "triton", "--keep", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT,
                         env={**os.environ, "TRITON_INTERPRET": "1"})
    assert run.returncode == 0, run.stdout + run.stderr
    row = next(line for line in run.stdout.splitlines() if line.startswith("vector_add"))
    assert "n=67108864-float32" in row and row.count("not graded: no GPU") == 2
    assert "untuned check: OK" in run.stdout
    assert (tmp_path / "plain" / "triton" / "stage1_vector_add.py").is_file()
