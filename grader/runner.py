"""The one boundary between the grader and student code: a child process per submission.

The parent (the grader) draws inputs, computes the reference and judges; the child
(grader.worker) loads the submission and runs it. A submission that patches torch, pytest
or the grader, prints fake results, hangs or crashes changes nothing in the parent:

- every request has a time limit; past it the child is killed and the case fails (timeout);
- a child that dies (segfault, abort, a CUDA error that poisons the context) fails the case
  (crash); the next request starts a fresh child and loads the submission again.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import worker
from grader.launches import Launch
from grader.submission import SubmissionError

# Errors after which a CUDA context is unusable: the child is replaced.
_STICKY = ("CUDA error", "illegal memory access", "illegal instruction", "unspecified launch failure",
           "device-side assert")


@dataclass
class Outcome:
    """What one call of the submission did, as the child reported it."""

    output: Any = None  # a CPU tensor, or a description of what came back instead
    output_device: str | None = None
    error: str | None = None  # raised, timed out, or crashed, described for the student
    launches: list[Launch] = field(default_factory=list)
    torch_ops: list[str] = field(default_factory=list)
    overruns: list[str] = field(default_factory=list)
    inputs_after: list[Any] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)


class Runner:
    """Runs one submission in a child process."""

    def __init__(self, path: Path, function: str, device: str, timeout: float = 120.0,
                 forbidden: Path | None = None):
        self.path = Path(path).resolve()
        self.function = function
        self.device = device
        self.timeout = timeout
        self.forbidden = forbidden
        self._process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None

    # --- lifecycle ------------------------------------------------------------------

    def _start(self) -> None:
        parent, child = socket.socketpair()
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "grader.worker", str(child.fileno()), str(self.forbidden or "")],
            pass_fds=[child.fileno()], env=env, stdin=subprocess.DEVNULL,
        )
        child.close()
        self._sock = parent

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._process = self._sock = None

    def __del__(self):
        if hasattr(self, "_process"):  # not when __init__ itself failed
            self.close()

    def load(self) -> None:
        """Start the child and import the submission there; raises SubmissionError."""
        if not self.path.is_file():
            raise SubmissionError(f"{self.path} does not exist.")
        self.close()
        self._start()
        status, value = self._request("load", path=str(self.path), function=self.function,
                                      device=self.device)
        if status != "ok":
            self.close()
            raise SubmissionError(value)

    def _request(self, op: str, **payload) -> tuple[str, Any]:
        """Send one request; ("timeout" | "crash", message) when the child does not answer."""
        if self._process is None:
            try:  # a restart after a timeout or crash
                self.load()
            except SubmissionError as exc:
                return "crash", f"crashed: could not be restarted after an earlier failure: {exc}"
        worker.send(self._sock, (op, payload))
        self._sock.settimeout(self.timeout)
        try:
            return worker.receive(self._sock)
        except (TimeoutError, socket.timeout):
            self.close()
            return "timeout", (f"timed out after {self.timeout:g} s (an endless loop, or a kernel "
                               "that never finishes?)")
        except (EOFError, ConnectionError):
            code = self._process.wait()
            self.close()
            return "crash", f"crashed: the process running it died ({_exit_reason(code)})"

    # --- requests -------------------------------------------------------------------

    def call(self, problem_id: str, params: dict, dtype: str, seed: int) -> Outcome:
        status, value = self._request("call", problem_id=problem_id, params=params, dtype=dtype,
                                      seed=seed)
        outcome = Outcome(**value) if status == "ok" else Outcome(error=value)
        if outcome.error and any(s in outcome.error for s in _STICKY):
            self.close()  # the next call gets a fresh CUDA context
        return outcome

    def memory(self, problem_id: str, params: dict, dtype: str, seed: int) -> tuple[int | None, str | None]:
        """(peak extra bytes of one call, error)."""
        status, value = self._request("memory", problem_id=problem_id, params=params, dtype=dtype,
                                      seed=seed)
        return (value, None) if status == "ok" else (None, value)

    def time(self, problem_id: str, params: dict, dtype: str, seed: int, baseline: str,
             seconds: float) -> tuple[dict[str, list[float]] | None, Any, str | None]:
        """(samples in ms per candidate, the last output, error)."""
        status, value = self._request("time", problem_id=problem_id, params=params, dtype=dtype,
                                      seed=seed, baseline=baseline, seconds=seconds)
        if status != "ok":
            return None, None, value
        return value["samples"], value["output"], None


def _exit_reason(code: int) -> str:
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
