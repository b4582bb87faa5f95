"""Worker processes started ahead of need, so that a grading does not wait for imports.

A worker spends seconds importing PyTorch and the kernel languages before it can answer.
A spare is a worker started without a plan: it does those imports, then waits
(grader.sandbox.worker). When a confined process is wanted (grader.sandbox.process), a spare
is taken and given its output file and its plan; only then does it confine itself and load
anything of a submission. No student code runs in a spare before it is taken, and each one
is taken once.

Spares are kept only while gradings follow one another (`keep_warm`: the stages of `grade`
on a CPU, the test suite); otherwise a process is started when it is wanted, and imports
only once confined, as a spare that is taken at once. A spare goes only to the thread that
started it (a process dies with the thread that started it) and only while the environment
a new worker would get is still the one it was started with. The spares left over end with
the grader.
"""

from __future__ import annotations

import atexit
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from grader.sandbox import processes, worker

WARM = 2  # a grading takes two processes at once: the child and its replay
_PLACEHOLDER = "/nonexistent"  # the scratch folder a spare's environment names until taken
_keep = False
_spares: list["Spare"] = []


@dataclass
class Spare:
    process: subprocess.Popen
    sock: socket.socket
    thread: int
    env: dict[str, str]

    def hand_over(self, output: IO[bytes]) -> None:
        """Give the spare the file its prints go to (before its plan)."""
        socket.send_fds(self.sock, [worker.OUTPUT_FD_TAG], [output.fileno()])

    def discard(self) -> None:
        self.sock.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def keep_warm(on: bool = True) -> None:
    """Start spares, WARM per grading thread, as processes are taken from now on (or, off,
    no more: those started are still taken)."""
    global _keep
    _keep = on


def take() -> Spare:
    """A started worker waiting for its plan: a spare of this thread, else a new one; with
    `keep_warm`, a new spare starts in its place."""
    env, thread = _environment(), threading.get_ident()
    found = None
    for spare in [s for s in _spares if s.thread == thread]:
        if not _fits(spare.env, env) or spare.process.poll() is not None:
            _spares.remove(spare)  # the environment changed since, or it died
            spare.discard()
        elif found is None:
            found = spare
    if found is not None:
        _spares.remove(found)
    else:
        found = _start(env, warm=False)  # wanted now: it imports once confined, as it must
    if _keep:
        while sum(s.thread == thread for s in _spares) < WARM:
            _spares.append(_start(env, warm=True))
    return found


def _environment() -> dict[str, str]:
    """The environment a spare starts with. Changed, it no longer fits: what it imported may
    have read it. The grader's own TILECOURSE_ variables are left out of the comparison:
    they are read only once the plan has given the worker its real environment."""
    return processes.child_env(_PLACEHOLDER)


def _fits(env: dict[str, str], now: dict[str, str]) -> bool:
    def imported_with(e: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in e.items() if not k.startswith("TILECOURSE_")}

    return imported_with(env) == imported_with(now)


def _start(env: dict[str, str], warm: bool) -> Spare:
    parent, child = socket.socketpair()
    package_root = str(Path(__file__).resolve().parents[2])
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", worker.BOOT, package_root, str(child.fileno()),
             "warm" if warm else "cold"],
            pass_fds=[child.fileno()], env=env, cwd="/", stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    finally:
        child.close()
    return Spare(process, parent, threading.get_ident(), env)


@atexit.register
def _end_all() -> None:
    keep_warm(False)
    while _spares:
        _spares.pop().discard()
