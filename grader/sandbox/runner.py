"""The grader's side of the trust boundary: one confined child process per submission.

The parent draws the inputs, computes the reference and judges; the child
(grader.sandbox.worker) loads the submission and runs it. What comes back is evidence:

- every reply is a protocol message (JSON and raw tensor bytes) whose shape is checked
  against the request; one that is malformed, oversized, late, or answers a question that
  was not asked is a crash of that case, never an exception or a hang in the grader;
- each request has a deadline for the whole reply (`timeout`); past it the child is killed
  and the case fails (timed out); a child that dies fails the case (crashed), and the next
  request starts a fresh one;
- closing the runner ends the child and everything it started before it returns, so no
  result is written while a process of the submission is alive;
- what the child prints goes to a file only the parent can open, shown later as the
  submission's output (`output`), never mixed into the grader's own; once it has been given
  a hidden case, until it ends, it is withheld (`withhold_output`, grader.sandbox.output_log).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from grader.report.results import Failure
from grader.sandbox import filesystem, privileges, processes, protocol, worker
from grader.sandbox.launches import Launch
from grader.sandbox.outcomes import (CALL_REPLY, RETURNED, WARM_REPLY, Batch, Outcome,
                                     TimingFailed)
from grader.sandbox.output_log import OutputLog
from grader.sandbox.privileges import Protection
from grader.sandbox.submission import SubmissionError

STARTUP_SECONDS = 120.0  # for the child to confine itself and import torch


class _Failed(Exception):
    """The request got no acceptable reply: it timed out, or the child crashed."""

    def __init__(self, failure: Failure, message: str):
        super().__init__(message)
        self.failure = failure


class Runner:
    """Runs one submission in a confined child process.

    `hidden` names files and folders the child must never see, whatever else is shown
    (the reference solutions, the hidden cases, results); `rules` are the course's
    [submissions] rules for the host code; `track` is the kernel language, whose launches
    the child hooks before it imports the submission.
    """

    def __init__(self, path: Path, function: str, device: str, timeout: float = 120.0,
                 hidden: list[Path] = (), rules=None, track: str = ""):
        self.path = Path(path)
        self.function = function
        self.device = device
        self.rules = rules
        self.track = track
        self.timeout = timeout
        self.hidden = [Path(h) for h in hidden]
        self.protections: list[Protection] = []
        self._process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._base: Path | None = None
        self._log = OutputLog()
        self._serial = 0

    # --- lifecycle ------------------------------------------------------------------

    def load(self) -> None:
        """Start the child and import the submission there; raises SubmissionError."""
        try:
            source = filesystem.submission_source(self.path, self.hidden)
        except filesystem.Refused as exc:
            raise SubmissionError(str(exc)) from None
        self.close()
        try:
            self._start(source)
            rules = {k: list(v) for k, v in vars(self.rules).items()} if self.rules else {}
            self._ask("load", 1 << 20, path=self._module, function=self.function,
                      device=self.device, rules=rules)
        except _Failed as exc:
            self.close()
            raise SubmissionError(f"loading {self.path.name} {exc}") from None
        except SubmissionError:
            self.close()
            raise

    def _start(self, source: bytes) -> None:
        self._base = Path(tempfile.mkdtemp(prefix="tilecourse-sandbox-"))
        self._base.chmod(0o711)  # others may pass through to the submission, not list it
        (self._base / "root").mkdir()  # where the child mounts its own root
        folder = self._base / "submission"
        folder.mkdir(mode=0o755)
        module = folder / self.path.name
        module.write_bytes(source)
        module.chmod(0o644)
        self._module = str(module)
        plan = privileges.Plan(filesystem.plan(self._base, self.hidden),
                               privileges.essential_paths())
        parent, child = socket.socketpair()
        package_root = str(Path(__file__).resolve().parents[2])
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-c", worker.BOOT, package_root, str(child.fileno())],
            pass_fds=[child.fileno()], env=processes.child_env(plan.view.scratch), cwd=self._base,
            stdin=subprocess.DEVNULL, stdout=self._log.file, stderr=self._log.file,
            start_new_session=True,
        )
        child.close()
        self._sock = parent
        protocol.send(parent, {"plan": plan.to_json(), "track": self.track,
                               "sys_path": [p for p in sys.path if os.path.isabs(p)]})
        ready = self._receive(0, time.monotonic() + max(self.timeout, STARTUP_SECONDS), 0)
        if ready.header.get("status") != "ready":
            raise _Failed(Failure.CRASHED,
                          f"crashed: the sandbox did not start ({_text(ready.header)})")
        found = self._check(ready.header.get("protections"),
                            [{"name": str, "in_force": bool, "detail": str}], "ready")
        self.protections = [Protection(**p) for p in found]

    def close(self) -> None:
        """End the child and everything it started; returns once they are gone."""
        if self._sock is not None:
            self._sock.close()
        if self._process is not None:
            if self._process.poll() is None:
                self._process.send_signal(signal.SIGTERM)  # the bootstrap ends the namespace
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    processes.kill_group(self._process.pid)
                    self._process.wait()
            processes.kill_group(self._process.pid)  # without namespaces: what stayed in its group
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
        self._process = self._sock = self._base = None
        self._log.child_ended()

    def __del__(self):
        if hasattr(self, "_log"):  # not when __init__ itself failed
            self.close()

    def withhold_output(self) -> None:
        """Leave out of `output` what the child prints from now until it ends: it is about to
        be given a hidden case's inputs."""
        self._log.withhold()

    def output(self) -> str:
        """What the submission printed so far (the start and the end of it, if long), less
        what was withheld."""
        return self._log.text()

    # --- one request ------------------------------------------------------------------

    def _ask(self, op: str, max_bytes: int, timeout: float | None = None,
             **args) -> protocol.Message:
        """The ok reply to one request; raises _Failed or SubmissionError."""
        if self._process is None:  # a restart after a timeout or crash
            try:
                self.load()
            except SubmissionError as exc:
                raise _Failed(Failure.CRASHED, "crashed: could not be restarted after an "
                                               f"earlier failure: {exc}") from None
        self._serial += 1
        deadline = time.monotonic() + (timeout or self.timeout)
        try:
            if protocol.unasked(self._sock):
                raise self._broken("sent data before it was asked for anything")
            protocol.send(self._sock, {"id": self._serial, "op": op, "args": args})
        except (protocol.Closed, OSError):
            raise self._died() from None
        reply = self._receive(self._serial, deadline, max_bytes)
        status = reply.header.get("status")
        value = reply.header.get("value")
        if status == "submission-error" and isinstance(value, str):
            raise SubmissionError(value)
        if status == "error" and isinstance(value, str):
            self.close()  # its state is unknown (a CUDA context a fault poisoned, say)
            raise _Failed(Failure.CRASHED, f"crashed: the grader's worker failed: {value}")
        if status != "ok" or "value" not in reply.header:
            raise self._broken(f"sent a reply the grader cannot read ({_text(reply.header)})")
        return reply

    def _receive(self, serial: int, deadline: float, max_bytes: int) -> protocol.Message:
        try:
            reply = protocol.receive(self._sock, deadline, max_bytes)
        except protocol.Late:
            self.close()
            raise _Failed(Failure.TIMED_OUT, f"timed out after {self.timeout:g} s (an endless "
                                             "loop, or a kernel that never finishes?)") from None
        except protocol.Closed:
            raise self._died() from None
        except protocol.ProtocolError as exc:
            raise self._broken(str(exc)) from None
        if reply.header.get("id") != serial:
            raise self._broken("sent a message the grader did not ask for")
        return reply

    def _check(self, value: Any, shape: Any, where: str) -> Any:
        """`value` if the reply has the shape the request expects; else the child is ended."""
        try:
            return protocol.check(value, shape, where)
        except protocol.ProtocolError as exc:
            raise self._broken(str(exc)) from None

    def _died(self) -> _Failed:
        code = self._process.wait()
        self.close()
        return _Failed(Failure.CRASHED,
                       f"crashed: the process running it died ({processes.exit_reason(code)})")

    def _broken(self, why: str) -> _Failed:
        self.close()
        return _Failed(Failure.CRASHED, f"crashed: its process broke the grader's protocol: {why}")

    # --- requests -------------------------------------------------------------------

    def call(self, problem_id: str, params: dict, dtype: str, seed: int,
             inputs: list, output_bytes: int) -> Outcome:
        """One call on the case's inputs (`inputs`: the parent's own copies, for the sizes
        that may come back; `output_bytes`: the size of the expected output)."""
        limit = 2 * (sum(t.nbytes for t in inputs) + output_bytes) + (1 << 20)
        try:
            reply = self._ask("call", limit, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed)
            outcome = self._outcome(reply, inputs)
        except (_Failed, SubmissionError) as exc:
            return _failed_call(exc)
        if outcome.context_lost:
            self.close()  # the next call gets a fresh CUDA context
        return outcome

    def _outcome(self, reply: protocol.Message, inputs: list) -> Outcome:
        value = self._check(reply.header["value"], CALL_REPLY, "the call's reply")
        returned, tensors = value["output"], reply.tensors
        after = [tensors.get(f"input.{i}") for i in range(len(inputs))]
        for before, now in zip(inputs, after):
            if now is None or now.shape != before.shape or now.dtype != before.dtype:
                raise self._broken("its reply lacks the inputs as they were after the call")
        if set(tensors) - {f"input.{i}" for i in range(len(inputs))} - {"output"}:
            raise self._broken("its reply holds tensors nobody asked for")
        output = tensors.get("output")
        if ("device" in returned) != (output is not None):
            raise self._broken("its reply describes an output it does not hold")
        return Outcome(
            output=output, output_device=returned.get("device"),
            returned=None if output is not None else returned.get("type", "nothing"),
            error=value["error"], host=value["host"], compile_errors=value["compile_errors"],
            unchecked=value["unchecked"], overruns=value["overruns"],
            launches=[Launch(**la) for la in value["launches"]], inputs_after=after)

    def memory(self, problem_id: str, params: dict, dtype: str, seed: int) -> tuple[int | None, str | None]:
        """(peak extra bytes of one call, error)."""
        try:
            reply = self._ask("memory", 0, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed)
            return self._check(reply.header["value"], int, "the memory reply"), None
        except (_Failed, SubmissionError) as exc:
            return None, str(exc)

    def warm(self, problem_id: str, params: dict, dtype: str, seed: int, calls: int = 3) -> Outcome:
        """Untimed calls at a timed size that absorb compilation; what the first of them,
        watched, did (no output: only its launches, host work and error)."""
        try:
            reply = self._ask("warm", 0, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed, calls=calls)
            value = self._check(reply.header["value"], WARM_REPLY, "the warm-up reply")
        except (_Failed, SubmissionError) as exc:
            return _failed_call(exc)
        return Outcome(error=value["error"], host=value["host"],
                       compile_errors=value["compile_errors"],
                       launches=[Launch(**la) for la in value["launches"]])

    def time_batch(self, problem_id: str, params: dict, dtype: str, seeds: list[int],
                   key: int) -> Batch:
        """One batch of timed calls in the child, on fresh inputs drawn from `seeds`, with the
        grader's own clock around all of it; raises TimingFailed."""
        start = time.perf_counter()
        try:
            reply = self._ask("time_batch", 0, problem_id=problem_id, params=params,
                              dtype=dtype, seeds=seeds, key=key)
            value = self._check(reply.header["value"], {
                "times": [float], "digests": [(int, None)], "outputs": [RETURNED]},
                "the timing reply")
        except (_Failed, SubmissionError) as exc:
            raise TimingFailed(str(exc)) from None
        wall = (time.perf_counter() - start) * 1e3
        if not len(value["times"]) == len(value["digests"]) == len(seeds):
            self.close()
            raise TimingFailed("crashed: its process sent timings for other calls than asked")
        returned = next((o.get("type") for o in value["outputs"] if "type" in o), None)
        if returned:
            raise TimingFailed(f"they returned {returned}, expected a torch.Tensor")
        return Batch(value["times"], value["digests"], wall)

    def fetch(self, index: int, output_bytes: int):
        """The output of call `index` of the last batch; raises TimingFailed."""
        try:
            reply = self._ask("fetch", 2 * output_bytes + (1 << 20), index=index)
            self._check(reply.header["value"], RETURNED, "the fetched output")
        except (_Failed, SubmissionError) as exc:
            raise TimingFailed(str(exc)) from None
        if "output" not in reply.tensors:
            raise TimingFailed("crashed: its process did not send the output asked for")
        return reply.tensors["output"]

    def compile(self, problem_id: str, cases: list, archs: tuple[str, ...]) -> protocol.Message:
        """Capture the cuTile launches of `cases` and build them for `archs`; the reply's
        JSON and cubins, unchecked (grader.judge.compile_check checks them)."""
        timeout = max(self.timeout, 300.0 + 120.0 * len(archs))
        try:
            return self._ask("compile", 256 << 20, timeout=timeout, problem_id=problem_id,
                             cases=cases, archs=list(archs))
        except _Failed as exc:
            raise SubmissionError(f"compiling it failed: {exc}") from None


def probe() -> list[Protection]:
    """The protections a submission would run under here (a child that loads nothing)."""
    runner = Runner(Path("probe.py"), "probe", "cpu")
    try:
        runner._start(b"")
        return runner.protections
    except (_Failed, OSError) as exc:
        return [Protection("sandbox", False, f"a confined child could not be started: {exc}")]
    finally:
        runner.close()


def _failed_call(exc: Exception) -> Outcome:
    """A call that got no acceptable reply: it timed out, or its process could not go on."""
    if isinstance(exc, _Failed):
        return Outcome(error=str(exc), failure=exc.failure)
    return Outcome(error=f"crashed: {exc}", failure=Failure.CRASHED)


def _text(header: dict) -> str:
    return str(header.get("value", header))[:200]
