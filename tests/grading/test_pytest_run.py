"""The grader's pytest runs (grader.grading.pytest_run): what pytest-benchmark writes of the
machine and the commit is read once a grading, not once a stage; a run collects no garbage
of its own and says how long pytest itself took."""

import gc
import json
import os
import platform
import subprocess
from types import SimpleNamespace

import pytest

from grader.grading import pytest_run

TIMED = """
def test_timed(benchmark):
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
"""


def test_the_machine_and_commit_are_described_once_for_every_stage(tmp_path, monkeypatch):
    calls = []

    def cpu():
        calls.append("cpu")
        return {"brand_raw": "described"}

    monkeypatch.setattr(pytest_run, "cpu_description", cpu)
    pytest_run.benchmark_machine_info.cache_clear()
    pytest_run.benchmark_commit_info.cache_clear()
    (tmp_path / "test_timed.py").write_text(TIMED)
    check = SimpleNamespace(speed=SimpleNamespace(cases=[]), results={})
    records = []
    try:
        for stage in (1, 2, 3):  # pytest runs once a stage, each writing its record
            record = tmp_path / f"stage{stage}.json"
            with pytest_run.isolated_pytest():
                code = pytest.main([str(tmp_path / "test_timed.py"), "-q", "-p", "no:cacheprovider",
                                    "-p", "pytest_benchmark.plugin", "--rootdir", str(tmp_path),
                                    f"--benchmark-json={record}"],
                                   plugins=[pytest_run.SpeedPlugin(check, None)])
            assert code == 0
            records.append(json.loads(record.read_text()))
        asked_git = pytest_run.benchmark_commit_info.cache_info()
    finally:
        pytest_run.benchmark_machine_info.cache_clear()
        pytest_run.benchmark_commit_info.cache_clear()
    assert calls == ["cpu"]
    assert (asked_git.misses, asked_git.hits) == (1, 2)
    assert all(r["machine_info"]["cpu"] == {"brand_raw": "described"} for r in records)
    assert all(r["machine_info"]["python_version"] == platform.python_version() for r in records)
    assert len({json.dumps(r["commit_info"], sort_keys=True) for r in records}) == 1


def test_the_machine_is_described_without_starting_a_process(monkeypatch):
    """py-cpuinfo, which pytest-benchmark asks, starts a Python process that runs lscpu and
    dmesg and forks for cpuid (1.35 s of a grading on the H200's host): the grader's record
    reads /proc/cpuinfo instead."""
    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    monkeypatch.setattr(os, "fork", no_process)
    monkeypatch.setattr(platform, "processor", lambda: "")  # it asks `uname -p` once
    pytest_run.benchmark_machine_info.cache_clear()
    try:
        info = pytest_run.benchmark_machine_info()
    finally:
        pytest_run.benchmark_machine_info.cache_clear()
    assert info["cpu"]["count"] == os.cpu_count()
    assert {"node", "machine", "python_version", "system", "release"} <= set(info)


def test_the_cpu_is_read_from_its_model_line(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\n"
                       "model name\t: Intel(R) Xeon(R) Platinum 8480C\nflags\t: fpu\n")
    assert pytest_run.cpu_description(cpuinfo)["brand_raw"] == "Intel(R) Xeon(R) Platinum 8480C"
    assert pytest_run.cpu_description(tmp_path / "missing")["brand_raw"] is None


def test_a_run_collects_no_garbage_and_tells_pytests_own_seconds(monkeypatch):
    """pytest collected garbage twice a run (for its unraisable-exception warnings, which
    the grader shows nowhere): 0.2 s a run in a process holding PyTorch, two runs a stage."""
    collected = []
    monkeypatch.setattr(gc, "collect", lambda *args: collected.append(args) or 0)
    check = SimpleNamespace(speed=SimpleNamespace(cases=[]), results={})
    plugin = pytest_run.SpeedPlugin(check, None)
    broken = pytest_run.run_checks("test_speed.py", plugin, ["-p", "pytest_benchmark.plugin"],
                                   quiet=True)
    assert broken is None
    assert collected == []
    assert plugin.own_seconds > 0 and plugin.in_items > 0  # its one item, skipped: no case
