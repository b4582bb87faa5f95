"""Processes on both sides of the boundary: the worker's environment, waiting, reaping, killing,
and going on in a fork of one thread.

No import here may pull in torch: the grader's side of a process uses this module, and so do
the worker's init and bootstrap, which must have one thread to make a user namespace.
"""

from __future__ import annotations

import os
import signal
import socket

from grader.sandbox import linux
from grader.tracks import found

# How a worker starts (grader.sandbox.worker.main), and the bytes that carry its output
# file's descriptor to a spare: here, so that the grader's side needs nothing of the worker.
BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
        "from grader.sandbox.worker import main; main(int(sys.argv[2]), sys.argv[3])")
OUTPUT_FD_TAG = b"out"
# A template's exit code when it cannot serve copies here: its imports initialised the CUDA
# driver, whose state a fork does not carry (a copy could not use the GPU).
TEMPLATE_DECLINED = 3
_ENV_KEPT = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
             "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_ENV_PREFIXES = ("TRITON_", "CUDA_", "NVIDIA_", "TORCH", "PYTORCH_")
# Caches live in the worker's scratch folder (its HOME): none is shared with later runs.
_ENV_DROPPED = ("TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR",
                "CUDA_CACHE_PATH", "CUDA_TILE_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")


def worker_env(scratch: str) -> dict[str, str]:
    """The environment of the worker: what kernels need, none of the grader's secrets (CI
    tokens, API keys), and a home in its scratch folder."""
    env = {k: v for k, v in os.environ.items()
           if (k in _ENV_KEPT or k.startswith(_ENV_PREFIXES)) and k not in _ENV_DROPPED}
    # TRITON_HOME named as well: Triton reads HOME once, as it is imported, and a spare
    # imported it in its template, where HOME names no folder yet; it reads TRITON_HOME
    # whenever it looks for its cache.
    env.update(HOME=scratch, TMPDIR=scratch, TRITON_HOME=scratch, USER="submission",
               LOGNAME="submission", **{found.ENV: found.told()})
    return env


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def exit_reason(code: int | None) -> str:
    if code is not None and (code < 0 or code > 128):
        number = -code if code < 0 else code - 128
        try:
            return f"signal {signal.Signals(number).name}"
        except ValueError:
            return f"signal {number}"
    return f"exit code {code}"


def wait(pid: int, reap_all: bool = False) -> int:
    """Wait for `pid`; its exit code, or 128 + the signal that ended it."""
    while True:
        try:
            done, status = os.waitpid(-1 if reap_all else pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return 1
        if done == pid:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else \
                128 + os.WTERMSIG(status)


def reap_one() -> bool:
    try:
        return os.waitpid(-1, os.WNOHANG)[0] > 0
    except ChildProcessError:
        return False


def children() -> list[int]:
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                found += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return found


def kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_user(uid: int) -> None:
    """Kill every process of `uid` (as that user: kill(-1) reaches exactly them)."""
    helper = os.fork()
    if helper == 0:
        os.setgid(uid)
        os.setuid(uid)
        for _ in range(1000):
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                os._exit(0)
        os._exit(1)
    wait(helper)


def die_with_parent() -> None:
    """This process is killed when the thread that started it ends."""
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)


def single_threaded(keep: socket.socket) -> None:
    """Go on in a fork of this process when it has threads (importing PyTorch starts one):
    only a process of one thread may make a user namespace. This process stays behind as a
    relay, never returning: SIGTERM passed on, the fork's exit status its own. `keep`: the
    socket the fork goes on with, closed here so that the grader sees the fork's end."""
    if len(os.listdir("/proc/self/task")) == 1:
        return
    worker = os.fork()
    if worker == 0:
        die_with_parent()
        return
    keep.close()
    signal.signal(signal.SIGTERM, lambda signum, frame: kill(worker, signal.SIGTERM))
    os._exit(wait(worker))


def serve_copies(control: socket.socket) -> int:
    """A template's loop (grader.sandbox.spares): for each request, a socket's descriptor and
    the grader's pid, fork a copy of this process that the grader adopts, and go on waiting.
    Returns only in a copy, with the descriptor it goes on with; the template itself exits
    when the grader closes `control`.

    The copy is forked twice so that, once the middle process exits, its parent is the
    grader (a child subreaper), which waits for it and kills it like a process it started.
    `control` carries the copy's pid (8 bytes, from the middle process) and then one byte,
    sent once the middle process is reaped and the copy is the grader's.
    """
    while True:
        try:
            grader_pid, fds, _, _ = socket.recv_fds(control, 8, 1)
        except OSError:
            os._exit(0)
        if len(grader_pid) != 8 or len(fds) != 1:
            os._exit(0)  # the grader closed the socket (or sent what it never sends)
        first = os.fork()
        if first == 0:
            middle = os.getpid()
            copy = os.fork()
            if copy == 0:
                control.close()
                _adopted(middle, int.from_bytes(grader_pid, "little"))
                return fds[0]
            control.sendall(copy.to_bytes(8, "little"))
            os._exit(0)
        os.close(fds[0])
        wait(first)
        control.sendall(b"\0")


def _adopted(middle: int, grader: int) -> None:
    # Its own session and process group, as a worker the grader starts has; the parent's
    # death signal only once the grader is the parent (it would fire as the middle exits).
    os.setsid()
    while os.getppid() == middle:
        os.sched_yield()
    die_with_parent()
    if os.getppid() != grader:  # the grader is gone, or not a subreaper: nobody waits
        os._exit(1)
