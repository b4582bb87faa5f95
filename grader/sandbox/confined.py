"""The grader's side of the trust boundary: a confined process, and the wire to it.

The parent draws the inputs, computes the reference and judges; the child
(grader.sandbox.worker) loads the submission and runs it. What comes back is evidence:

- every reply is a protocol message (JSON and raw tensor bytes) whose shape is checked
  against the request; one that is malformed, oversized, late, or answers a question that
  was not asked is a crash of that case, never an exception or a hang in the grader;
- each request has a deadline for the whole reply (`timeout`); past it the child is killed
  and the case fails (timed out); a child that dies fails the case (crashed), and the next
  request starts a fresh one;
- closing a process ends it and everything it started before it returns, so no
  result is written while a process of the submission is alive;
- what the child prints goes to a file only the parent can open, shown later as the
  submission's output (`output`), never mixed into the grader's own; once it has been given
  a hidden case, until it ends, it is withheld (`withhold_output`, grader.sandbox.output_log);
- what a process says in words (an error it reports, a field of a broken reply) is quoted in
  the grader's message (grader.quoting), never taken as the grader's own line.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from grader.results import Failure
from grader import protocol
from grader.quoting import inline, said, single_line
from grader.sandbox import filesystem, memory_ceiling, privileges, processes, spares
from grader.sandbox.outcomes import Outcome
from grader.sandbox.output_log import OutputLog
from grader.sandbox.privileges import Protection, StartRefused
from grader.sandbox.submission import SubmissionError

STARTUP_SECONDS = 120.0  # for the child to confine itself and import torch
# What the grader asked when a process answered that the submission is at fault: the
# grader's sentence before the process's own words (quoted), by role and request.
REFUSED = {("child", "load"): "loading {name} failed:",
           ("replay", "load"): "its kernels are refused before they run:",
           ("builder", "load"): "its kernels are refused before they run:",
           ("replay", "call"): "the grader could not replay its launches:",
           ("child", "compile"): "compiling {name} failed:"}


class Failed(Exception):
    """The request got no acceptable reply: it timed out, or the process crashed."""

    def __init__(self, failure: Failure, message: str):
        super().__init__(message)
        self.failure = failure


class Process:
    """The grader's side of one confined process of a submission: the child that runs its
    wrapper (grader.sandbox.child.ChildProcess), the replay that runs its kernels
    (grader.sandbox.replayer.ReplayProcess), or on a GPU the builder that compiles them
    (grader.sandbox.builder.BuilderProcess).

    `hidden` names files and folders the child must never see, whatever else is shown
    (the reference solutions, the hidden cases, results); `rules` are the course's
    [submissions] rules for the host code; `track` is the kernel language, whose launches
    the child hooks before it imports the submission.
    """

    # Which process: "child" runs the wrapper, "replay" runs only the kernels, "builder"
    # compiles them (each a subclass: grader.sandbox.child, replayer, builder).
    role = ""

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
        self._module = ""  # the submission's path as the process sees it (`seen_at`)
        self._log = OutputLog()
        self._loaded = False  # the process answered `load`
        self._retired = False  # ended for good (`retire`): never started again
        self._refused: str | None = None  # why the replay or builder refused the kernels
        self._serial = 0
        # Two threads may end one process at once: a builder's own thread, done, and the
        # stage stopping its builders. One ends it; the other waits, then finds it ended.
        self._ending = threading.RLock()

    # --- lifecycle ------------------------------------------------------------------

    def spawn(self) -> None:
        """Start the process without waiting for it: it confines itself and imports what it
        needs meanwhile (`load` waits); raises SubmissionError."""
        try:
            source = filesystem.submission_source(self.path, self.hidden)
        except filesystem.ViewRefused as exc:
            raise SubmissionError(str(exc)) from None
        self.end()
        self._start(source)

    def load(self) -> None:
        """Start the process (unless `spawn` just did), wait until it is confined, and load
        the submission there; raises SubmissionError."""
        if self._retired:
            raise SubmissionError("ended: its work was no longer wanted")
        if self._process is None or self._loaded:
            self.spawn()
        try:
            self._await_ready()
            rules = {k: list(v) for k, v in vars(self.rules).items()} if self.rules else {}
            self._ask("load", 1 << 20, path=self._module, function=self.function,
                      device=self.device, rules=rules)
            self._loaded = True
        except Failed as exc:
            self.end()
            raise SubmissionError(f"loading {self.path.name} {exc}") from None
        except SubmissionError as exc:
            self.end()
            if self.role in ("replay", "builder"):
                self._refused = str(exc)  # the source refused: it will be, every time
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
        plan = privileges.PrivilegePlan(filesystem.plan(self._base, self.hidden),
                               privileges.essential_paths())
        spare = spares.take()  # started, its imports done or under way
        self._process, self._sock = spare.process, spare.sock
        memory_ceiling.watch(self._process.pid)
        try:
            spare.hand_over(self._log.file)
            protocol.send(self._sock, {
                "plan": plan.to_json(), "track": self.track, "role": self.role,
                "device": self.device,
                "env": processes.worker_env(plan.view.scratch), "cwd": str(self._base),
                "sys_path": [p for p in sys.path if os.path.isabs(p)]})
        except OSError:
            pass  # it died: the wait for it to be ready says so

    def _await_ready(self) -> None:
        ready = self._receive(0, time.monotonic() + max(self.timeout, STARTUP_SECONDS), 0)
        if ready.header.get("status") == "refused":
            raise StartRefused(f"the sandbox refused to start: {_text(ready.header)}")
        if ready.header.get("status") != "ready":
            raise Failed(Failure.CRASHED,
                          f"crashed: the sandbox did not start ({_text(ready.header)})")
        found = self._check(ready.header.get("protections"),
                            [{"name": str, "in_force": bool, "detail": str}], "ready")
        self.protections = [Protection(**p) for p in found] + [memory_ceiling.PROTECTION]

    @property
    def seen_at(self) -> str:
        """The submission's path inside this process's sandbox (a temporary folder), as the
        process's messages name it; empty before it starts."""
        return self._module

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def close(self) -> None:
        """End the process and everything it started; returns once they are gone."""
        self.end()

    def retire(self) -> None:
        """End the process for good: a later request fails rather than start it again (a
        process another thread may still be asking, when its work is no longer wanted)."""
        self._retired = True
        self.end()

    def end(self) -> None:
        """End this process alone (`close` may end more: the child's replay too)."""
        with self._ending:
            self._end()

    def _end(self) -> None:
        if self._sock is not None:
            self._sock.close()
        if self._process is not None:
            memory_ceiling.forget(self._process.pid)  # before it is reaped: its pid may be reused
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
        self._loaded = False
        self._log.child_ended()

    def __del__(self):
        if hasattr(self, "_ending"):  # not when __init__ itself failed
            self.close()

    def withhold_output(self) -> None:
        """Leave out of `output` what the process prints from now until it ends: it is about
        to be given a hidden case's inputs."""
        self._log.withhold()

    def output(self) -> str:
        """What the submission printed in this process so far (the start and the end of it,
        if long), less what was withheld."""
        return self._log.text()

    # --- one request ------------------------------------------------------------------

    def _ask(self, op: str, max_bytes: int, timeout: float | None = None,
             tensors: dict | None = None, on_device: bool = False, **args) -> protocol.Message:
        """The ok reply to one request; raises Failed or SubmissionError (and
        protocol.NotShared where `on_device`: the reply's tensors may come in GPU memory, and
        this process could not take them)."""
        if self._retired:
            raise Failed(Failure.CRASHED, "ended: its work was no longer wanted")
        if self._refused is None and (self._process is None
                                      or (not self._loaded and op != "load")):
            # the first request, or a restart after a timeout or crash
            try:
                self.load()
            except SubmissionError as exc:
                if self._refused is None:
                    raise Failed(Failure.CRASHED, "crashed: could not be restarted after an "
                                                   f"earlier failure: {exc}") from None
        if self._refused is not None:  # the grader refused to build its kernels
            raise Failed(Failure.DOES_NOT_COMPILE, self._refused)
        self._serial += 1
        deadline = time.monotonic() + (timeout or self.timeout)
        try:
            if protocol.unasked(self._sock):
                raise self._broken("sent data before it was asked for anything")
            request = {"id": self._serial, "op": op, "args": args}
            protocol.send(self._sock, {**request, "on_device": True} if on_device else request,
                          tensors)
        except (protocol.Closed, OSError):
            raise self._died() from None
        reply = self._receive(self._serial, deadline, max_bytes, on_device)
        status = reply.header.get("status")
        value = reply.header.get("value")
        if status == "submission-error" and isinstance(value, str):
            sentence = REFUSED.get((self.role, op), "its process refused the request:")
            raise SubmissionError(said(sentence.format(name=self.path.name), value))
        if status == "error" and isinstance(value, str):
            self.end()  # its state is unknown (a CUDA context a fault poisoned, say)
            raise Failed(Failure.CRASHED,
                         said("crashed: the grader's worker in its process failed:", value))
        if status != "ok" or "value" not in reply.header:
            raise self._broken(f"sent a reply the grader cannot read ({_text(reply.header)})")
        return reply

    def _receive(self, serial: int, deadline: float, max_bytes: int,
                 on_device: bool = False) -> protocol.Message:
        try:
            reply = protocol.receive(self._sock, deadline, max_bytes, on_device)
        except protocol.LateReply:
            self.end()
            raise Failed(Failure.TIMED_OUT, f"timed out after {self.timeout:g} s (an endless "
                                             "loop, or a kernel that never finishes?)") from None
        except protocol.Closed:
            raise self._died() from None
        except protocol.NotShared:
            raise  # read whole: the caller asks again, through host memory
        except protocol.ProtocolError as exc:
            raise self._broken(str(exc)) from None
        if reply.header.get("id") != serial:
            raise self._broken("sent a message the grader did not ask for")
        return reply

    def _check(self, value: Any, shape: Any, where: str) -> Any:
        """`value` if the reply has the shape the request expects; else the child is ended."""
        try:
            return protocol.check_shape(value, shape, where)
        except protocol.ProtocolError as exc:
            raise self._broken(str(exc)) from None

    def _died(self) -> Failed:
        code = self._process.wait()
        held = memory_ceiling.exceeded(self._process.pid)
        self.end()
        if held is not None:
            return Failed(Failure.CRASHED, f"crashed: {memory_ceiling.describe(held)}")
        return Failed(Failure.CRASHED,
                       f"crashed: the process running it died ({processes.exit_reason(code)})")

    def _broken(self, why: str) -> Failed:
        """A reply the grader cannot take; `why` may name what the reply held: one line."""
        self.end()
        return Failed(Failure.CRASHED, "crashed: its process broke the grader's protocol: "
                                       + single_line(why, 300))

def probe() -> list[Protection]:
    """The protections a submission would run under here (a child that loads nothing)."""
    child = Process(Path("probe.py"), "probe", "cpu")
    child.role = "child"  # confined as a submission's child is
    try:
        child._start(b"")
        child._await_ready()
        return child.protections
    except (Failed, OSError, StartRefused) as exc:
        return [Protection("sandbox", False, f"a confined child could not be started: {exc}")]
    finally:
        child.close()


def failed_call(exc: Exception) -> Outcome:
    """A call that got no acceptable reply: it timed out, or its process could not go on."""
    if isinstance(exc, Failed):
        return Outcome(error=str(exc), failure=exc.failure)
    return Outcome(error=f"crashed: {exc}", failure=Failure.CRASHED)


def _text(header: dict) -> str:
    """What a process sent instead of the reply asked for, as one quoted value."""
    return inline(header.get("value", header), 200)
