"""One submission's `grade all` process as `grade batch` runs it: in a scratch folder and a
session of its own, within a time limit, ended at once when the batch is stopped; every
process of its session ended before its scratch folder is removed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WAIT_STEP = 0.1  # seconds between two looks at a grading process that may have ended


@contextmanager
def scratch() -> Iterator[Path]:
    """A private temporary folder for one submission. It is removed only by this batch,
    after run_isolated has ended every process that could still be using it; a removal that
    fails (a file a process left read-only) leaves it behind rather than failing the batch."""
    folder = Path(tempfile.mkdtemp(prefix="tilecourse-batch-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Stopped(Exception):
    """The batch was interrupted while this submission was being graded."""


def run_isolated(command: list[str], log: Path, env: dict, cwd: Path, limit: float,
                 stop: threading.Event | None = None) -> int:
    """Run `command` in a session of its own with its output in `log`; returns its exit code,
    or raises subprocess.TimeoutExpired after `limit` seconds, or Stopped once `stop` is set.
    Either way every process of its session has ended before this returns: a straggler must
    never outlive its scratch folder (it would write a traceback about the vanished folder
    into the log) nor go on writing to the log."""
    # What a student's code printed: the instructor's to read, as every class file is.
    with os.fdopen(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
        child = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env,
                                 stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True)
    try:
        ended = _wait_unreaped(child.pid, limit, stop or threading.Event())
    finally:
        # The leader is alive or a zombie (not reaped yet), so its pid, the session's
        # process group id, cannot have been given to anyone else.
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = child.wait()
    if stop and stop.is_set() and not ended:
        raise Stopped()
    if not ended:
        with log.open("a") as handle:
            handle.write(f"\n[grade batch] stopped after {limit:g} s (--limit)\n")
        raise subprocess.TimeoutExpired(command, limit)
    return code


def _wait_unreaped(pid: int, limit: float, stop: threading.Event) -> bool:
    """Wait up to `limit` s, or until `stop` is set, for `pid` to end without reaping it;
    whether it ended."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        if stop.wait(WAIT_STEP):
            return False
    return False
