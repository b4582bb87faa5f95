"""Exercises are generated from the solutions, stay in sync, and never contain solution code."""

import shutil

import pytest
from conftest import copy_course

from grader.course.todos import todo_state
from grader.instructor.release import secret_lines
from grader.instructor.skeletons import MarkerError, make_exercise
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
    import re

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
