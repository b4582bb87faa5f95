"""Grading on GPUs the course was not calibrated on, and the time a call may take.

Colab's free T4 (sm_75) runs Triton but has no bfloat16 arithmetic: its bf16 cases are "not
graded on this GPU", never a pass and never a failure. The capability is faked here (no GPU
on the machines that run these tests); what is checked is what the grader concludes from it.
"""

import time

import pytest
import torch
from rich.console import Console
from conftest import ROOT, broken, vector_add_course

from grader.backends import selection as backends
from grader.judge import stage as judge_stage
from grader.report import junit
from grader.results import Failure, Report, Status
from grader.report.scorecard import render

GELU = (ROOT / "solutions/triton/stage2_fused_gelu.py").read_text()


def fake_gpu(monkeypatch, capability, name="Tesla T4"):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: name)


@pytest.mark.parametrize("capability, dtype, reason", [
    ((7, 5), "bfloat16", "bf16 needs sm_80, and Tesla T4 is sm_75"),
    ((7, 5), "float16", None),
    ((8, 0), "bfloat16", None),
    ((9, 0), "bfloat16", None),
])
def test_bf16_needs_sm_80(monkeypatch, capability, dtype, reason):
    fake_gpu(monkeypatch, capability)
    assert backends.dtype_unsupported(dtype, "cuda") == reason
    assert backends.dtype_unsupported(dtype, "cpu") is None  # the interpreter has every dtype


@pytest.mark.parametrize("capability, runs", [((7, 5), True), ((8, 6), True), ((7, 0), False)])
def test_triton_runs_on_a_t4_and_not_older(monkeypatch, capability, runs):
    fake_gpu(monkeypatch, capability, "Some GPU")
    problem = backends.BACKENDS["triton"].probe()
    if runs:
        assert problem is None
    else:
        assert problem == ("Some GPU has compute capability 7.0; the course's Triton kernels "
                           "need 7.5 (a T4) or newer.")


@pytest.fixture
def t4_bf16(monkeypatch):
    """The judge sees a T4: bf16 cases cannot run (the kernel still runs on the CPU)."""
    monkeypatch.setattr(judge_stage, "dtype_unsupported", lambda dtype, device: (
        "bf16 needs sm_80, and Tesla T4 is sm_75" if dtype == "bfloat16" else None))


def test_bf16_cases_on_a_t4_are_not_graded_and_earn_nothing(grade_source, t4_bf16, tmp_path):
    result = grade_source("fused_gelu", GELU)
    skipped = [c for c in result.cases if c.failure is Failure.NOT_GRADED]
    bf16 = [c for c in result.cases if c.dtype == "bfloat16"]
    assert {c.dtype for c in skipped} == {"bfloat16"} and len(skipped) == len(bf16) >= 3
    assert all(c.summary == "not graded on this GPU: bf16 needs sm_80, and Tesla T4 is sm_75"
               and not c.passed for c in skipped)
    assert all(c.passed for c in result.cases if c.dtype == "float32")
    # Every case that ran passed, but half the stage was never checked: not a pass.
    assert result.status is Status.PARTLY_GRADED
    ran = len(result.cases) - len(bf16)
    assert result.points == pytest.approx(15 * ran / len(result.cases), abs=0.01)
    assert result.max_points == 15
    assert result.hints == []  # a case that did not run is not a mistake to hint at
    xml = tmp_path / "junit.xml"
    junit.write_junit(_report(result), xml)
    text = xml.read_text()
    assert text.count("<skipped") >= len(bf16) and "<failure" not in text


def test_a_partly_graded_stage_is_shown_as_such(grade_source, t4_bf16):
    result = grade_source("fused_gelu", GELU)
    console = Console(record=True, width=160)
    render(_report(result), console)
    shown = console.export_text()
    ran = len([c for c in result.cases if c.dtype != "bfloat16"])
    assert "PARTLY GRADED" in shown and f"{ran}/{len(result.cases)}" in shown
    assert not _report(result).passed


def test_a_real_failure_next_to_cases_not_graded_is_a_failure(grade_source, t4_bf16):
    result = grade_source("fused_gelu", broken("triton", "stage2_fused_gelu.py", "    return out\n",
                                               "    return out[:1]\n"))
    assert result.status is Status.FAIL and result.points < 7.5  # under half of 15


def _report(result):
    return Report(course="t", target="exercises", backend="triton", backend_reason="test",
                  machine={}, started_at="2026-12-01T00:00:00+00:00", stages=[result])


# --- the time a call may take follows from the stage ---------------------------------------

HANG = broken("triton", "stage1_vector_add.py", "    return out\n",
              "    while True:\n        pass\n    return out\n")


def test_the_stage_sets_the_time_limit_on_the_cpu(grade_source):
    toml = vector_add_course('[ { n = 100, dtypes = ["float32"] } ]').replace(
        "points = 10\n", "points = 10\ntime_limit = { cpu = 3, gpu = 500 }\n")
    start = time.monotonic()
    result = grade_source("vector_add", HANG, course_toml=toml)
    took = time.monotonic() - start
    (case,) = result.cases
    assert case.failure is Failure.TIMED_OUT and case.summary.startswith("timed out after 3 s")
    assert took < 60


def test_the_command_lines_timeout_overrides_the_stage(grade_source):
    toml = vector_add_course('[ { n = 100, dtypes = ["float32"] } ]').replace(
        "points = 10\n", "points = 10\ntime_limit = { cpu = 300 }\n")
    result = grade_source("vector_add", HANG, course_toml=toml, timeout=2)
    assert result.cases[0].summary.startswith("timed out after 2 s")


def test_every_stage_of_the_course_has_its_own_time_limit(course):
    for stage in course.stages:
        limit = stage.time_limit
        assert 30 <= limit.cpu <= 120 and limit.gpu >= 60, stage.id
        assert limit.seconds("cpu") == limit.cpu and limit.seconds("cuda") == limit.gpu
