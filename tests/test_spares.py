"""Processes started ahead of need (grader.sandbox.spares): a grading takes a started one,
never one that ran anything before, nor one started for another thread or environment."""

import os
import subprocess
import sys
import threading
import time

import pytest

from grader.sandbox import spares
from grader.sandbox.process import probe


@pytest.fixture
def fresh(monkeypatch):
    """No spares from other tests; warm from the start; ended afterwards."""
    monkeypatch.setattr(spares, "_spares", [])
    spares.keep_warm()
    yield spares._spares
    while spares._spares:
        spares._spares.pop().discard()


def test_a_taken_spare_is_replaced_and_the_next_one_is_taken_from_the_spares(fresh):
    first = spares.take()
    try:
        assert len(fresh) == spares.WARM
        waiting = {s.process.pid for s in fresh}
        second = spares.take()
        assert second.process.pid in waiting  # started before it was wanted
        assert first.process.pid not in {s.process.pid for s in fresh}  # taken once
        second.discard()
    finally:
        first.discard()


def test_a_spare_does_not_fit_once_the_environment_changed(fresh, monkeypatch):
    spares.take().discard()
    before = {s.process.pid for s in fresh}
    monkeypatch.setenv("TRITON_DEBUG", "1")  # one a kernel language reads
    taken = spares.take()
    try:
        assert taken.process.pid not in before
        assert not any(s.process.pid in before for s in fresh)  # ended, not kept
    finally:
        taken.discard()
    # The grader's own variables are read after the plan: those spares still fit.
    before = {s.process.pid for s in fresh}
    monkeypatch.setenv("TILECOURSE_CUTILE_SIM", "1")
    taken = spares.take()
    assert taken.process.pid in before
    taken.discard()


def test_a_spare_goes_only_to_the_thread_that_started_it(fresh):
    spares.take().discard()
    mine = {s.process.pid for s in fresh}
    taken = []
    thread = threading.Thread(target=lambda: taken.append(spares.take()))
    thread.start()
    thread.join()
    try:
        assert taken[0].process.pid not in mine
    finally:
        taken[0].discard()


def test_a_taken_spare_confines_itself_as_a_fresh_process_does(fresh):
    protections = {p.name: p for p in probe()}
    again = {p.name: p for p in probe()}  # this one from a spare started by the first probe
    assert {n: p.in_force for n, p in protections.items()} == \
        {n: p.in_force for n, p in again.items()}
    assert "sandbox" not in again  # it started and confined itself


def test_spares_end_with_the_grader(tmp_path):
    pids = tmp_path / "pids"
    # os._exit: no clean-up at exit runs, as when the grader is killed
    script = (f"import os; from grader.sandbox import spares; spares.keep_warm(); "
              f"s = spares.take(); open({str(pids)!r}, 'w').write(' '.join(str(x.process.pid) "
              f"for x in [s, *spares._spares])); os._exit(0)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-c", script], check=True, cwd=root, timeout=120)
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 1 + spares.WARM
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in started):
        time.sleep(0.2)
    assert not any(_alive(p) for p in started)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False
