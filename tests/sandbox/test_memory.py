"""The memory ceiling (grader.sandbox.memory): what a process tree holds, and the tree that
holds too much stopped, on plain processes (the attack file
tests/attacks/triton/stage1_holds_too_much_memory.py is the same through `grade`)."""

import os
import signal
import subprocess
import sys
import time

from grader.sandbox import memory

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
        assert wait_for(lambda: memory.tree_bytes(process.pid) > 96 << 20)
    finally:
        end(process)


def test_the_tree_over_the_ceiling_is_killed_and_says_how_much_it_held(monkeypatch):
    monkeypatch.setattr(memory, "LIMIT", 64 << 20)
    monkeypatch.setattr(memory, "PERIOD", 0.05)
    small, large = start(8), start(128)
    memory.watch(small.pid)
    memory.watch(large.pid)
    try:
        assert large.wait(timeout=20) == -9
        held = memory.exceeded(large.pid)
        assert held is not None and held > 64 << 20
        assert "held 0.1 GiB of memory, more than the 0.0625 GiB" in memory.describe(held)
        assert small.poll() is None and memory.exceeded(small.pid) is None
    finally:
        assert memory.forget(large.pid) is not None and memory.exceeded(large.pid) is None
        memory.forget(small.pid)
        end(small)
        end(large)
