"""Speed grading, with the GPU timing replaced by fixed samples so it runs on a CPU.

What is checked here is everything around the measurement: gating (GPU only, correctness
first, thresholds per backend), verdicts and points, the pytest-benchmark record, the JSON
and the scorecard. The measurement itself (grader/timing.py) runs on the GPU through
scripts/device-check.sh.
"""

import dataclasses
import json
import os
import sys
import time

import pytest
import torch
from conftest import ROOT, broken, vector_add_course

from grader import timing
from grader.backends import selection as backends
from grader.course import Threshold, load_course
from grader.errors import CourseError
from grader.grading import stages as grading
from grader.grading.request import GradingRequest, Outputs
from grader.grading.pytest_run import PYTEST_OWN
from grader.problems import PROBLEMS
from grader.results import CaseResult, CheckResult, Failure, Report, Status
from grader.sandbox import ChildProcess, memory_ceiling
from grader.sandbox.replayer import ReplayProcess
from grader.sandbox.outcomes import Batch
from grader.speed import ceilings
from grader.speed import check as speed
from grader.speed import scope
from grader.speed import trial
from grader.speed.trial import TimedCase, Trial

COURSE = vector_add_course('[ { n = 100, dtypes = ["float32"] } ]', """
[stages.speed]
points = 4
baseline = "torch"
seconds = 1
cases = [ { n = 3000, dtypes = ["float32"] }, { n = 5000, dtypes = ["float32"] } ]
thresholds.sm_90.triton = { min_speedup = THRESHOLD }
""")

FAKE_LIMITS = ceilings.Ceilings("Fake GPU", memory_gbps=1000.0, tflops={"float32": 100.0})


# In milliseconds: short enough for a rate that shows at the one decimal the grader keeps.
KERNEL_MS, BASELINE_MS = 0.01, 0.02
REFERENCE = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()


class _Digests:
    """The checksums of a fake batch, computed when the trial looks one up: from the real
    output of the submission for that call's seed."""

    def __init__(self, child, problem_id, params, dtype, seeds, key):
        self.child, self.args, self.seeds, self.key = child, (problem_id, params, dtype), seeds, key

    def __getitem__(self, index):
        output = self.child.fetched(index)
        return None if output is None else timing.digest(output, self.key)


@pytest.fixture
def fake_gpu_timing(monkeypatch):
    """Kernel 10 us, baseline 20 us, whatever runs: speed-up 2. The submission's launches are
    still replayed (in its replay process, on the CPU) for every output the trial checks, so
    that what it checks is its own."""

    def time_batch(self, problem_id, params, dtype, seeds, key, proposal, move=False):
        self.fake_batch = (problem_id, params, dtype, seeds)
        self.fake_proposal = proposal
        self.fake_outputs = {}
        return Batch([KERNEL_MS] * len(seeds), _Digests(self, problem_id, params, dtype, seeds, key),
                     KERNEL_MS * len(seeds))

    def fetched(self, index):
        if index not in self.fake_outputs:
            problem_id, params, dtype, seeds = self.fake_batch
            inputs = PROBLEMS[problem_id].draw(params, dtype, seeds[index]).tensors()
            self.fake_outputs[index] = self.call(problem_id, params, dtype, seeds[index],
                                                 inputs, 1 << 20, self.fake_proposal).output
        return self.fake_outputs[index]

    monkeypatch.setattr(ReplayProcess, "time_batch", time_batch)
    monkeypatch.setattr(ReplayProcess, "fetched", fetched, raising=False)
    monkeypatch.setattr(ReplayProcess, "fetch", lambda self, index, size: self.fetched(index))
    monkeypatch.setattr(Trial, "baseline_batch", lambda self, seeds, key: (
        [BASELINE_MS] * len(seeds), BASELINE_MS * len(seeds)))
    monkeypatch.setattr(ceilings, "ceilings", lambda remeasure=False: FAKE_LIMITS)
    monkeypatch.setattr(scope, "not_graded_reason", lambda stage, selection: None)
    monkeypatch.setattr(speed, "gpu_arch", lambda: "sm_90")
    interpret = backends.select("triton-interpret")
    # Named like the GPU backend so that course.toml's thresholds.sm_90.triton applies.
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
    # The speed trials' parts, by the grader's clock (grade --profile): recording the calls
    # is one phase, whether the stage recorded them all at once or a trial its own.
    parts = {k[len("speed / "):] for k in result.phases if k.startswith("speed / ")}
    assert trial.RECORD_CALLS in parts
    assert {trial.FIRST_BATCHES, trial.BASELINE_BATCHES, trial.REPLAY_BATCHES,
            trial.OUTPUTS_CHECKED, speed.CEILINGS, PYTEST_OWN} <= parts
    assert speed.CEILINGS_AGAIN not in parts  # measured again only when a kernel beats them
    assert not any(p.startswith("record the call") for p in parts - {trial.RECORD_CALLS})

    data = json.loads(record.read_text())
    (first, second) = data["benchmarks"]
    assert first["group"] == "vector_add" and first["stats"]["rounds"] == trial.MIN_BATCHES
    assert first["stats"]["median"] == pytest.approx(1.0e-5)
    assert first["extra_info"]["speedup"] == 2.0 and first["extra_info"]["baseline"] == "torch"


def test_too_slow_gets_no_speed_points_and_says_why(grade):
    result = grade(3)
    assert result.status is Status.PASS and result.speed.graded
    assert result.speed.points == 0 and result.total_max_points == 14
    assert len(result.speed.cases) == 2
    assert all("too slow" in c.summary and "needs 3x torch" in c.summary for c in result.speed.cases)
    assert all(c.failure is Failure.TOO_SLOW for c in result.speed.cases)


def test_speed_waits_for_correctness(grade):
    result = grade(1.5, broken("triton", "stage1_vector_add.py", "x + y, mask=mask)", "x - y, mask=mask)"))
    assert result.status is Status.FAIL
    assert not result.speed.graded and result.speed.reason == "needs all correctness cases to pass first"
    assert result.total_max_points == 10


def test_ctrl_c_while_a_stage_is_timed_stops_the_run_and_ends_its_processes(
        tmp_path, fake_gpu_timing, monkeypatch):
    """`grade` times a stage after every stage's cases: Ctrl-C then keeps no half-graded
    stage (its cases were judged, its speed not timed), and ends its processes."""
    (tmp_path / "course.toml").write_text(COURSE.replace("THRESHOLD", "1.5"), encoding="utf-8")
    course = load_course(tmp_path / "course.toml")
    module = tmp_path / "vector_add_submission.py"
    module.write_text(REFERENCE, encoding="utf-8")
    so_far = tmp_path / "so-far.json"
    request = GradingRequest(course, (course.select("vector_add"),), backends.AUTO,
                             module=module, outputs=Outputs(so_far=so_far))
    resolved = dataclasses.replace(request.resolve(), selection=fake_gpu_timing)
    seen = []
    batch = Trial.baseline_batch

    def interrupted(self, seeds, key):  # Ctrl-C once the submission's replay runs
        if self.replay_process.running:
            seen.append(self.replay_process)
            raise KeyboardInterrupt
        return batch(self, seeds, key)

    monkeypatch.setattr(Trial, "baseline_batch", interrupted)
    with pytest.raises(grading.Interrupted) as stop:
        grading.grade(resolved)
    assert stop.value.report.stages == [] and "vector_add" in stop.value.stage
    assert not so_far.exists()
    assert len(seen) == 1 and not seen[0].running


def test_a_speed_case_in_a_dtype_this_gpu_lacks_is_not_graded(grade, monkeypatch):
    monkeypatch.setattr(speed, "dtype_unsupported", lambda dtype, device: "fp32 needs sm_99")
    result = grade(1.5)
    assert result.speed.graded and result.speed.points == 0
    assert result.speed.reason == "0/2 speed cases fast enough (2 not graded on this GPU)"
    assert all(c.failure is Failure.NOT_GRADED and c.summary == "not graded on this GPU: fp32 "
               "needs sm_99" for c in result.speed.cases)


@pytest.mark.parametrize("threshold, trials", [(1.5, 1), (2.02, 2), (1.97, 2), (2.5, 1)])
def test_a_speed_up_within_the_noise_of_its_threshold_is_timed_again(grade, monkeypatch,
                                                                       threshold, trials):
    """The fake kernel's speed-up is 2.0: within 2% of the threshold it is timed a second
    time and judged over both trials' batches; further away one trial decides."""
    runs = []
    real = Trial.run
    monkeypatch.setattr(Trial, "run", lambda self: runs.append(1) or real(self))
    result = grade(threshold)
    assert len(runs) == 2 * trials  # two speed cases
    assert all(c.repeats == trials * trial.MIN_BATCHES for c in result.speed.cases)
    assert result.speed.points == (4 if threshold < 2 else 0)


def test_a_threshold_names_each_figure_that_falls_short():
    both = Threshold(min_speedup=1.15, min_fraction=0.75)
    assert both.missed(1.2, 0.8, "torch") == []
    assert both.missed(1.1, 0.8, "torch") == ["needs 1.15x torch"]
    assert both.missed(1.1, 0.7, "sdpa-flash") == ["needs 1.15x sdpa-flash", "needs 75% of the limit"]
    assert Threshold(min_fraction=0.75).missed(0.1, 0.75, "torch") == []  # at it is enough


def test_the_limit_of_a_case_is_its_roofline():
    """The longer of moving the bytes and doing the FLOPs: a kernel with FLOPs but few per
    byte is judged against memory, not against the tensor cores' peak."""
    limits = ceilings.Ceilings("GPU", memory_gbps=1000.0, tflops={"bfloat16": 100.0})
    few = limits.roofline(PROBLEMS["matmul"].work({"M": 4096, "N": 4096, "K": 1}, torch.bfloat16),
                          "bfloat16")
    assert few.unit == "GB/s" and few.ceiling == 1000.0
    assert few.seconds == pytest.approx((2 * 4096 + 4096 * 4096) * 2 / 1e12)
    many = limits.roofline(PROBLEMS["matmul"].work({"M": 4096, "N": 4096, "K": 4096},
                                                   torch.bfloat16), "bfloat16")
    assert many.unit == "TFLOP/s" and many.seconds == pytest.approx(2 * 4096**3 / 1e14)
    assert many.fraction(2 * many.seconds) == 0.5 and many.achieved(2 * many.seconds) == 50.0
    copy = limits.roofline(PROBLEMS["vector_add"].work({"n": 1000}, torch.float32), "float32")
    assert copy.unit == "GB/s" and copy.seconds == pytest.approx(12000 / 1e12)


@pytest.mark.parametrize("fresh_gbps, rejected", [(1000.0, False), (0.01, True)])
def test_a_stale_ceiling_is_measured_again_before_the_timing_is_rejected(
        grade, monkeypatch, fresh_gbps, rejected):
    """A cached ceiling measured on a busy GPU is too low: a kernel that seems to beat it is
    first checked against a fresh measurement; beating that one too is tampering."""
    stale = dataclasses.replace(FAKE_LIMITS, memory_gbps=0.01)
    fresh = dataclasses.replace(FAKE_LIMITS, memory_gbps=fresh_gbps)
    asked = []
    monkeypatch.setattr(ceilings, "ceilings", lambda remeasure=False: (
        asked.append(remeasure) or (fresh if remeasure else stale)))
    result = grade(1.5)
    assert True in asked
    if rejected:
        assert all(c.failure is Failure.TIMING_REJECTED and "of the GPU's measured ceiling is "
                   "not possible" in c.summary for c in result.speed.cases)
    else:
        assert result.speed.points == 4 and result.speed.cases[0].ceiling == 1000.0


def test_the_l2_flush_only_reads(monkeypatch):
    """Zeroing the flush buffer would leave L2 full of dirty lines, written back during the
    next timed call; a read leaves clean lines. A write would bump the tensor's version."""
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: type("Props", (), {"L2_cache_size": 4096})())
    flush = timing.L2Flush(torch.device("cpu"))
    assert flush.buffer.numel() * flush.buffer.element_size() == 2 * 4096
    version = flush.buffer._version
    flush()
    flush()
    assert flush.buffer._version == version


def test_measure_rotates_the_order_of_the_candidates(monkeypatch):
    """Timed side by side in a fixed order, the first candidate would always be the first
    call after a synchronisation and always follow the last one. Every candidate must take
    every place in the order equally often, and keep its own samples."""
    calls = []

    class Event:
        def __init__(self, enable_timing):
            self.at = None

        def record(self):
            self.at = len(calls)

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(timing, "L2Flush", lambda device: lambda: None)
    monkeypatch.setattr(timing, "_Event", Event)
    monkeypatch.setattr(timing, "_synchronize", lambda: None)
    # A call's "time" is the place it took in its round, so the samples say where it ran.
    monkeypatch.setattr(timing, "_elapsed_time", lambda start, end: float(start.at % 3))
    names = ["a", "b", "c"]
    candidates = {name: (lambda name=name: calls.append(name)) for name in names}
    budget = timing.Budget(seconds=0.0, warmup=1, min_repeats=30, max_repeats=30)
    samples = timing.measure(candidates, budget)
    timed = calls[len(names):]  # after one warm-up call each
    assert len(timed) == 3 * 30
    rounds = [timed[i:i + 3] for i in range(0, len(timed), 3)]
    assert all(sorted(r) == names for r in rounds)
    for name in names:
        places = [r.index(name) for r in rounds]
        assert [places.count(k) for k in range(3)] == [10, 10, 10], name
        assert sorted(samples[name].times_ms) == sorted(float(k) for k in places)


def test_measure_flushes_with_the_flush_it_is_given_before_every_call(monkeypatch):
    """scripts/flush_check.py and clock_gap_check.py time with another flush through
    timing.measure itself: the flush given runs before every call, warm-up calls excepted."""
    calls = []
    monkeypatch.setattr(timing, "L2Flush", lambda device: pytest.fail("default flush made"))
    monkeypatch.setattr(timing, "_Event", lambda enable_timing: type("E", (), {"record": lambda self: None})())
    monkeypatch.setattr(timing, "_synchronize", lambda: None)
    monkeypatch.setattr(timing, "_elapsed_time", lambda start, end: 1.0)
    budget = timing.Budget(seconds=0.0, warmup=1, min_repeats=10, max_repeats=10)
    timing.measure({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, budget,
                   flush=lambda: calls.append("flush"))
    timed = calls[2:]  # one warm-up call each, unflushed
    assert len(timed) == 40
    assert timed[0::2] == ["flush"] * 20 and sorted(timed[1::2]) == ["a"] * 10 + ["b"] * 10


def test_no_gpu_means_not_graded(course, interpret):
    stage = course.select("matmul")
    assert scope.not_graded_reason(stage, interpret) == "needs a GPU"


def _case(name: str, passed: bool, failure: Failure | None = None) -> CaseResult:
    return CaseResult(name, "float32", {}, 0, passed, "", failure=failure)


@pytest.mark.parametrize("cases, checks, timed", [
    ([True, True], [], True),
    ([True, Failure.NOT_GRADED], [], True),  # bf16 on a T4: partly graded, still timed
    ([True, Failure.WRONG_RESULT], [], False),
    ([True], [], False),  # a case not checked yet
    ([Failure.NOT_GRADED, Failure.NOT_GRADED], [], False),  # nothing checked here
    ([True, True], [CheckResult("memory", True, False, "grew")], False),
    ([True, True], [CheckResult("compiles for a GPU", False, False, "not graded")], True),
])
def test_grade_and_plain_pytest_time_speed_after_the_same_results(
        monkeypatch, course, interpret, cases, checks, timed):
    """The one decision both front ends take (grader.grading.session): speed is timed once
    every case that could run here passed and no check failed."""
    from grader.grading.request import GradingRequest
    from grader.grading.session import NEEDS_CORRECTNESS, StageSession

    monkeypatch.setattr(scope, "not_graded_reason", lambda stage, selection: None)
    stage = course.select("vector_add")
    two = dataclasses.replace(stage, cases=stage.cases[:2])
    grading = GradingRequest(course, (two,), interpret.backend.name, module=ROOT / "none.py",
                             seed=0).resolve()
    session = StageSession(grading, two)
    results = [_case(str(i), c is True, None if c is True else c) for i, c in enumerate(cases)]
    assert session.not_timed(results, checks) == (None if timed else NEEDS_CORRECTNESS)


def test_every_stage_has_speed_thresholds_per_architecture(course):
    """Calibrated on sm_90 for both backends; sm_80 and sm_75 (Triton only: cuTile does
    not run on a T4) are marked as copies, so the scorecard can say so."""
    for stage in course.stages:
        assert stage.speed and stage.speed.cases, stage.id
        thresholds = stage.speed.thresholds
        assert set(thresholds) == {"sm_90", "sm_80", "sm_75"}, stage.id
        assert set(thresholds["sm_90"]) == set(thresholds["sm_80"]) == {"triton", "cutile"}
        assert set(thresholds["sm_75"]) == {"triton"}, stage.id
        assert all(t.copied_from is None for t in thresholds["sm_90"].values())
        assert all(t.copied_from == "sm_90" for arch in ("sm_80", "sm_75")
                   for t in thresholds[arch].values())
        assert stage.speed.baseline in stage.problem.baselines
        # a T4 has no bf16 arithmetic: its speed points need a case in another dtype
        assert any(c.dtype != "bfloat16" for c in stage.speed.cases), stage.id


@pytest.mark.parametrize("arch, backend, graded", [
    ("sm_90", "triton", True), ("sm_80", "cutile", True), ("sm_75", "triton", True),
    ("sm_75", "cutile", False), ("sm_89", "triton", False), ("sm_120", "cutile", False)])
def test_a_gpu_without_thresholds_for_its_architecture_is_not_graded(
        monkeypatch, course, arch, backend, graded):
    monkeypatch.setattr(scope, "gpu_arch", lambda: arch)
    monkeypatch.setattr(scope, "gpu_name", lambda: "Some GPU")
    gpu = backends.Selection(dataclasses.replace(backends.BACKENDS[backend], device="cuda"), "test")
    reason = scope.not_graded_reason(course.select("matmul"), gpu)
    if graded:
        assert reason is None
    else:
        assert reason == (f"no thresholds for Some GPU ({arch}) with {backend} in course.toml; "
                          "run `grade calibrate --write` on this GPU")


def test_thresholds_keyed_by_backend_name_the_new_layout(tmp_path):
    path = tmp_path / "course.toml"
    path.write_text(COURSE.replace("THRESHOLD", "1").replace("thresholds.sm_90.triton", "thresholds.triton"))
    with pytest.raises(CourseError) as info:
        load_course(path)
    assert ("stages[0].speed.thresholds: 'triton' is not a GPU architecture. Thresholds are set "
            "per architecture, then backend: thresholds.sm_90.triton = { min_speedup = 1.2 }"
            in str(info.value))


def test_a_copied_threshold_names_an_architecture_of_the_table(tmp_path):
    path = tmp_path / "course.toml"
    path.write_text(COURSE.replace("THRESHOLD", "1") +
                    'thresholds.sm_80.triton = { min_speedup = 1, copied_from = "sm_86" }\n')
    with pytest.raises(CourseError, match=r"thresholds.sm_80.triton.copied_from: names 'sm_86', "
                                          r"which has no thresholds of its own here; known: sm_90"):
        load_course(path)


def test_an_architecture_s_baseline_must_be_one_of_the_problem_s(tmp_path):
    path = tmp_path / "course.toml"
    path.write_text(COURSE.replace("THRESHOLD", "1") +
                    'thresholds.sm_75.triton = { min_speedup = 1, baseline = "cudnn" }\n')
    with pytest.raises(CourseError, match=r"thresholds.sm_75.triton.baseline: names 'cudnn', "
                                          r"which is not a baseline of vector_add"):
        load_course(path)


@pytest.mark.parametrize("arch, timed", [("sm_90", "sdpa-flash"), ("sm_75", "torch")])
def test_the_baseline_timed_is_the_architecture_s_where_it_names_one(monkeypatch, course, arch,
                                                                      timed):
    """SDPA's FlashAttention backend needs sm_80: on a T4, stage 5 is timed against SDPA's own
    choice, in fp16 (a T4 has no bf16 arithmetic), so its speed points can be earned."""
    monkeypatch.setattr(speed, "gpu_arch", lambda: arch)
    stage = course.select("flash_attention")
    triton = dataclasses.replace(backends.BACKENDS["triton"], device="cuda")
    check = speed.SpeedCheck(stage, backends.Selection(triton, "test"), child=None)
    assert check.baseline == timed
    assert check._trial(stage.speed.cases[0]).baseline is stage.problem.baselines[timed]
    assert any(c.dtype == "float16" for c in stage.speed.cases)


def test_a_copied_threshold_is_named_in_the_verdict(grade_source, fake_gpu_timing, monkeypatch):
    monkeypatch.setattr(speed, "gpu_arch", lambda: "sm_80")
    toml = COURSE.replace("THRESHOLD", "1.5").replace(
        "thresholds.sm_90.triton = { min_speedup = 1.5 }",
        'thresholds.sm_90.triton = { min_speedup = 9 }\n'
        'thresholds.sm_80.triton = { min_speedup = 1.5, copied_from = "sm_90" }')
    result = grade_source("vector_add", REFERENCE, backend=fake_gpu_timing, course_toml=toml)
    assert result.speed.points == 4  # sm_80's 1.5, not sm_90's 9
    assert all("(threshold copied from sm_90: not yet calibrated on sm_80)" in c.summary
               for c in result.speed.cases)


def test_speed_section_is_validated(tmp_path):
    path = tmp_path / "course.toml"
    text = COURSE.replace("THRESHOLD", "1").replace('baseline = "torch"', 'baseline = "numpy"')
    text = text.replace("thresholds.sm_90.triton = { min_speedup = 1 }",
                        "thresholds.sm_90.triton = { min_speedup = 0 }\n"
                        "thresholds.sm_90.triton-interpret = { min_speedup = 1 }")
    path.write_text(text)
    with pytest.raises(CourseError) as info:
        load_course(path)
    message = str(info.value)
    assert "stages[0].speed.baseline: unknown baseline 'numpy'" in message
    assert "stages[0].speed.thresholds.sm_90.triton.min_speedup: must be positive" in message
    assert "stages[0].speed.thresholds.sm_90.triton-interpret: unknown key" in message


def test_calibrate_writes_thresholds_in_place_and_keeps_a_backup(tmp_path, course):
    from grader.course import Threshold
    from grader.instructor.calibrate import Calibration, write_thresholds

    path = tmp_path / "course.toml"
    original = course.path.read_text()
    path.write_text(original)
    # Values that differ from what course.toml holds now, so that each line must change.
    sm90, sm80 = (course.select(s).speed.thresholds[a] for s, a in (("softmax", "sm_90"),
                                                                      ("matmul", "sm_80")))
    new_softmax = round(sm90["triton"].min_speedup + 0.05, 2)
    new_matmul = round(sm80["cutile"].min_speedup + 0.05, 2)
    found = [Calibration("softmax", "triton", [], Threshold(min_speedup=new_softmax), "sm_90"),
             Calibration("matmul", "cutile", [], Threshold(min_speedup=new_matmul), "sm_80")]
    kept = write_thresholds(path, found)
    assert kept.read_text() == original
    updated = load_course(path)
    assert updated.select("softmax").speed.threshold("sm_90", "triton").min_speedup == new_softmax
    # Measured on sm_80 now: no longer a copy of sm_90's figure.
    assert updated.select("matmul").speed.threshold("sm_80", "cutile") == Threshold(new_matmul)
    assert (updated.select("matmul").speed.threshold("sm_90", "cutile")
            == course.select("matmul").speed.threshold("sm_90", "cutile"))
    assert (updated.select("matmul").speed.thresholds["sm_80"]["triton"]
            == course.select("matmul").speed.thresholds["sm_80"]["triton"])
    # Everything else, comments included, is unchanged.
    before, after = original.splitlines(), path.read_text().splitlines()
    assert len(before) == len(after)
    assert sum(a != b for a, b in zip(before, after)) == 2


def test_the_speed_table_names_the_kind_of_each_failure():
    from rich.console import Console

    from grader.results import Failure, Report, SpeedCase, SpeedResult, StageResult
    from grader.report.scorecard import _speed_table

    summaries = {"slow": ("too slow: 2 ms vs torch 1 ms", Failure.TOO_SLOW),
                 "altered": ("timing rejected: 900% of the ceiling", Failure.TIMING_REJECTED),
                 "wrong": ("the timed calls returned a wrong result: NaN", Failure.WRONG_RESULT),
                 "ok": ("1 ms vs torch 2 ms", None)}
    cases = [SpeedCase(id=name, dtype="float32", params={}, passed=name == "ok", summary=text,
                       ms=1.0, baseline="torch", failure=failure)
             for name, (text, failure) in summaries.items()]
    stage = StageResult(number=1, id="vector_add", title="", backend="triton", module="m.py",
                        max_points=10, speed=SpeedResult(True, "", cases=cases))
    report = Report(course="c", target="solutions", backend="triton", backend_reason="",
                    machine={}, started_at="", stages=[stage])
    console = Console(width=200)  # one line per row, whatever the terminal
    with console.capture() as captured:
        console.print(_speed_table(report))
    rows = {line.split("│")[2].strip(): line for line in captured.get().splitlines() if line.count("│") > 3}
    assert "too slow" in rows["slow"] and "timing rejected" in rows["altered"]
    assert "wrong result" in rows["wrong"] and "fast enough" in rows["ok"]


# --- the grader's checks of what the child says about its timed calls ---------------------


def test_times_the_graders_clock_contradicts_are_rejected(grade, monkeypatch):
    """A child that reports 10 us per call while its batch takes the grader 10 ms per call
    (a patched timer, work on another stream, a GPU sleep)."""
    fake = ReplayProcess.time_batch

    def slow(self, *args):
        batch = fake(self, *args)
        return Batch(batch.times_ms, batch.digests, 10.0 * len(batch.times_ms))

    monkeypatch.setattr(ReplayProcess, "time_batch", slow)
    result = grade(1.5)
    assert result.speed.points == 0
    for case in result.speed.cases:
        assert case.summary.startswith("timing rejected: the grader's clock saw")
        assert case.failure is Failure.TIMING_REJECTED
        assert "more than the same batch of the baseline spent around its calls" in case.summary
        assert "a first trial was rejected likewise" in case.summary


def test_both_sides_batches_are_timed_with_the_garbage_collector_held_off(grade, monkeypatch):
    """A collection inside one side's batch would count against that side alone (the
    grader's clock saw milliseconds more): both sides' batches run with the collector off,
    and it is back on after every batch, as timeit does."""
    import gc

    fake, seen = ReplayProcess.time_batch, []

    def watched(self, *args):
        seen.append(gc.isenabled())
        switches.append(sys.getswitchinterval())
        measuring.append(memory_ceiling._steady.is_set())
        return fake(self, *args)

    switches, measuring = [], []
    monkeypatch.setattr(ReplayProcess, "time_batch", watched)
    assert gc.isenabled()
    result = grade(1.5)
    assert result.speed.points > 0 and seen and not any(seen) and gc.isenabled()
    # nor another thread of the grader: handed the interpreter back at once, and the memory
    # ceiling measuring nothing until the batch is done
    assert switches == pytest.approx([timing.QUICK_SWITCH_SECONDS] * len(switches))
    assert not any(measuring)
    assert sys.getswitchinterval() == pytest.approx(0.005) and memory_ceiling._steady.is_set()
    with timing.collector_paused():
        assert not gc.isenabled()
        with timing.collector_paused():  # nested: the outer one turns it back on
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_quick_switches_give_the_interval_back_after_the_batch():
    before, quick = sys.getswitchinterval(), pytest.approx(timing.QUICK_SWITCH_SECONDS)
    with timing.quick_switches():
        assert sys.getswitchinterval() == quick
        with timing.quick_switches():  # nested: the outer one gives the interval back
            assert sys.getswitchinterval() == quick
        assert sys.getswitchinterval() == quick
    assert sys.getswitchinterval() == before
    with pytest.raises(RuntimeError), timing.quick_switches():
        raise RuntimeError("a batch that failed")
    assert sys.getswitchinterval() == before


def test_the_memory_ceiling_measures_nothing_while_a_batch_is_timed(monkeypatch):
    measured = []
    monkeypatch.setattr(memory_ceiling, "PERIOD", 0.02)
    monkeypatch.setattr(memory_ceiling, "tree_bytes", lambda root, parents=None, shares=False:
                        measured.append(root) or 0)
    memory_ceiling.watch(os.getpid())
    try:
        time.sleep(0.2)
        assert measured  # it measures, every PERIOD
        with memory_ceiling.held_off():
            time.sleep(0.1)  # one measurement under way may finish
            count = len(measured)
            time.sleep(0.3)
            assert len(measured) == count
        time.sleep(0.3)
        assert len(measured) > count  # and again once the batch is done
    finally:
        memory_ceiling.forget(os.getpid())


def test_the_baseline_batch_runs_with_the_garbage_collector_held_off(monkeypatch):
    import gc

    seen = []
    monkeypatch.setattr(timing, "run_batch", lambda *a: seen.append(gc.isenabled()) or ([1.0], []))
    monkeypatch.setattr(timing, "synchronize", lambda: None)
    trial = Trial.__new__(Trial)
    trial.device, trial.baseline, trial.problem = "cpu", None, None
    trial._l2, trial.placements = None, None
    assert trial.baseline_batch([1], key=3)[0] == [1.0]
    assert seen == [False] and gc.isenabled()


def test_the_replay_runs_its_timed_batch_with_the_garbage_collector_held_off(monkeypatch):
    import gc

    from grader.sandbox.replayer import ReplayWorker

    seen = []
    monkeypatch.setattr(timing, "run_batch", lambda prepare, call, count, flush, place:
                        seen.append(gc.isenabled()) or ([], []))
    worker = ReplayWorker.__new__(ReplayWorker)
    worker.between, worker.kept = (None, None), []
    value, _ = worker.time_batch("vector_add", {}, "float32", [], 1, {})
    assert seen == [False] and gc.isenabled() and value["times"] == []


# The replay's batches in order: 0 the first (not counted), 1 and 2 counted, 3 after a move
# (not counted), ...
@pytest.mark.parametrize("noisy, trials", [({1}, 1), ({1, 2}, 2)])
def test_one_batch_over_its_allowance_is_timed_again(grade, monkeypatch, noisy, trials):
    """An honest kernel's batch can take a few ms more than allowed once (seen on the
    H200); that batch is dropped and another timed. A second one rejects the trial, and the
    case is timed in a second trial, which stands (a disturbance of the machine can last
    two batches; hidden work shows in every trial)."""
    fake = ReplayProcess.time_batch
    batches = iter(range(10**6))

    def noisy_batches(self, *args):
        batch = fake(self, *args)
        extra = 20.0 if next(batches) in noisy else 0.0
        return Batch(batch.times_ms, batch.digests, batch.wall_ms + extra)

    runs = []
    real = Trial.run
    monkeypatch.setattr(Trial, "run", lambda self: runs.append(1) or real(self))
    monkeypatch.setattr(ReplayProcess, "time_batch", noisy_batches)
    result = grade(1.5)
    (first, second) = result.speed.cases
    assert len(runs) == trials + 1  # the second case is timed once
    assert first.passed and first.repeats >= trial.MIN_BATCHES, first.summary
    assert ("timed twice: in the first trial the grader's clock saw more" in first.summary) \
        == (trials == 2)
    assert first.trials_rejected == trials - 1
    assert second.passed and "timed twice" not in second.summary and not second.trials_rejected


def test_the_trials_table_shows_each_case_and_the_trials_rejected(grade, monkeypatch, tmp_path,
                                                                  capsys):
    """`python -m scripts trials RESULT.json`, how a grading's speed trials went: a row per
    speed case, and a line of totals; exit code 1 when a case failed."""
    fake = ReplayProcess.time_batch
    batches = iter(range(10**6))

    def noisy_batches(self, *args):  # the first trial rejected (two batches over), once
        batch = fake(self, *args)
        extra = 20.0 if next(batches) in (1, 2) else 0.0  # 0: the first, not counted
        return Batch(batch.times_ms, batch.digests, batch.wall_ms + extra)

    monkeypatch.setattr(ReplayProcess, "time_batch", noisy_batches)
    passing, failing = tmp_path / "pass.json", tmp_path / "fail.json"
    for path, threshold in ((passing, 1.5), (failing, 2.5)):  # 2.5: too slow
        Report("course", "exercises", "triton", "", {}, "", stages=[grade(threshold)]
               ).write_json(path)
    monkeypatch.setattr(sys, "argv", ["trials", str(passing), str(failing)])
    assert _script("trials_table").main() == 1
    out = capsys.readouterr().out
    assert "vector_add" in out and "too slow" in out
    assert "pass.json: 2 speed cases, 0 failed, 1 trials rejected and timed again" in out
    assert "fail.json: 2 speed cases, 2 failed, 0 trials rejected" in out
    monkeypatch.setattr(sys, "argv", ["trials", str(passing)])
    assert _script("trials_table").main() == 0


def test_a_trial_rejected_for_unseen_work_twice_is_rejected(grade, monkeypatch):
    """From the fourth batch on, every batch takes 20 ms more than its calls: the first
    trial is rejected after its second such batch, and so is the one timed in its place."""
    fake = ReplayProcess.time_batch
    batches = iter(range(10**6))

    def noisy_batches(self, *args):
        batch = fake(self, *args)
        extra = 20.0 if next(batches) >= 3 else 0.0
        return Batch(batch.times_ms, batch.digests, batch.wall_ms + extra)

    monkeypatch.setattr(ReplayProcess, "time_batch", noisy_batches)
    result = grade(1.5)
    assert result.speed.points == 0
    for case in result.speed.cases:
        assert case.failure is Failure.TIMING_REJECTED
        assert case.summary.count("the grader's clock saw") == 2 and "; then " in case.summary
        assert case.summary.endswith("; a first trial was rejected likewise"), case.summary
        assert case.trials_rejected == 2


@pytest.mark.parametrize("hidden, rejected", [((2.5,), True), ((2.5, 0.0, 0.0), False)])
def test_work_hidden_in_every_batch_is_rejected_over_the_median(grade, monkeypatch, hidden,
                                                                rejected):
    """2.5 ms unseen per batch of ten passes one batch's allowance (3 ms + 0.1 ms per call +
    10%) but, in every batch, not the median's (1 ms + 0.05 ms per call + 5%, + 10% of the
    grader's own work around the calls, none here): work on a side
    stream behind a GPU sleep that reports a faster kernel's time. In one batch of three
    only, it is noise, and the timing stands."""
    fake = ReplayProcess.time_batch
    batches = iter(range(10**6))

    def hiding(self, *args):
        batch = fake(self, *args)
        extra = hidden[next(batches) % len(hidden)]
        return Batch(batch.times_ms, batch.digests, batch.wall_ms + extra)

    monkeypatch.setattr(ReplayProcess, "time_batch", hiding)
    result = grade(1.5)
    if rejected:
        assert result.speed.points == 0
        for case in result.speed.cases:
            assert case.failure is Failure.TIMING_REJECTED
            assert "the grader's clock saw a median 2.5 ms per batch more" in case.summary
            assert "a first trial was rejected likewise" in case.summary
    else:
        assert result.speed.points == 4, [c.summary for c in result.speed.cases]


def test_an_output_that_is_not_the_one_committed_to_is_rejected(grade, monkeypatch):
    """Not noise: the trial is not timed again."""
    runs = []
    real = Trial.run
    monkeypatch.setattr(Trial, "run", lambda self: runs.append(1) or real(self))
    monkeypatch.setattr(ReplayProcess, "fetch", lambda self, index, size: self.fetched(index) + 0)
    fetched = ReplayProcess.fetched

    def other(self, index):  # what it sends differs from what it checksummed
        output = fetched(self, index)
        return output if not hasattr(self, "sent") else output * 2

    def fetch(self, index, size):
        self.sent = True
        return other(self, index)

    monkeypatch.setattr(ReplayProcess, "fetch", fetch)
    result = grade(1.5)
    assert result.speed.points == 0
    assert all("its checksum differs" in c.summary for c in result.speed.cases)
    assert len(runs) == 2  # one trial each of the two cases


def test_a_replayed_output_fails_as_a_wrong_result(grade, monkeypatch):
    """Every timed call after the first answers with the first one's output: right for its
    own inputs, wrong for the fresh inputs of every other call."""
    fetched = ReplayProcess.fetched

    def replay(self, index):
        problem_id, params, dtype, seeds = self.fake_batch
        self.fake_batch = (problem_id, params, dtype, [seeds[0]] * len(seeds))
        try:
            return fetched(self, index)
        finally:
            self.fake_batch = (problem_id, params, dtype, seeds)

    monkeypatch.setattr(ReplayProcess, "fetched", replay)
    monkeypatch.setattr(trial.secrets, "randbelow", lambda n: n - 1)  # it checks the last call
    result = grade(1.5)
    assert result.speed.points == 0
    assert all(c.summary.startswith("the timed calls returned a wrong result")
               for c in result.speed.cases), [c.summary for c in result.speed.cases]
    assert all(c.failure is Failure.WRONG_RESULT for c in result.speed.cases)


# Host PyTorch only at the timed sizes, or only once the first call at that size is over:
# the wrapper is called once at the timed size, to record its launches, and the replay of
# those launches is what is timed. The first gets nothing to time, the second is timed on
# the kernel it launched when it was recorded.
AT_TIMED_SIZES = "    if x.numel() >= 3000:\n        return x + y\n"
AFTER_THE_FIRST = ("    if x.numel() >= 3000:\n        SEEN.append(x.numel())\n"
                   "        if len(SEEN) > 1:\n            return x + y\n")


def test_host_pytorch_at_the_timed_sizes_gets_no_speed_points(grade):
    marker = "    out = torch.empty_like(x)\n"
    result = grade(1.5, REFERENCE.replace(marker, AT_TIMED_SIZES + marker))
    assert result.status is Status.PASS  # the graded cases are small: they run the kernel
    assert result.speed.points == 0
    for case in result.speed.cases:
        assert case.failure is Failure.CALLS_FAILED, case.summary
        first, watched, *seen = case.summary.split("\n")
        assert first == ("the timed calls failed: the call at this size: launched no "
                         "Triton kernel: the stage must be computed by a kernel, not by "
                         "PyTorch"), case.summary
        # what the host watch saw in the child, quoted below the grader's words
        assert watched == "what the host watch saw:" and seen and all(
            line.startswith("┆ ") for line in seen), case.summary
        assert "torch.Tensor.add on the host" in seen[0]


def test_host_pytorch_after_the_first_call_earns_only_what_its_kernels_did(grade):
    """Each speed case is recorded once: the first case's recorded call launched the kernel,
    whose replay is timed honestly; by the second case's, the wrapper had turned to PyTorch."""
    marker = "    out = torch.empty_like(x)\n"
    result = grade(1.5, "SEEN = []\n" + REFERENCE.replace(marker, AFTER_THE_FIRST + marker))
    first, second = result.speed.cases
    assert first.passed and first.speedup == 2.0  # the kernel's own speed, replayed
    assert second.failure is Failure.CALLS_FAILED and "launched no Triton kernel" in second.summary
    assert result.speed.points == 2


@pytest.mark.parametrize("dtype, count", [(torch.float32, 37), (torch.float16, 37),
                                          (torch.bfloat16, 64)])
def test_the_output_checksum_sees_every_bit_and_only_the_bits(dtype, count):
    """The child commits to its outputs with grader.timing.digest: any one flipped bit (the
    sign bits included, which wrapping products by an even weight would lose) changes it;
    the same bits give the same number whatever the tensor's layout, and another key another."""
    generator = torch.Generator().manual_seed(0)
    tensor = torch.randn(count, generator=generator).to(dtype)
    key = 2**40 + 7
    committed = timing.digest(tensor, key)
    assert timing.digest(tensor.clone(), key) == committed
    assert timing.digest(tensor.reshape(1, -1).t().contiguous().t(), key) == committed
    assert timing.digest(tensor, key + 1) != committed
    raw = tensor.view(torch.int16 if dtype.itemsize == 2 else torch.int32)
    for index in (0, count // 2, count - 1):
        for bit in range(8 * dtype.itemsize):
            flipped = raw.clone()
            flipped[index] ^= torch.tensor(1 << bit, dtype=torch.int64).to(raw.dtype)
            assert timing.digest(flipped.view(dtype), key) != committed, (index, bit)


def _script(name: str):
    import importlib

    return importlib.import_module(f"scripts.{name}")


def test_the_benchmark_table_marks_where_the_second_opinion_disagrees():
    """scripts/benchmark.py times every row by do_bench too (on a GPU); a gap above 3%
    between the two methods is marked, so a bias of the grader's clock shows."""
    bench = _script("benchmark")
    row = ("matmul", "M=4096", "bfloat16", "triton", 0.2, 700.0, "TFLOP/s", 0.9, 0.95, 0.01, 20)
    agree = bench._cells(row + (0.204, 0.94))
    differ = bench._cells(row + (0.21, 0.93))
    assert agree[-3:] == ["0.2040", "0.94x", "+2.0%"]
    assert differ[-1] == "+5.0% !"


def test_the_clock_gap_table_splits_each_gap_into_flush_and_order():
    """scripts/clock_gap_check.py (on a GPU) times every implementation with either flush in
    either order; its table gives each implementation's flush part (zeroing over reading,
    interleaved) and order part (alone over interleaved, reading), and the speed-ups over
    torch by three of the methods. Without NVML it says once that it has no clock readings."""
    gap = _script("clock_gap_check")
    ms = {"grader.timing": {"triton": 1.0, "torch": 1.0},
          "grader.timing, held": {"triton": 1.01, "torch": 1.0},
          "do_bench": {"triton": 1.2, "torch": 1.0},
          "read-interleaved": {"triton": 1.0, "torch": 0.9},
          "zero-interleaved": {"triton": 1.05, "torch": 0.9},
          "read-alone": {"triton": 1.1, "torch": 0.9},
          "zero-alone": {"triton": 1.2, "torch": 1.0}}
    clocks = {("read-interleaved", "*"): "no clock readings (no NVML)",
              ("read-alone", "triton"): "no clock readings (no NVML)"}
    lines = gap.report("matmul", ms, clocks)
    (triton,) = [line for line in lines if line.startswith("| triton |")]
    assert "| +5.0% | +10.0% | 0.900x / 0.833x / 0.833x |" in triton
    assert lines[-1] == "no clock readings (no NVML)"
    clocks[("read-alone", "triton")] = "1500 MHz, 690 W (power cap)"
    assert "- read-alone, triton: 1500 MHz, 690 W (power cap)" in gap.report("matmul", ms, clocks)


@pytest.mark.parametrize("track", ["triton", "cutile"])
def test_the_repeat_checks_slowed_copy_is_the_reference_and_a_spin_kernel(tmp_path, track):
    """scripts/repeat_check.py tells a kernel 10% slower from the reference (on a GPU). The
    grader replays only kernel launches, so the slowdown must be one: the slowed copy passes
    the grader's intake as a submission would, its recorded call proposes the reference's
    launches and then the spin kernel with the loop count asked, and the replay of that
    proposal, spin included, gives the reference's output."""
    from grader.intake import read_submission
    from grader.sandbox import ChildProcess

    repeat = _script("repeat_check")
    course = load_course(ROOT / "course.toml")
    for stage in course.stages:
        if not stage.speed:
            continue
        path = course.module_path(stage, track, solutions=True)
        copy = tmp_path / f"{stage.id}.py"
        copy.write_text(repeat.slowed_source(path, stage.problem.function, track, 7))
        assert read_submission(copy, copy.name, course.rules).todos == ()
    stage = course.select("softmax")
    copy = tmp_path / "softmax.py"
    problem, params = stage.problem, {"M": 3, "N": 20, "scale": 1.0, "layout": "contiguous",
                                      "rows": "random"}
    child = ChildProcess(copy, problem.function, "cpu", timeout=120.0, rules=course.rules,
                         track=track)
    try:
        proposed = child.record(problem.id, params, "float32", 5)
        assert proposed.proposal and not (proposed.error or proposed.refused), proposed
        launches = [s for s in proposed.proposal["steps"] if s["op"] == "launch"]
        assert len(launches) >= 2 and launches[-1]["kernel"] == "_repeat_spin_kernel"
        assert {"int": 7} in launches[-1]["args"]
        call = problem.draw(params, "float32", 5)
        outcome = child.replay_process.call(problem.id, params, "float32", 5, call.tensors(),
                                            3 * 20 * 4, proposed.proposal)
    finally:
        child.close()
    assert outcome.error is None and outcome.failure is None
    assert torch.allclose(outcome.output, problem.reference(call).float(), atol=1e-5)


def test_every_tuning_sweep_variant_is_an_edit_of_the_reference_it_names(tmp_path):
    """scripts/sweep.py times variants of the references' TUNE places (on a GPU). Each must
    still find its lines in today's reference, change it, and pass the grader's intake; a
    reference edited under it makes the variant fail here, not time a copy of the reference."""
    from grader.intake import read_submission

    sweep = _script("sweep")
    course = load_course(ROOT / "course.toml")
    assert {(v.track, v.stage) for v in sweep.VARIANTS} >= {
        (track, stage) for track in ("triton", "cutile")
        for stage in ("softmax", "fused_gelu", "matmul", "flash_attention")}
    for i, variant in enumerate(sweep.VARIANTS):
        reference = course.module_path(course.select(variant.stage), variant.track, True)
        source = variant.source(reference.read_text())
        assert source != reference.read_text(), variant.label
        copy = tmp_path / f"{i}.py"
        copy.write_text(source)
        compile(source, str(copy), "exec")
        assert read_submission(copy, copy.name, course.rules).todos == ()
    stale = sweep.Variant("matmul", "triton", "stale", (("    BLOCK_M = 7\n", "    BLOCK_M = 8\n"),))
    with pytest.raises(ValueError, match="not in the reference exactly once"):
        stale.source("BLOCK_M = 1\n")


@pytest.mark.parametrize("alone_ms, speedup, noted", [(0.02, 2.0, False), (0.0198, 2.0, False),
                                                     (0.015, 1.5, True)])
def test_a_baseline_slowed_next_to_the_submission_is_judged_by_its_time_alone(
        grade, monkeypatch, alone_ms, speedup, noted):
    """GPU work a submission leaves running after its batch slows the grader's next
    baseline batch. The baseline is also timed with the submission's process ended: read
    more than 3% slower next to it (here 0.02 ms against 0.015 ms alone), its time alone
    counts; within that, the interleaved figure stands."""
    order = []
    monkeypatch.setattr(trial.Trial, "baseline_alone",
                        lambda self: order.append("alone") or alone_ms)
    end = ChildProcess.end
    monkeypatch.setattr(ChildProcess, "end", lambda self: order.append("close") or end(self))
    result = grade(1.2)
    first = order.index("alone")
    assert order[first - 1] == "close"  # the child ended first
    assert order[first:first + 2] == ["alone", "alone"]  # both cases, once per stage
    assert all(c.speedup == speedup for c in result.speed.cases)
    assert all(("ran 33% slower next to the submission than alone, so its time alone counts" in c.summary) == noted
               for c in result.speed.cases)


def test_the_precision_of_a_speed_up_is_the_error_of_its_batches_median():
    """1.2533 sigma / sqrt(n), sigma from the interquartile range of the batches' own
    speed-ups (baseline batch over student batch): steady batches are precise at once, 2%
    noise needs more than the five first batches, and one wild batch does not count."""
    steady = [0.010] * 5
    assert trial.precise(steady, [0.020] * 5)
    noisy = [0.0100, 0.0102, 0.0099, 0.0101, 0.0098]  # speed-ups 1.96 to 2.04
    assert not trial.precise(noisy, [0.020] * 5)
    assert trial.precise(noisy * 20, [0.020] * 100)  # 100 batches: the error shrinks
    assert trial.precise(steady * 3 + [0.1], [0.020] * 16)  # one batch 10x slow
    assert not trial.precise([0.01] * 3, [0.02] * 3)  # too few to tell


def _noisy_batches(monkeypatch, noise):
    """The fake replay's batches scaled in turn by `noise`; the budget's clock stands still."""
    fake = ReplayProcess.time_batch
    batches = iter(range(10**6))

    def noisy(self, *args):
        batch = fake(self, *args)
        scale = noise[next(batches) % len(noise)]
        return Batch([t * scale for t in batch.times_ms], batch.digests, batch.wall_ms * scale)

    monkeypatch.setattr(ReplayProcess, "time_batch", noisy)
    monkeypatch.setattr(Trial, "clock", staticmethod(lambda: 0.0))


def test_noisy_batches_are_timed_until_the_speed_up_is_precise(grade, monkeypatch):
    """An honest kernel whose batches vary by 1.5% is timed past the first five batches, and
    the trial stops as soon as its speed-up is precise: the figure is the median of many
    batches, not of five that happened to look steady."""
    # The budget's clock stands still: on a loaded machine the wall-clock budget would end
    # the trial before the speed-up is precise, and this test is about precision alone (no
    # stop for a certain verdict either: as in calibration).
    _noisy_batches(monkeypatch, [1.0, 1.01, 0.995, 1.005, 0.99, 1.0, 1.015, 0.985])
    monkeypatch.setattr(speed.SpeedCheck, "_certainty", lambda self, alone, roofline: None)
    ran = []
    real = trial.precise
    monkeypatch.setattr(trial, "precise", lambda s, b: ran.append(real(s, b)) or ran[-1])
    result = grade(1.5)
    case = result.speed.cases[0]
    assert case.passed and case.repeats > trial.MIN_BATCHES, case.summary
    assert ran[case.repeats - 1] and not any(ran[trial.MIN_BATCHES - 1:case.repeats - 1])
    assert case.speedup == pytest.approx(2.0, rel=0.02)


# Batches within 0.7% of their median: the speed-up is known to about 0.4% after eight (to
# 0.2% only after about thirty), so only a certain verdict stops a trial at eight.
JITTER = [1.0, 1.007, 0.993, 1.0035, 0.9965, 1.0, 1.007, 0.993]


def test_a_trial_far_from_its_threshold_stops_once_its_verdict_is_certain(grade, monkeypatch):
    """Speed-up 2 against a threshold of 1.5 (and of 2.7, missed by as far): after
    CERTAIN_MIN_BATCHES the verdict cannot change, so the trial stops there, though the
    speed-up is not yet known to the full precision."""
    _noisy_batches(monkeypatch, JITTER)
    first = JITTER * (trial.CERTAIN_MIN_BATCHES // len(JITTER))
    assert not trial.precise([0.01 * n for n in first], [0.02] * len(first))
    assert timing.speedup_error([0.01 * n for n in first], [0.02] * len(first)) \
        <= speed.CERTAIN_PRECISION
    for threshold, passed in ((1.5, True), (2.7, False)):
        case = grade(threshold).speed.cases[0]
        assert case.passed is passed and case.repeats == trial.CERTAIN_MIN_BATCHES, case.summary


def test_a_trial_near_its_threshold_is_timed_to_the_full_precision(grade, monkeypatch):
    """Speed-up 2 against 1.95: 2.6% away, beyond RETIME_WITHIN but within it plus four
    standard errors of batches as jittery, so the verdict is not yet certain at eight
    batches; the trial goes on until the speed-up is precise."""
    _noisy_batches(monkeypatch, JITTER)
    case = grade(1.95).speed.cases[0]
    assert case.passed and case.repeats > trial.CERTAIN_MIN_BATCHES, case.summary


def _found(student: list[float], baseline: list[float]) -> trial.TrialResult:
    return trial.TrialResult(student=student, baseline=baseline)


def _check_with(threshold: Threshold) -> speed.SpeedCheck:
    check = speed.SpeedCheck.__new__(speed.SpeedCheck)  # only its threshold is consulted
    check.threshold = threshold
    return check


def test_a_certain_verdict_needs_every_threshold_clear_and_calibration_never_has_one():
    """The fraction of the limit counts too (its error is the kernel time's own); a
    threshold with no figure (calibration's) gives no rule: those trials time to the full
    precision. A baseline judged by its time alone is judged so here as well."""
    roofline = ceilings.Roofline(seconds=0.008e-3, unit="GB/s", ceiling=1000.0)  # 80% at 10 us
    steady = [0.010] * 8
    assert _check_with(Threshold(baseline="torch"))._certainty(None, roofline) is None
    certain = _check_with(Threshold(min_speedup=1.5, min_fraction=0.5))._certainty(None, roofline)
    assert certain(_found(steady, [0.020] * 8))
    close = _check_with(Threshold(min_speedup=1.5, min_fraction=0.79))._certainty(None, roofline)
    assert not close(_found(steady, [0.020] * 8))  # 80% against 79%: not yet
    wobbly = [0.010 * n for n in JITTER]  # the time known to 0.4%: 80% against 70% is
    assert _check_with(Threshold(min_fraction=0.7))._certainty(None, roofline)(  # clear
        _found(wobbly, [0.020] * 8))
    # Next to the submission the baseline read 0.020 ms, alone 0.0152 ms: judged by 1.52x,
    # within RETIME_WITHIN of 1.5x.
    alone = _check_with(Threshold(min_speedup=1.5))._certainty(0.0152, roofline)
    assert not alone(_found(steady, [0.020] * 8))
    assert _check_with(Threshold(min_speedup=1.5))._certainty(0.019, roofline)(
        _found(steady, [0.020] * 8))


def test_a_trial_that_never_settles_stops_when_its_time_budget_is_spent(grade, monkeypatch):
    """Batches that vary by a third never make the speed-up precise: the trial stops at the
    fewest batches once the case's budget is spent, rather than running to MAX_BATCHES."""
    fake = ReplayProcess.time_batch
    batches = iter(range(10**6))

    def wild(self, *args):
        batch = fake(self, *args)
        scale = (0.7, 1.3)[next(batches) % 2]
        return Batch([t * scale for t in batch.times_ms], batch.digests, batch.wall_ms * scale)

    monkeypatch.setattr(ReplayProcess, "time_batch", wild)
    ticks = iter(range(10**6))
    monkeypatch.setattr(Trial, "clock", staticmethod(lambda: 10.0 * next(ticks)))
    case = grade(1.2).speed.cases[0]
    assert case.repeats == trial.MIN_BATCHES, case.summary


def test_the_baseline_alone_is_the_median_of_its_batches_after_the_first(monkeypatch):
    means = iter([9.0, 0.02, 0.03, 0.025])
    monkeypatch.setattr(Trial, "baseline_batch",
                        lambda self, seeds, key: ([next(means)] * len(seeds), 0.0))
    problem = PROBLEMS["vector_add"]
    timed = TimedCase(problem, {"n": 100}, "float32", problem.baselines["torch"], None, "cpu")
    found = Trial(timed, None, timing.Budget(warmup=1)).baseline_alone()
    assert found == pytest.approx(0.025)


def test_the_placement_table_tells_placement_from_process():
    """scripts/placement_check.py (on a GPU) times each impl on inputs placed anew in each of
    several processes: the spread within a process (placement) beside the spread across
    processes (the process)."""
    placement = _script("placement_check")

    def run(*rows):
        return {"case": "M=8", "missing": {"cutile": "ImportError: no cuda.tile"},
                "rows": [{"triton": t, "torch": 1.0, "address": 0} for t in rows]}

    by_placement = placement.report([run(1.0, 1.03), run(1.03, 1.0)], "GPU")
    by_process = placement.report([run(1.0, 1.0), run(1.03, 1.03)], "GPU")
    within = lambda lines: [l for l in lines if "within" in l.split()[:2]][0].split()[2:]
    across = lambda lines: [l for l in lines if "across" in l.split()[:2]][0].split()[2:]
    assert within(by_placement) == ["2.96%", "0.00%"] and across(by_placement) == ["0.00%", "0.00%"]
    assert within(by_process) == ["0.00%", "0.00%"] and across(by_process) == ["2.96%", "0.00%"]
    assert "# cutile: not timed: ImportError: no cuda.tile" in by_process


def test_the_gpu_studies_have_one_entry_point(monkeypatch, capsys):
    """`python -m scripts NAME`: every study a module of the package with a main(), found
    through one table, importing the grader and each other as packages (no sys.path edits),
    and `python -m scripts NAME --help` gives its options on any machine, a GPU or not."""
    import importlib

    from scripts.__main__ import STUDIES, main

    for name, (module, _) in STUDIES.items():
        assert callable(importlib.import_module(f"scripts.{module}").main), name
    shared = {"__init__", "__main__", "common", "corpus_files"}  # what the studies share
    studies = {p.stem for p in (ROOT / "scripts").glob("*.py")} - shared
    assert studies == {module for module, _ in STUDIES.values()}
    assert not [p.name for p in (ROOT / "scripts").glob("*.py") if "sys.path" in p.read_text()]
    assert main(["no-such-study"]) == 2 and main([]) == 0
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # main() sets the study's own
    for name in STUDIES:
        with pytest.raises(SystemExit) as answered:
            main([name, "--help"])
        assert answered.value.code == 0 and f"python -m scripts {name}" in capsys.readouterr().out


@pytest.mark.parametrize("through", [[], ["--route", "socket"], ["--route", "gpu"]])
def test_the_wire_study_sends_a_tensor_whole_between_two_processes(capsys, through):
    """`python -m scripts wire` (on a GPU: how fast an output crosses the wire) runs here on
    a CPU tensor: every round arrives whole, in a sealed memory file or through the socket
    (asked for GPU memory, a CPU tensor goes as it would without)."""
    from scripts.__main__ import main

    assert main(["wire", "--megabytes", "2", "--rounds", "2", *through]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(rows) == 2 + 2 and all(row.endswith("| yes (cpu) |") for row in rows[2:])
