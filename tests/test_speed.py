"""Speed grading, with the GPU timing replaced by fixed samples so it runs on a CPU.

What is checked here is everything around the measurement: gating (GPU only, correctness
first, thresholds per backend), verdicts and points, the pytest-benchmark record, the JSON
and the scorecard. The measurement itself (grader/timing.py) runs on the GPU through
scripts/device-check.sh.
"""

import dataclasses
import json

import pytest
from conftest import ROOT, broken, vector_add_course

from grader import backends, ceilings, speed, timing
from grader.course import load_course
from grader.errors import CourseError
from grader.results import Status
from grader.problems import PROBLEMS
from grader.sandbox import Runner

COURSE = vector_add_course('[ { n = 100, dtypes = ["float32"] } ]', """
[stages.speed]
points = 4
baseline = "torch"
seconds = 1
cases = [ { n = 3000, dtypes = ["float32"] }, { n = 5000, dtypes = ["float32"] } ]
thresholds.triton = { min_speedup = THRESHOLD }
""")

FAKE_LIMITS = ceilings.Ceilings("Fake GPU", memory_gbps=1000.0, tflops={"float32": 100.0})


# In milliseconds: short enough for a rate that shows at the one decimal the grader keeps.
TIMES = {"student": [0.01, 0.01, 0.011, 0.009], "baseline": [0.02, 0.02, 0.022, 0.018]}
REFERENCE = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()


@pytest.fixture
def fake_gpu_timing(monkeypatch):
    """Kernel 10 us, baseline 20 us, whatever runs: speed-up 2. The submission still runs (in
    its child process) so that the output of the "timed" call is its own."""

    def time(self, problem_id, params, dtype, seed, baseline, seconds, output_bytes):
        inputs = PROBLEMS[problem_id].draw(params, dtype, seed).tensors()
        outcome = self.call(problem_id, params, dtype, seed, inputs, output_bytes)
        return {k: list(v) for k, v in TIMES.items()}, outcome.output, outcome.error

    def measure(candidates, budget=timing.Budget()):  # the grader's own look at the baseline
        for fn in candidates.values():
            fn()
        return {name: timing.Samples(list(TIMES["baseline"])) for name in candidates}

    monkeypatch.setattr(Runner, "time", time)
    monkeypatch.setattr(timing, "measure", measure)
    monkeypatch.setattr(ceilings, "ceilings", lambda: FAKE_LIMITS)
    monkeypatch.setattr(speed, "not_graded_reason", lambda stage, selection: None)
    interpret = backends.select("triton-interpret")
    # Named like the GPU backend so that course.toml's thresholds.triton applies.
    return backends.Selection(dataclasses.replace(interpret.backend, name="triton"), "test")


@pytest.fixture
def grade(grade_source, fake_gpu_timing):
    """Grade a vector_add submission (the reference unless given) on the speed course, with
    `threshold` as the minimum speed-up, under the fake GPU timing."""

    def run(threshold, source=REFERENCE, benchmark_json=None):
        return grade_source("vector_add", source, backend=fake_gpu_timing,
                            course_toml=COURSE.replace("THRESHOLD", str(threshold)),
                            benchmark_json=benchmark_json)

    return run


def test_fast_enough_earns_the_speed_points(tmp_path, grade):
    record = tmp_path / "bench.json"
    result = grade(1.5, benchmark_json=record)
    assert result.status is Status.PASS
    assert result.speed.graded and result.speed.points == 4 and result.speed.max_points == 4
    assert result.total_points == 14 and result.total_max_points == 14
    assert len(result.speed.cases) == 2
    case = result.speed.cases[0]
    assert case.passed and case.speedup == 2.0 and case.ms == 0.01 and case.baseline_ms == 0.02
    # 3 * 3000 float32 elements = 36000 bytes in 10 us = 3.6 GB/s of a 1000 GB/s ceiling.
    assert case.unit == "GB/s" and case.achieved == 3.6 and case.ceiling == 1000.0
    assert case.fraction == 0.004
    assert "2.00x" in case.summary and "3.6 GB/s" in case.summary
    assert result.speed.cases[1].achieved == 6.0  # 3 * 5000 * 4 bytes in 10 us

    data = json.loads(record.read_text())
    (first, second) = data["benchmarks"]
    assert first["group"] == "vector_add" and first["stats"]["rounds"] == 4
    assert first["stats"]["median"] == pytest.approx(1.0e-5)
    assert first["extra_info"]["speedup"] == 2.0 and first["extra_info"]["baseline"] == "torch"


def test_too_slow_gets_no_speed_points_and_says_why(grade):
    result = grade(3)
    assert result.status is Status.PASS and result.speed.graded
    assert result.speed.points == 0 and result.total_max_points == 14
    assert len(result.speed.cases) == 2
    assert all("too slow" in c.summary and "needs 3x torch" in c.summary for c in result.speed.cases)


def test_speed_waits_for_correctness(grade):
    result = grade(1.5, broken("triton", "stage1_vector_add.py", "x + y, mask=mask)", "x - y, mask=mask)"))
    assert result.status is Status.FAIL
    assert not result.speed.graded and result.speed.reason == "needs all correctness cases to pass first"
    assert result.total_max_points == 10


def test_no_gpu_means_not_graded(course, interpret):
    stage = course.select("matmul")
    assert speed.not_graded_reason(stage, interpret) == "needs a GPU"


def test_every_stage_has_speed_thresholds_for_both_gpu_backends(course):
    for stage in course.stages:
        assert stage.speed and stage.speed.cases, stage.id
        assert set(stage.speed.thresholds) == {"triton", "cutile"}, stage.id
        assert stage.speed.baseline in stage.problem.baselines


def test_speed_section_is_validated(tmp_path):
    path = tmp_path / "course.toml"
    text = COURSE.replace("THRESHOLD", "1").replace('baseline = "torch"', 'baseline = "numpy"')
    text = text.replace("thresholds.triton = { min_speedup = 1 }",
                        "thresholds.triton = { min_speedup = 0 }\nthresholds.triton-interpret = { min_speedup = 1 }")
    path.write_text(text)
    with pytest.raises(CourseError) as info:
        load_course(path)
    message = str(info.value)
    assert "stages[0].speed.baseline: unknown baseline 'numpy'" in message
    assert "stages[0].speed.thresholds.triton.min_speedup: must be positive" in message
    assert "stages[0].speed.thresholds.triton-interpret: unknown key" in message


def test_calibrate_writes_thresholds_in_place_and_keeps_a_backup(tmp_path, course):
    from grader.calibrate import Calibration, write_thresholds
    from grader.course import Threshold

    path = tmp_path / "course.toml"
    original = course.path.read_text()
    path.write_text(original)
    # Values that differ from what course.toml holds now, so that each line must change.
    new_softmax = course.select("softmax").speed.thresholds["triton"].min_speedup + 0.05
    new_matmul = course.select("matmul").speed.thresholds["cutile"].min_speedup + 0.05
    found = [Calibration("softmax", "triton", [], Threshold(min_speedup=round(new_softmax, 2))),
             Calibration("matmul", "cutile", [], Threshold(min_speedup=round(new_matmul, 2)))]
    kept = write_thresholds(path, found)
    assert kept.read_text() == original
    updated = load_course(path)
    assert updated.select("softmax").speed.thresholds["triton"].min_speedup == round(new_softmax, 2)
    assert updated.select("matmul").speed.thresholds["cutile"].min_speedup == round(new_matmul, 2)
    assert updated.select("matmul").speed.thresholds["triton"] == course.select("matmul").speed.thresholds["triton"]
    # Everything else, comments included, is unchanged.
    before, after = original.splitlines(), path.read_text().splitlines()
    assert len(before) == len(after)
    assert sum(a != b for a, b in zip(before, after)) == 2


def test_the_speed_table_names_the_kind_of_each_failure():
    from rich.console import Console

    from grader.results import Report, SpeedCase, SpeedResult, StageResult
    from grader.scorecard import _speed_table

    summaries = {"slow": "too slow: 2 ms vs torch 1 ms", "altered": "timing rejected: 900% of the ceiling",
                 "wrong": "the timed calls returned a wrong result: NaN", "ok": "1 ms vs torch 2 ms"}
    cases = [SpeedCase(id=name, dtype="float32", params={}, passed=name == "ok", summary=text,
                       ms=1.0, baseline="torch") for name, text in summaries.items()]
    stage = StageResult(number=1, id="vector_add", title="", backend="triton", module="m.py",
                        max_points=10, speed=SpeedResult(True, "", cases=cases))
    report = Report(course="c", target="solutions", backend="triton", backend_reason="",
                    machine={}, started_at="", stages=[stage])
    console = Console(width=200)  # one line per row, whatever the terminal
    with console.capture() as captured:
        console.print(_speed_table(report))
    rows = {line.split("│")[2].strip(): line for line in captured.get().splitlines() if line.count("│") > 3}
    assert "too slow" in rows["slow"] and "timing rejected" in rows["altered"]
    assert "the timed calls returned a wrong" in rows["wrong"] and "fast enough" in rows["ok"]
