"""What a confined process answers, by role (grader.sandbox.worker starts it and hands it
the requests, one at a time):

- the child loads the submission and records one call of its wrapper at a time, its kernel
  launches written down and not run (`record`); it also captures its launches for `grade
  compile`, which builds them without a GPU (`compile`);
- the replay never imports the submission: on a CPU it rebuilds the file's kernels from
  source (grader.replay.kernels); on a GPU it builds nothing and launches only the
  binaries the builder made (`install`, grader.replay.binaries). It runs the proposals the
  grader sends, on inputs it draws from the grader's seeds: one graded call (`call`),
  untimed warm-up calls (`warm`), timed batches (`time_batch`, `fetch`), the peak memory
  of a call (`memory`);
- the builder (on a GPU) rebuilds the file's kernels from source as the replay would, and
  compiles the launches of each proposal (`build`), on buffers laid out as the replay's:
  its reply is data, records and binary files; it is discarded with the stage.

Inputs are drawn from a seed in the process that uses them, so large inputs never cross the
boundary; outputs go back as raw tensor bytes (grader.protocol). Everything a process says
may be forged by what ran in it: the grader checks every reply's shape and sizes, and
judges the results itself.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


class Worker:
    """Answers the parent's requests. In the role "child" it loads the submission and records
    its wrapper's calls; in the role "replay" it never imports the submission: it rebuilds
    the file's kernels from source and runs the proposals the parent sends."""

    def __init__(self, role: str, track: str):
        self.role, self.track = role, track
        self.submission = None  # the child's Submission
        self.replay = None  # the replay's grader.replay.execute.Replay (on a CPU)
        self.binaries = None  # the replay's grader.replay.binaries.Binaries (on a GPU)
        self.file = None  # the builder's grader.replay.kernels.KernelFile
        self.device = "cpu"
        self.rules = None
        self.kept = []  # the outputs of the last timed batch
        self.flush = None
        self._parsed: dict[str, object] = {}

    def load(self, path: str, function: str, device: str, rules: dict):
        from grader.course import SubmissionRules
        from grader.sandbox.submission import Submission, SubmissionError

        self.device = device
        if self.role == "replay" and device != "cpu":
            from grader.replay.binaries import Binaries

            self.binaries = Binaries(Path(tempfile.mkdtemp(prefix="binaries-")))
            return True, {}
        if self.role in ("replay", "builder"):
            from grader.replay import execute, kernels, source

            try:
                file = kernels.load(Path(path), self.track, interpreted=device == "cpu")
            except kernels.SourceError as exc:
                raise SubmissionError(str(exc)) from None
            self.file = file
            self.replay = execute.Replay(source.SourceKernels(file), device)
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

    def _drawn(self, problem, params: dict, dtype: str, seed: int) -> dict:
        """A case's inputs drawn on this process's device, named as a proposal names them."""
        call = problem.draw(params, dtype, seed, device=self.device)
        return {f"input.{i}": t for i, t in enumerate(call.tensors())}

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

    def _replay(self, data: dict, inputs: dict):
        """What runs `data`'s launches here: the kernels built from source (a CPU), or the
        binaries installed for it (a GPU)."""
        if self.binaries is None:
            return self.replay
        from grader.replay.binaries import proposal_key
        from grader.replay.execute import Replay

        kernels = self.binaries.kernels(proposal_key(data), self._proposal(data, inputs))
        return Replay(kernels, self.device)

    # --- the builder and the replay on a GPU: binaries --------------------------------

    def build(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict):
        """Compile every launch of `proposal` on buffers laid out as the replay's."""
        from grader.problems import PROBLEMS
        from grader.replay import binaries

        inputs = self._drawn(PROBLEMS[problem_id], params, dtype, seed)
        return binaries.build(self.file, self._proposal(proposal, inputs), inputs)

    def install(self, key: str, value: dict, tensors: dict | None = None):
        """Keep the builder's binaries of the proposal named `key`, for the requests that
        carry it."""
        self.binaries.install(key, value, tensors or {})
        return True, {}

    def call(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict):
        from grader.replay.proposal import ProposalError
        from grader.sandbox.submission import SubmissionError

        _, inputs, guards, names = self._inputs(problem_id, params, dtype, seed)
        watch = None
        if self.device == "cpu":  # the CPU backends run each memory operation in Python
            from grader.replay.watch import Watch

            watch = Watch(self.file.path, dict(zip(inputs, names)))
        try:
            replay = self._replay(proposal, inputs)
            replayed = replay.run(self._proposal(proposal, inputs), inputs, watch)
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
        run = self._replay(proposal, inputs).timed(self._proposal(proposal, inputs))
        run(inputs)  # warm-up: loading the kernels allocates too
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

        inputs = self._drawn(PROBLEMS[problem_id], params, dtype, seed)
        parsed = self._proposal(proposal, inputs)
        replay = self._replay(proposal, inputs)
        replayed = replay.run(parsed, inputs)
        if not replayed.error:
            run = replay.timed(parsed)
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
            inputs = self._drawn(problem, params, dtype, seeds[i])
            if run is None:
                run = self._replay(proposal, inputs).timed(self._proposal(proposal, inputs))
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
        """Capture the launches of every case, then build each kernel for `archs`, without a
        GPU (`grade compile`: the language's wing builds them)."""
        from grader.problems import PROBLEMS
        from grader.tracks import wing

        problem = PROBLEMS[problem_id]
        launches = []
        for params, dtype, seed in cases:
            call = problem.draw(params, dtype, seed)
            launches += self.submission.capture(call.args, call.kwargs)
        return wing(self.track).build_offline(launches, tuple(archs))


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
