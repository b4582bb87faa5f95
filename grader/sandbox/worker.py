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
        self.rules = None
        self.kept = []  # the outputs of the last timed batch
        self.flush = None

    def load(self, path: str, function: str, device: str, rules: dict):
        from grader.course import SubmissionRules
        from grader.sandbox.submission import Submission

        self.device = device
        self.rules = SubmissionRules(**{k: tuple(v) for k, v in rules.items()})
        self.submission = Submission(path, function)
        self.submission.load()  # raises SubmissionError, sent back as such
        return True, {}

    def _inputs(self, problem_id: str, params: dict, dtype: str, seed: int):
        import torch

        from grader.sandbox.poison import guarded_copy
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        call = problem.draw(params, dtype, seed)
        guards = []

        def move(value, name):
            if not isinstance(value, torch.Tensor):
                return value
            # Copied onto the device with its layout: a transposed or sliced input stays one.
            guards.append(guarded_copy(value, f"input `{name}`", self.device))
            return guards[-1].tensor

        args = tuple(move(a, n) for a, n in zip(call.args, problem.arg_names))
        kwargs = {k: move(v, k) for k, v in call.kwargs.items()}
        return problem, args, kwargs, guards

    def call(self, problem_id: str, params: dict, dtype: str, seed: int):
        from grader.problems import Call

        problem, args, kwargs, guards = self._inputs(problem_id, params, dtype, seed)
        names = problem.tensor_names(Call(args, kwargs))
        called = self.submission.call(args, kwargs, self.rules, names)
        tensors = {f"input.{i}": g.tensor for i, g in enumerate(guards)}
        described = _describe(called.output)
        if "device" in described:
            tensors["output"] = called.output
        value = {
            "error": called.error,
            "launches": [vars(launch) for launch in called.launches],
            "host": called.host,
            "compile_errors": called.compile_errors,
            "unchecked": called.unchecked,
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

    def warm(self, problem_id: str, params: dict, dtype: str, seed: int, calls: int):
        """Untimed calls at the timed size: they absorb compilation and autotuning. The first
        is watched like a graded call (its evidence is the reply), so host code that does the
        work only at the sizes that are timed shows."""
        import torch

        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        call = problem.draw(params, dtype, seed, device=self.device)
        called = self.submission.call(call.args, call.kwargs, self.rules,
                                      problem.tensor_names(call))
        for _ in range(calls - 1):
            self.submission.bound(call.args, call.kwargs)()
        if self.device == "cuda":
            torch.cuda.synchronize()
        return {"error": called.error, "launches": [vars(launch) for launch in called.launches],
                "host": called.host, "compile_errors": called.compile_errors}, {}

    def time_batch(self, problem_id: str, params: dict, dtype: str, seeds: list, key: int):
        """One batch of timed calls, each on fresh inputs drawn on the GPU from its seed; the
        outputs stay here until the grader fetches the ones it checks (`fetch`)."""
        from grader import timing
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        function = self.submission.bound_function()
        self.kept = []  # the last batch's outputs go first, as in the grader's own batches
        times, outputs = timing.run_batch(
            lambda i: problem.draw(params, dtype, seeds[i], device=self.device),
            lambda call: function(*call.args, **call.kwargs), len(seeds), self._flush())
        self.kept = outputs
        described = [_describe(o) for o in outputs]
        digests = [timing.digest(o, key) if "device" in d else None
                   for o, d in zip(outputs, described)]
        return {"times": times, "digests": digests, "outputs": described}, {}

    def fetch(self, index: int):
        """The output of one call of the last batch."""
        output = self.kept[index]
        described = _describe(output)
        return described, ({"output": output} if "device" in described else {})

    def _flush(self):
        from grader import timing

        if self.flush is None:
            import torch

            self.flush = timing.L2Flush(torch.device(self.device))
        return self.flush

    def compile(self, problem_id: str, cases: list, archs: list):
        """Capture the cuTile launches of every case, then build each kernel for `archs`."""
        from grader.backends import build
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        launches = []
        for params, dtype, seed in cases:
            call = problem.draw(params, dtype, seed)
            launches += self.submission.capture_cutile(call.args, call.kwargs)
        return build.build_kernels(launches, tuple(archs))


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


def _bind_before_student_code(track: str) -> None:
    """Import what grading relies on, and hook the kernel language's launches, before the
    submission can touch them."""
    import importlib

    import torch  # noqa: F401

    from grader import problems, timing  # noqa: F401
    from grader.sandbox import launches, poison, submission  # noqa: F401
    from grader.backends.selection import SIMULATE

    language = {"triton": "triton", "cutile": "cuda.tile"}.get(track)
    if language:
        try:
            importlib.import_module(language)
        except ImportError:
            pass  # the submission's own import then says what is missing
    if os.environ.get(SIMULATE) == "1" and track == "cutile":
        from grader import cutile_sim

        cutile_sim.install()  # ct.launch runs kernels in the simulator, on the CPU
    if track == "triton" and os.environ.get("TRITON_INTERPRET") == "1":
        from grader.sandbox import frontends

        try:
            frontends.start_triton_helper()  # its imports overlap loading the submission
        except OSError:
            pass  # the first launch tries again, and says why it cannot check
    launches.install()


def main(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    sys.stdout.reconfigure(line_buffering=True)  # a killed child keeps what it printed
    plan = protocol.receive(sock).header
    protections = privileges.confine(privileges.Plan.from_json(plan["plan"]))
    # Started with -I (nothing from the environment or the working folder on sys.path, since
    # the bootstrap runs as root); now the grader's own sys.path, behind the package root.
    sys.path[:] = list(dict.fromkeys([sys.path[0], *plan["sys_path"]]))
    sys.dont_write_bytecode = True
    _bind_before_student_code(plan["track"])
    from grader.sandbox.submission import SubmissionError

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
