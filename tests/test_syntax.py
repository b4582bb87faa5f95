"""Python source is parsed one thread at a time in the grader's processes (grader.syntax).

CPython 3.11 fails a parse now and then with SystemError "AST constructor recursion depth
mismatch" when two threads parse at once: a batch's workers each read their student's files
(grader.intake.started_stages), and on a GPU a later stage is read beside an earlier one's
cases. These tests hold every parse open for a while and count how many run together.
"""

import ast
import re
import threading
import time
from pathlib import Path

from grader.course.todos import todo_state
from grader.intake import started_stages
from grader.sandbox.screening import screen

GRADER = Path(__file__).resolve().parents[1] / "grader"
SOURCE = "def f(x):\n    # TODO 1: add one\n    return x + 1\n"


def parses_at_once(monkeypatch, work, threads=4) -> int:
    """The most parses `work` ran at the same time, called from `threads` threads at once."""
    real, lock = ast.parse, threading.Lock()
    running, most = [0], [0]

    def slow_parse(*args, **kwargs):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)  # long enough that another thread's call would overlap it
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(ast, "parse", slow_parse)
    start = threading.Barrier(threads)

    def run():
        start.wait()
        for _ in range(3):
            work()

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return most[0]


def test_threads_reading_todos_and_screening_parse_one_at_a_time(monkeypatch, course):
    def work():
        assert todo_state(SOURCE).todos == (1,)
        assert screen(SOURCE, "stage.py", course.rules) == []

    assert parses_at_once(monkeypatch, work) == 1


def test_a_batch_s_workers_choosing_tracks_parse_one_at_a_time(monkeypatch, course, tmp_path):
    stage = course.stages[0]
    for track, module in stage.modules.items():
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text(SOURCE, encoding="utf-8")

    def work():
        assert started_stages(course.stages, tmp_path) == {t: [stage.id] for t in stage.modules}

    assert parses_at_once(monkeypatch, work) == 1


def test_the_count_sees_threads_that_parse_at_once(monkeypatch):
    """The count itself: threads calling ast.parse directly do overlap."""
    assert parses_at_once(monkeypatch, lambda: ast.parse(SOURCE)) > 1


def test_no_parse_of_the_grader_s_goes_around_the_lock():
    # ast.parse, ast.literal_eval and the builtin compile (not re's, torch's or a method)
    around = re.compile(r"\bast\.(parse|literal_eval)\(|(?<![\w.])compile\(")
    found = [f"{path.relative_to(GRADER)}:{n}: {line.strip()}"
             for path in sorted(GRADER.rglob("*.py")) if path.name != "syntax.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if around.search(line) and not line.lstrip().startswith("def ")]
    assert found == [], "parse through grader.syntax:\n" + "\n".join(found)
