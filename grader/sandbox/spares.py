"""Worker processes ready at once: forks of a template whose imports are done.

A worker spends seconds of CPU importing PyTorch and the kernel languages before it can
answer; a grading takes three on a GPU (the child, the replay and its builder), two on a CPU.
While gradings follow one another (`keep_warm`: the stages of `grade`, a class, the test
suite), the grader keeps a *template*: a worker that
imported what every worker needs and then only forks copies of itself on request
(grader.sandbox.processes.serve_copies). On a GPU the template is forked from before
anything initialised CUDA (a copy makes its own context once confined); a template whose
imports did initialise it declines (processes.TEMPLATE_DECLINED), and from then on each
worker is started when it is wanted. A copy, a *spare*, is ready in milliseconds; it
is given its output file and its plan, and only then confines itself and loads anything of
a submission. The template never runs student code nor is given a plan:
each spare starts as clean as a freshly started worker, and each is taken once.

A spare's parent is the grader, as a started worker's is: the template forks it through a
middle process that exits at once, and the grader, a child subreaper, adopts it (`Adopted`
waits for it and signals it as subprocess.Popen does a started one). Without `keep_warm`
a worker is started when it is wanted and imports only once confined. A template serves
only while the environment a new worker would get is still the one it was started with; it
ends with the grader.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from grader.sandbox import linux, processes

_PLACEHOLDER = "/nonexistent"  # the scratch folder a template's environment names
_FORK_SECONDS = 120.0  # for a template to finish its imports and fork (its first copy waits)
_keep = False
_template: "Spare | None" = None
_lock = threading.Lock()  # one fork at a time: the template answers requests in order
_adopting = False  # this process is a child subreaper
_declined = False  # a template declined: its imports initialised CUDA (workers start cold)


class Adopted:
    """A spare this process adopted: waited for, signalled and killed as subprocess.Popen
    does a process it started."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it is gone
                done, status = self.pid, 0
            if done == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"spare {self.pid}", timeout)
            time.sleep(0.005)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            processes.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


@dataclass
class Spare:
    """A worker waiting for its plan (or, kept as `_template`, the template)."""

    process: subprocess.Popen | Adopted
    sock: socket.socket
    env: dict[str, str]

    def hand_over(self, output: IO[bytes]) -> None:
        """Give the spare the file its prints go to (before its plan)."""
        socket.send_fds(self.sock, [processes.OUTPUT_FD_TAG], [output.fileno()])

    def discard(self) -> None:
        self.sock.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def keep_warm(on: bool = True) -> None:
    """Take workers from a template from now on (or, off, start each when it is wanted).
    The template starts when the first worker is wanted: started with the grading instead,
    it cut nothing measurable from the first stage on the H200 (BENCHMARKS.md) and cost
    every `grade` that starts no worker (stages not started) a process importing PyTorch."""
    global _keep
    _keep = on


def take() -> Spare:
    """A worker waiting for its plan: a fork of the template with `keep_warm`, else one
    started now (it imports once confined, as it must)."""
    global _template, _declined
    env = _environment()
    if not _keep or _declined:
        return _start(env, "cold")
    with _lock:
        if _template is not None and (_template.env != env
                                      or _template.process.poll() is not None):
            _template.discard()  # the environment changed since, or it died
            _template = None
        if _template is None:
            _template = _keeping(env)
        try:
            return _fork(_template)
        except OSError:  # it died, hung or declined: the next take starts another, or none
            _declined = _exit_code(_template) == processes.TEMPLATE_DECLINED
            _template.discard()
            _template = None
    return _start(env, "cold")


def _exit_code(spare: Spare) -> int | None:
    """How `spare` ended, waiting a moment for it: its socket closes as it exits."""
    try:
        return spare.process.wait(timeout=2.0)
    except subprocess.TimeoutExpired:
        return None


def _keeping(env: dict[str, str]) -> Spare:
    """A template started by a thread of its own that lives as long as the template: a
    process dies with the thread that started it, and grading threads come and go (`grade
    batch --jobs`)."""
    started: list[Spare] = []
    ready = threading.Event()

    def keeper() -> None:
        started.append(_start(env, "template"))
        ready.set()
        started[0].process.wait()  # until it is discarded, or dies

    threading.Thread(target=keeper, name="tilecourse-template", daemon=True).start()
    ready.wait()
    return started[0]


def _fork(template: Spare) -> Spare:
    _become_subreaper()
    parent, child = socket.socketpair()
    try:
        template.sock.settimeout(_FORK_SECONDS)
        socket.send_fds(template.sock, [os.getpid().to_bytes(8, "little")], [child.fileno()])
        answer = b""
        while len(answer) < 9:  # the spare's pid, then the byte that says it is ours
            part = template.sock.recv(9 - len(answer))
            if not part:
                raise OSError("the template ended")
            answer += part
    except OSError:
        parent.close()
        raise
    finally:
        child.close()
    return Spare(Adopted(int.from_bytes(answer[:8], "little")), parent, template.env)


def _become_subreaper() -> None:
    # Orphans among this process's descendants are now its children, not init's: the spares
    # (which is the point) and, rarely, what a process of a submission left behind when it
    # was killed, reaped when this process ends.
    global _adopting
    if not _adopting:
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        _adopting = True


def _environment() -> dict[str, str]:
    """The environment a template starts with. Changed, it no longer fits: what it imported
    may have read it. (The backend is not in it: the plan names the worker's track and
    device.)"""
    return processes.worker_env(_PLACEHOLDER)



def _start(env: dict[str, str], start: str) -> Spare:
    parent, child = socket.socketpair()
    package_root = str(Path(__file__).resolve().parents[2])
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", processes.BOOT, package_root, str(child.fileno()), start],
            pass_fds=[child.fileno()], env=env, cwd="/", stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    finally:
        child.close()
    return Spare(process, parent, env)


@atexit.register
def _end_all() -> None:
    global _template
    keep_warm(False)
    if _template is not None:
        _template.discard()
        _template = None
