"""The memory ceiling (grader.sandbox.memory_ceiling): what a process tree holds, and the tree that
holds too much stopped, on plain processes (the attack file
tests/attacks/triton/stage1_holds_too_much_memory.py is the same through `grade`)."""

import os
import signal
import subprocess
import sys
import time

from grader.sandbox import memory_ceiling

HOLD = "import time; x = bytearray({mib} << 20); x[::4096] = b'1' * len(x[::4096]); time.sleep(30)"


def start(mib: int) -> subprocess.Popen:
    """A process whose child holds `mib` MiB, every page written."""
    child = HOLD.format(mib=mib)
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def end(process: subprocess.Popen) -> None:
    """The process and its child (which a namespace would end in the sandbox)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def wait_for(condition, seconds: float = 20) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_tree_holds_what_its_descendants_hold():
    process = start(96)
    try:
        assert wait_for(lambda: memory_ceiling.tree_bytes(process.pid) > 96 << 20)
    finally:
        end(process)


def test_the_tree_over_the_ceiling_is_killed_and_says_how_much_it_held(monkeypatch):
    monkeypatch.setattr(memory_ceiling, "LIMIT", 64 << 20)
    monkeypatch.setattr(memory_ceiling, "PERIOD", 0.05)
    small, large = start(8), start(128)
    memory_ceiling.watch(small.pid)
    memory_ceiling.watch(large.pid)
    try:
        assert large.wait(timeout=20) == -9
        held = memory_ceiling.exceeded(large.pid)
        assert held is not None and held > 64 << 20
        assert "held 0.1 GiB of memory, more than the 0.0625 GiB" in memory_ceiling.describe(held)
        assert small.poll() is None and memory_ceiling.exceeded(small.pid) is None
    finally:
        assert memory_ceiling.forget(large.pid) is not None and memory_ceiling.exceeded(large.pid) is None
        memory_ceiling.forget(small.pid)
        end(small)
        end(large)


def test_a_tree_under_the_ceiling_by_its_shares_is_measured_so_again_once_it_grew(monkeypatch):
    """A share measurement reads every process's memory maps (tens of milliseconds each,
    holding the kernel's lock on them): a tree over the ceiling only by its resident pages
    (forks of one template share most of theirs) is measured by its shares again once it
    grew, or seconds later, not every PERIOD; once over the ceiling by them, it is killed."""
    resident, by_shares, measured, killed = [5 << 30], [3 << 30], [], []

    def tree_bytes(root, parents=None, shares=False):
        if shares:
            measured.append(root)
            return by_shares[0]
        return resident[0]

    monkeypatch.setattr(memory_ceiling, "tree_bytes", tree_bytes)
    monkeypatch.setattr(memory_ceiling, "_kill", lambda root, held: killed.append(held))
    memory_ceiling._shares.pop(7, None)
    monkeypatch.setattr(memory_ceiling, "_watched", {7})
    memory_ceiling._measure(7, {})
    memory_ceiling._measure(7, {})
    assert measured == [7] and not killed  # the second time: nothing new to measure
    resident[0] += memory_ceiling.GROWN
    by_shares[0] = 5 << 30
    memory_ceiling._measure(7, {})
    assert measured == [7, 7] and killed == [5 << 30]
    monkeypatch.setattr(memory_ceiling, "SHARES_PERIOD", 0.0)
    by_shares[0] = 1 << 30
    memory_ceiling._measure(7, {})
    assert measured == [7, 7, 7]  # and again once the period passed
    memory_ceiling.forget(7)
    assert 7 not in memory_ceiling._shares
