"""The processes that run student code (started by grader.sandbox.process, never by hand).

Each takes its output file and its plan from the grader, confines itself
(grader.sandbox.privileges), binds what it relies on, says which protections are in force,
and only then answers requests, one at a time. A spare (grader.sandbox.spares) is a fork of
a template that imported what every worker needs (WARM_IMPORTS) and ran nothing else.
Nothing of the submission is read before the plan. Its role decides which requests:

- the child loads the submission and records one call of its wrapper at a time, its kernel
  launches written down and not run (`record`); it also captures cuTile launches for the
  compile check (`compile`);
- the replay never imports the submission: it rebuilds the file's kernels from source
  (grader.replay.kernels) and runs the proposals the grader sends, on inputs it draws from
  the grader's seeds: one graded call (`call`), untimed warm-up calls (`warm`), timed
  batches (`time_batch`, `fetch`), the peak memory of a call (`memory`).

Inputs are drawn from a seed in the process that uses them, so large inputs never cross the
boundary; outputs go back as raw tensor bytes (grader.protocol). Everything a process says
may be forged by what ran in it: the grader checks every reply's shape and sizes, and
judges the results itself.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import tempfile
from pathlib import Path

from grader import protocol
from grader.sandbox import privileges, processes

BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
        "from grader.sandbox.worker import main; main(int(sys.argv[2]), sys.argv[3])")
OUTPUT_FD_TAG = b"out"  # the bytes that carry the output file's descriptor to a spare
# What every worker imports, whatever its role and plan (a spare, while it waits).
WARM_IMPORTS = ("torch", "triton", "grader.problems", "grader.timing", "grader.replay.poison",
                "grader.replay.execute", "grader.sandbox.launches", "grader.sandbox.submission")


class _Worker:
    """Answers the parent's requests. In the role "child" it loads the submission and records
    its wrapper's calls; in the role "replay" it never imports the submission: it rebuilds
    the file's kernels from source and runs the proposals the parent sends."""

    def __init__(self, role: str, track: str):
        self.role, self.track = role, track
        self.submission = None  # the child's Submission
        self.replay = None  # the replay's grader.replay.execute.Replay
        self.device = "cpu"
        self.rules = None
        self.kept = []  # the outputs of the last timed batch
        self.flush = None
        self._parsed: dict[str, object] = {}

    def load(self, path: str, function: str, device: str, rules: dict):
        from grader.course import SubmissionRules
        from grader.sandbox.submission import Submission, SubmissionError

        self.device = device
        if self.role == "replay":
            from grader.replay import execute, kernels

            try:
                file = kernels.load(Path(path), self.track,
                                    interpreted=device == "cpu" and self.track == "triton")
            except kernels.SourceError as exc:
                raise SubmissionError(str(exc)) from None
            self.replay = execute.Replay(file, device, frontend=device == "cpu")
            return True, {}
        self.rules = SubmissionRules(**{k: tuple(v) for k, v in rules.items()})
        self.submission = Submission(path, function)
        self.submission.load()  # raises SubmissionError, sent back as such
        return True, {}

    # --- the child: what the wrapper proposes ---------------------------------------------

    def record(self, problem_id: str, params: dict, dtype: str, seed: int):
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        call = problem.draw(params, dtype, seed, device=self.device)
        recorded = self.submission.record(call.args, call.kwargs, self.rules,
                                          problem.tensor_names(call))
        return {"error": recorded.error, "refused": recorded.refused,
                "refused_launch": recorded.refused_launch,
                "launches": recorded.launches, "host": recorded.host,
                "proposal": recorded.proposal.to_json()}, {}

    # --- the replay: the proposal run on the grader's inputs ----------------------------

    def _inputs(self, problem_id: str, params: dict, dtype: str, seed: int):
        """The case's inputs on this process's device, each a guarded copy (poison after it)
        that keeps its layout (a transposed or sliced input stays one), named as a proposal
        names them: "input.N" in the order of the call's tensors."""
        from grader.problems import PROBLEMS
        from grader.replay.poison import guarded_copy

        problem = PROBLEMS[problem_id]
        call = problem.draw(params, dtype, seed)
        names = problem.tensor_names(call)
        guards = [guarded_copy(t, f"input `{n}`", self.device)
                  for t, n in zip(call.tensors(), names)]
        return problem, {f"input.{i}": g.tensor for i, g in enumerate(guards)}, guards, names

    def _proposal(self, data: dict, inputs: dict):
        import json

        from grader.replay import proposal

        key = json.dumps(data, sort_keys=True)
        if key not in self._parsed:
            geometry = {name: (tuple(t.shape), tuple(t.stride()),
                               str(t.dtype).removeprefix("torch.")) for name, t in inputs.items()}
            budget = max(1 << 30, 16 * sum(t.nbytes for t in inputs.values()))
            self._parsed = {key: proposal.parse(data, geometry, budget)}
        return self._parsed[key]

    def call(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict):
        from grader.replay.proposal import ProposalError
        from grader.sandbox.submission import SubmissionError

        _, inputs, guards, names = self._inputs(problem_id, params, dtype, seed)
        watch = None
        if self.device == "cpu":  # the CPU backends run each memory operation in Python
            from grader.replay.watch import Watch

            watch = Watch(self.replay.file.path, dict(zip(inputs, names)))
        try:
            replayed = self.replay.run(self._proposal(proposal, inputs), inputs, watch)
        except ProposalError as exc:
            raise SubmissionError(f"its launches cannot be replayed: {exc}") from None
        self._synchronize()
        tensors = dict(inputs)
        returned = self._proposal(proposal, inputs).returned  # a type's name: data, shown escaped
        described = (_describe(replayed.output) if replayed.output is not None
                     else {"type": returned or "nothing"})
        if replayed.output is not None:
            tensors["output"] = replayed.output
        value = {
            "error": replayed.error,
            "launches": [vars(launch) for launch in replayed.launches],
            "host": [],
            "compile_errors": replayed.compile_errors,
            "unchecked": replayed.unchecked,
            "overruns": [g.describe() for g in guards + replayed.allocations if g.overrun()],
            "output": described,
            "traffic": watch.traffic.to_json() if watch else [],
            "writer_launch": None,
        }
        if watch and replayed.output is not None:
            maps, value["writer_launch"] = watch.traffic.maps(replayed.output.shape)
            tensors.update(maps)
        return value, tensors

    def _synchronize(self):
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()  # surface asynchronous kernel faults here

    def memory(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict):
        """Peak bytes allocated during one replayed call, above what the inputs hold."""
        import torch

        _, inputs, _, _ = self._inputs(problem_id, params, dtype, seed)
        run = self.replay.timed(self._proposal(proposal, inputs))
        run(inputs)  # warm-up: compilation allocates too
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        run(inputs)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before, {}

    def warm(self, problem_id: str, params: dict, dtype: str, seed: int, calls: int,
             proposal: dict):
        """Untimed calls at the timed size: they absorb compilation and autotuning. The first
        is checked like a graded call (front end, errors)."""
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        call = problem.draw(params, dtype, seed, device=self.device)
        inputs = dict(zip((f"input.{i}" for i in range(len(call.tensors()))), call.tensors()))
        parsed = self._proposal(proposal, inputs)
        replayed = self.replay.run(parsed, inputs)
        if not replayed.error:
            run = self.replay.timed(parsed)
            for _ in range(calls - 1):
                run(inputs)
        self._synchronize()
        return {"error": replayed.error, "launches": [vars(la) for la in replayed.launches],
                "host": [], "compile_errors": replayed.compile_errors}, {}

    def time_batch(self, problem_id: str, params: dict, dtype: str, seeds: list, key: int,
                   proposal: dict):
        """One batch of timed calls, each on fresh inputs drawn on the GPU from its seed; the
        outputs stay here until the grader fetches the ones it checks (`fetch`)."""
        from grader import timing
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        self.kept = []  # the last batch's outputs go first, as in the grader's own batches
        run = None

        def prepare(i):
            nonlocal run
            call = problem.draw(params, dtype, seeds[i], device=self.device)
            inputs = dict(zip((f"input.{j}" for j in range(len(call.tensors()))), call.tensors()))
            if run is None:
                run = self.replay.timed(self._proposal(proposal, inputs))
            return inputs

        times, outputs = timing.run_batch(prepare, lambda inputs: run(inputs), len(seeds),
                                          self._flush())
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
        from grader.protocol import TENSOR_DTYPES

        if str(output.dtype).removeprefix("torch.") in TENSOR_DTYPES:
            return {"device": output.device.type}
        return {"type": f"a {output.dtype} tensor"}
    if isinstance(output, torch.Tensor):
        return {"type": f"{type(output).__name__} (a subclass of torch.Tensor)"}
    return {"type": type(output).__name__}


def _warm() -> None:
    for name in WARM_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - imported again once confined, its error seen then
            pass


def _bind_before_student_code(track: str, role: str, device: str) -> None:
    """Import what grading relies on, and hook the kernel language's launches, before the
    submission can touch them; on the CPU, cuTile's launches run in the simulator."""
    import torch  # noqa: F401

    from grader import problems, timing  # noqa: F401
    from grader.replay import poison  # noqa: F401
    from grader.sandbox import launches, submission  # noqa: F401
    from grader.tracks import TRACKS

    if track in TRACKS:
        try:
            importlib.import_module(TRACKS[track].module)
        except ImportError:
            pass  # the submission's own import then says what is missing
    if device == "cpu" and track == "cutile":
        from grader import cutile_sim

        cutile_sim.install()  # ct.launch runs kernels in the simulator, on the CPU
    if role == "child":
        launches.install()  # the replay runs kernels; the child only proposes launches
    elif track == "triton" and os.environ.get("TRITON_INTERPRET") == "1":
        from grader.replay import frontends

        try:
            frontends.start_triton_helper()  # its imports overlap loading the kernels
        except OSError:
            pass  # the first launch tries again, and says why it cannot check


def main(fd: int, start: str = "cold") -> None:
    """`start`: "cold", a worker wanted at once, imports only once confined; "template"
    imports first, then forks spares on request (grader.sandbox.spares), each of which goes
    on here with its imports done, waiting for its plan."""
    processes.die_with_parent()  # a template waits unconfined: it must not outlive the grader
    if start == "template":
        _warm()
        fd = processes.serve_copies(socket.socket(fileno=fd))
    sock = socket.socket(fileno=fd)
    _, fds, _, _ = socket.recv_fds(sock, len(OUTPUT_FD_TAG), 1)
    os.dup2(fds[0], 1)  # from now on, what this process prints goes to its output file
    os.dup2(fds[0], 2)
    os.close(fds[0])
    sys.stdout.reconfigure(line_buffering=True)  # a killed child keeps what it printed
    plan = protocol.receive(sock).header
    os.environ.clear()
    os.environ.update(plan["env"])
    tempfile.tempdir = None  # read again from TMPDIR, the scratch folder
    os.chdir(plan["cwd"])
    processes.single_threaded(sock)
    protections = privileges.confine(privileges.Plan.from_json(plan["plan"]))
    # Started with -I (nothing from the environment or the working folder on sys.path, since
    # the bootstrap runs as root); now the grader's own sys.path, behind the package root.
    sys.path[:] = list(dict.fromkeys([sys.path[0], *plan["sys_path"]]))
    sys.dont_write_bytecode = True
    _bind_before_student_code(plan["track"], plan.get("role", "child"), plan["device"])
    from grader.sandbox.submission import SubmissionError

    protocol.send(sock, {"id": 0, "status": "ready",
                         "protections": privileges.protections_json(protections)})
    worker = _Worker(plan.get("role", "child"), plan["track"])
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
