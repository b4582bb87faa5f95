"""The child process that runs student code (started by grader.runner, never by hand).

It receives requests over a socket, one at a time: load the submission, call it on a
case, time it against its baseline. It draws the case's inputs itself from the case's seed
(the parent draws the same ones to judge the result), so large inputs never cross the
process boundary; outputs come back as CPU tensors. Whatever the submission does to this
process (monkeypatching, printing, crashing, hanging), the verdict is made in the parent.

Before any student code runs, an audit hook makes the reference solutions unreadable, and
the timing functions are bound (grader.timing imports them at its own import).
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import sys
from pathlib import Path

_HEADER = struct.Struct("!Q")


def send(sock: socket.socket, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def receive(sock: socket.socket):
    """The next message, or raises EOFError when the other side is gone."""
    header = _read(sock, _HEADER.size)
    return pickle.loads(_read(sock, _HEADER.unpack(header)[0]))


def _read(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other process closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _forbid_reading(root: Path) -> None:
    """Audit hook: no file or listing under `root` (the reference solutions) may be opened."""
    root = root.resolve()

    def hook(event, args):
        if event not in ("open", "os.listdir", "os.scandir") or not args:
            return
        if isinstance(args[0], (str, bytes, os.PathLike)):
            path = Path(os.fsdecode(args[0]))
            try:
                inside = path.resolve().is_relative_to(root)
            except (OSError, ValueError):
                return
            if inside:
                raise PermissionError(
                    f"reading {path} is not allowed while grading: the reference solutions "
                    "are off limits to submissions")

    sys.addaudithook(hook)


class _Worker:
    def __init__(self):
        self.submission = None
        self.device = "cpu"

    def load(self, path: str, function: str, device: str):
        from grader.submission import Submission

        self.device = device
        self.submission = Submission(Path(path), function)
        self.submission.load()  # raises SubmissionError, sent back as such
        return True

    def _inputs(self, problem_id: str, params: dict, dtype: str, seed: int):
        import torch

        from grader.poison import guarded_copy
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        call = problem.draw(params, dtype, seed)
        guards = []

        def move(value, name):
            if not isinstance(value, torch.Tensor):
                return value
            guards.append(guarded_copy(value.to(self.device), f"input `{name}`"))
            return guards[-1].tensor

        args = tuple(move(a, n) for a, n in zip(call.args, problem.arg_names))
        kwargs = {k: move(v, k) for k, v in call.kwargs.items()}
        return problem, args, kwargs, guards

    def call(self, problem_id: str, params: dict, dtype: str, seed: int):
        import torch

        problem, args, kwargs, guards = self._inputs(problem_id, params, dtype, seed)
        called = self.submission.call(args, kwargs, frozenset(problem.torch_ops))
        output = called.output
        result = {
            "error": called.error,
            "launches": called.launches,
            "torch_ops": called.torch_ops,
            "overruns": [g.describe() for g in guards + called.allocations if g.overrun()],
            "inputs_after": [g.tensor.cpu() for g in guards],
            "input_names": [g.name for g in guards],
            "output_device": None,
            "output": None,
        }
        if isinstance(output, torch.Tensor):
            result["output_device"] = output.device.type
            result["output"] = output.detach().cpu()
        elif output is not None:
            result["output"] = repr(type(output).__name__)
        return result

    def memory(self, problem_id: str, params: dict, dtype: str, seed: int):
        """Peak bytes allocated during one call, above what the inputs already hold."""
        import torch

        _, args, kwargs, _ = self._inputs(problem_id, params, dtype, seed)
        self.submission.bound(args, kwargs)()  # warm-up: compilation allocates too
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        self.submission.bound(args, kwargs)()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before

    def time(self, problem_id: str, params: dict, dtype: str, seed: int, baseline: str,
             seconds: float):
        from grader import timing

        problem, args, kwargs, _ = self._inputs(problem_id, params, dtype, seed)
        student = self.submission.bound(args, kwargs)
        reference = problem.baselines[baseline]
        from grader.problems import Call

        call = Call(args, kwargs)
        outputs = []

        def run_student():
            outputs.append(student())
            del outputs[:-1]  # keep only the latest output alive

        samples = timing.measure({"student": run_student, "baseline": lambda: reference(call)},
                                 timing.Budget(seconds=seconds))
        return {"samples": {k: v.times_ms for k, v in samples.items()},
                "output": outputs[-1].detach().cpu()}


def main() -> None:
    fd, forbidden = int(sys.argv[1]), sys.argv[2]
    sock = socket.socket(fileno=fd)
    # Bind what grading relies on before student code can touch it.
    import torch  # noqa: F401

    from grader import poison, problems, submission, timing  # noqa: F401
    from grader.backends import SIMULATE

    if os.environ.get(SIMULATE) == "1":
        from grader import cutile_sim

        cutile_sim.install()  # ct.launch runs kernels in the simulator, on the CPU
    if forbidden:
        _forbid_reading(Path(forbidden))
    worker = _Worker()
    while True:
        try:
            op, payload = receive(sock)
        except EOFError:
            return
        try:
            reply = ("ok", getattr(worker, op)(**payload))
        except submission.SubmissionError as exc:
            reply = ("submission-error", str(exc))
        except Exception as exc:  # noqa: BLE001 - a broken request is the parent's to report
            reply = ("error", f"{type(exc).__name__}: {exc}")
        send(sock, reply)


if __name__ == "__main__":
    main()
