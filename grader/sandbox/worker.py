"""The child that runs student code (started by grader.sandbox.runner, never by hand).

It reads its plan from the grader, confines itself (grader.sandbox.privileges), binds what
grading relies on, says which protections are in force, and only then answers requests,
one at a time: load the submission, call it on a case, measure its memory, time it against
its baseline, compile its cuTile kernels. It draws a case's inputs itself from the case's
seed (the parent draws the same ones to judge the result), so large inputs never cross the
boundary; outputs go back as raw tensor bytes (grader.sandbox.protocol).

Everything this process says after the submission is loaded may be forged by it: the
parent checks every reply's shape and sizes, and judges the results itself.
"""

from __future__ import annotations

import os
import socket
import sys

from grader.sandbox import privileges, protocol

BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
        "from grader.sandbox.worker import main; main(int(sys.argv[2]))")


class _Worker:
    def __init__(self):
        self.submission = None
        self.device = "cpu"

    def load(self, path: str, function: str, device: str):
        from grader.submission import Submission

        self.device = device
        self.submission = Submission(path, function)
        self.submission.load()  # raises SubmissionError, sent back as such
        return True, {}

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
        problem, args, kwargs, guards = self._inputs(problem_id, params, dtype, seed)
        called = self.submission.call(args, kwargs, frozenset(problem.torch_ops))
        tensors = {f"input.{i}": g.tensor for i, g in enumerate(guards)}
        described = _describe(called.output)
        if "device" in described:
            tensors["output"] = called.output
        value = {
            "error": called.error,
            "launches": [vars(launch) for launch in called.launches],
            "torch_ops": called.torch_ops,
            "overruns": [g.describe() for g in guards + called.allocations if g.overrun()],
            "output": described,
        }
        return value, tensors

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
        return torch.cuda.max_memory_allocated() - before, {}

    def time(self, problem_id: str, params: dict, dtype: str, seed: int, baseline: str,
             seconds: float):
        from grader import timing
        from grader.problems import Call

        problem, args, kwargs, _ = self._inputs(problem_id, params, dtype, seed)
        student = self.submission.bound(args, kwargs)
        reference = problem.baselines[baseline]
        call = Call(args, kwargs)
        outputs = []

        def run_student():
            outputs.append(student())
            del outputs[:-1]  # keep only the latest output alive

        samples = timing.measure({"student": run_student, "baseline": lambda: reference(call)},
                                 timing.Budget(seconds=seconds))
        described = _describe(outputs[-1])
        tensors = {"output": outputs[-1]} if "device" in described else {}
        return {"samples": {k: v.times_ms for k, v in samples.items()}, "output": described}, tensors

    def compile(self, problem_id: str, cases: list, archs: list):
        """Capture the cuTile launches of every case, then build each kernel for `archs`."""
        from grader import compile_check
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        launches = []
        for params, dtype, seed in cases:
            call = problem.draw(params, dtype, seed)
            launches += self.submission.capture_cutile(call.args, call.kwargs)
        return compile_check.build_kernels(launches, tuple(archs))


def _describe(output) -> dict:
    """How a returned value crosses: {"device": ...} for a plain tensor, else its type."""
    import torch

    if type(output) is torch.Tensor:  # noqa: E721 - subclasses do not cross
        from grader.sandbox.protocol import TENSOR_DTYPES

        if str(output.dtype).removeprefix("torch.") in TENSOR_DTYPES:
            return {"device": output.device.type}
        return {"type": f"a {output.dtype} tensor"}
    if isinstance(output, torch.Tensor):
        return {"type": f"{type(output).__name__} (a subclass of torch.Tensor)"}
    return {"type": type(output).__name__}


def _bind_before_student_code() -> None:
    """Import what grading relies on before the submission can touch it."""
    import torch  # noqa: F401

    from grader import poison, problems, submission, timing  # noqa: F401
    from grader.backends import SIMULATE

    if os.environ.get(SIMULATE) == "1":
        from grader import cutile_sim

        cutile_sim.install()  # ct.launch runs kernels in the simulator, on the CPU


def main(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    sys.stdout.reconfigure(line_buffering=True)  # a killed child keeps what it printed
    plan = protocol.receive(sock).header
    protections = privileges.confine(privileges.Plan.from_json(plan["plan"]))
    # Started with -I (nothing from the environment or the working folder on sys.path, since
    # the bootstrap runs as root); now the grader's own sys.path, behind the package root.
    sys.path[:] = list(dict.fromkeys([sys.path[0], *plan["sys_path"]]))
    sys.dont_write_bytecode = True
    _bind_before_student_code()
    from grader.submission import SubmissionError

    protocol.send(sock, {"id": 0, "status": "ready",
                         "protections": privileges.protections_json(protections)})
    worker = _Worker()
    while True:
        try:
            request = protocol.receive(sock).header
        except EOFError:
            return
        tensors = {}
        try:
            value, tensors = getattr(worker, request["op"])(**request["args"])
            reply = {"status": "ok", "value": value}
        except SubmissionError as exc:
            reply = {"status": "submission-error", "value": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a broken request is the parent's to report
            reply = {"status": "error", "value": f"{type(exc).__name__}: {exc}"}
        protocol.send(sock, {"id": request["id"], **reply}, tensors)
