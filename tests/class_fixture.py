"""A graded class as `grade batch` leaves it in OUT, without grading anyone: the class
report's tests (tests/instructor/test_class_report*.py) read it.

Each student's result is a Report of the real course's stages and cases, written as
`grade all --json` writes it (so it follows result.schema.json), graded on a GPU, so that
speed was timed; the figures are drawn from a fixed seed. Besides the ordinary students:
one whose name is markup, whose messages hold markup and a script; one with a name in
several scripts; one whose grading left no result (NAME.error); and one whose stages are
all NOT STARTED.
"""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

from grader.course import Course
from grader.instructor.gradebook import Intake, write_feedback_files, write_intake
from grader.results import (CaseResult, Failure, Report, SpeedCase, SpeedResult, StageResult,
                            Status)

HOSTILE = "<img src=x onerror=alert(1)>&amp;"  # a file name cannot hold a slash
SCRIPT = "</blockquote><script>alert('cause')</script>"
MARKUP_MESSAGE = "Traceback: <b>boom</b> <a href='http://example.com/x'>link</a>"
NO_RESULT = "ivan"
ERROR_TEXT = "grading took longer than 1800 s <i>really</i>"
IDLE = "nina"  # every stage NOT STARTED
# The hostile student first: their cause's sentence is the example the report quotes.
NAMES = [HOSTILE, "ada", "bob", "carl", "dana", "eve", "fay", "gus", "hal", "José Núñez", IDLE]
MACHINE = {"python": "3.11.7", "torch": "2.5.1", "triton": "3.2.0", "cuda_tile": "1.4.0",
           "gpu": "NVIDIA H100 80GB HBM3", "cuda": "12.4"}
# Confirmed causes a stage's wrong output can show, with the judge's sentence.
CAUSES = {
    "vector_add": ("grid_short", "the programs wrote the first 4096 elements, whole blocks of "
                                 "1024, and nothing after: the grid has too few programs"),
    "softmax": ("no_max_subtraction", "the output is what softmax without subtracting the row "
                                      "maximum computes: exp overflowed"),
    "matmul": ("k_loop", "the output is the product of the first K tile only"),
}


def write_class(out: Path, course: Course, seed: int = 7) -> list[str]:
    """OUT/students/ for a class of the course; returns every student's name."""
    draw = random.Random(seed)
    for index, name in enumerate(NAMES):
        track = "cutile" if index % 4 == 3 else "triton"
        report = Report(course=course.title, target="exercises", backend=track,
                        backend_reason="a CUDA GPU", machine=dict(MACHINE),
                        started_at="2026-12-01T10:00:00+00:00", seed=1234, seconds=95.0,
                        stages=[_stage(stage, track, name, draw) for stage in course.stages])
        report.write_json(out / "students" / f"{name}.json")
        write_intake(out, name, Intake(track, "its stage files are written in " + track))
    write_intake(out, NO_RESULT, Intake("triton", "its stage files import triton"))
    (out / "students" / f"{NO_RESULT}.error").write_text(ERROR_TEXT + "\n")
    names = [*NAMES, NO_RESULT]
    write_feedback_files(out, [SimpleNamespace(name=n) for n in names])
    return names


def _stage(stage, track: str, name: str, draw: random.Random) -> StageResult:
    result = StageResult(number=stage.number, id=stage.id, title=stage.title, backend=track,
                         module=f"exercises/{stage.modules[track]}", max_points=stage.points,
                         seconds=3.0)
    skill = 0.0 if name == HOSTILE and stage.number == 1 else draw.random()
    if name == IDLE or (name != HOSTILE and skill < 0.12 + 0.06 * stage.number):
        result.status, result.message = Status.NOT_STARTED, f"fill in the TODOs of {result.module}"
        result.speed = SpeedResult(False, "not started")
        return result
    if name == HOSTILE and stage.number == 2:
        result.status, result.message = Status.ERROR, MARKUP_MESSAGE
        return result
    shown = [c for c in stage.cases if not c.hidden]
    for case in shown:
        passed = name != HOSTILE and (skill > 0.45 or draw.random() < 0.5)
        result.cases.append(_case(stage, case, passed, name))
    result.conclude(len(shown))
    result.speed = _speed(stage, result, draw)
    return result


def _case(stage, case, passed: bool, name: str) -> CaseResult:
    result = CaseResult(id=case.id, dtype=case.dtype, params=dict(case.params), seed=case.seed,
                        passed=passed, summary="max abs error 0" if passed else
                        "12 of 4096 elements mismatch (0.293%)", seconds=0.2)
    if passed:
        return result
    result.failure = Failure.WRONG_RESULT
    key, text = CAUSES.get(stage.id, ("", ""))
    if name == HOSTILE:
        key, text = key or "grid_short", SCRIPT
    if key:
        result.stats["causes"], result.stats["cause_texts"] = [key], {key: text}
        result.details = ["max abs error 3.5", f"cause: {text}", "first mismatches:"]
    else:
        result.details = ["observed (no single cause confirmed): 12 of 4096 rows are wrong"]
    return result


def _speed(stage, result: StageResult, draw: random.Random) -> SpeedResult:
    if stage.speed is None or result.status is not Status.PASS:
        return SpeedResult(False, "correctness did not pass")
    threshold = stage.speed.threshold("sm_90", result.backend)
    cases = []
    for case in stage.speed.cases:
        speedup = round(threshold.min_speedup * draw.lognormvariate(0.05, 0.3), 3)
        passed = speedup >= threshold.min_speedup
        cases.append(SpeedCase(id=case.id, dtype=case.dtype, params=dict(case.params),
                               passed=passed, summary=f"{speedup:.2f}x", ms=1.0,
                               baseline="torch", baseline_ms=speedup, speedup=speedup,
                               unit="GB/s", achieved=round(2000 * speedup, 1), ceiling=3000.0,
                               failure=None if passed else Failure.TOO_SLOW))
    fast = sum(c.passed for c in cases)
    points = round(stage.speed.points * fast / len(cases), 2)
    return SpeedResult(True, f"{fast}/{len(cases)} speed cases fast enough", points,
                       stage.speed.points, cases)
