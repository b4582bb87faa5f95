"""The processes' side of a request: what every worker shares (grader.sandbox.worker starts
a worker and hands it the requests, one at a time).

Each role is one class, kept next to the grader's side of the same process and the shape of
each reply, so that a request's two ends and its reply read side by side:

    grader.sandbox.child     ChildWorker    loads the submission, records its wrapper's calls
    grader.sandbox.replayer  ReplayWorker   runs the proposals' launches on the grader's inputs
    grader.sandbox.builder   BuilderWorker  on a GPU, compiles those launches apart from the clock

Inputs are drawn from a seed in the process that uses them, so large inputs never cross the
boundary; outputs go back as raw tensor bytes (grader.protocol). Everything a process says
may be forged by what ran in it: the grader checks every reply's shape and sizes, and judges
the results itself.
"""

from __future__ import annotations

import json
from pathlib import Path


class Worker:
    """One role's answers; a request `op` is answered by the method of that name, which
    returns (JSON value, tensors)."""

    role = ""

    def __init__(self, track: str):
        self.track = track
        self.device = "cpu"

    def load(self, path: str, function: str, device: str, rules: dict):
        raise NotImplementedError


class KernelWorker(Worker):
    """A worker that never imports the submission: it rebuilds the file's kernels from
    source (grader.replay.kernels) and reads the proposals the grader sends as data."""

    def __init__(self, track: str):
        super().__init__(track)
        self.file = None  # the file's grader.replay.kernels.KernelFile
        self._parsed: dict[str, object] = {}

    def load_kernels(self, path: str, device: str) -> None:
        """Rebuild the file's kernels from its source; raises SubmissionError."""
        from grader.replay import kernels
        from grader.sandbox.submission import SubmissionError

        self.device = device
        try:
            self.file = kernels.load(Path(path), self.track, interpreted=device == "cpu")
        except kernels.SourceError as exc:
            raise SubmissionError(str(exc)) from None

    def drawn(self, problem, params: dict, dtype: str, seed: int) -> dict:
        """A case's inputs drawn on this process's device, named as a proposal names them."""
        call = problem.draw(params, dtype, seed, device=self.device)
        return {f"input.{i}": t for i, t in enumerate(call.tensors())}

    def guarded_inputs(self, problem_id: str, params: dict, dtype: str, seed: int):
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

    def parsed(self, data: dict, inputs: dict):
        """The proposal `data` checked against the geometry of `inputs` (the last one kept:
        the requests of a case repeat it)."""
        from grader.replay import proposal

        key = json.dumps(data, sort_keys=True)
        if key not in self._parsed:
            geometry = {name: (tuple(t.shape), tuple(t.stride()),
                               str(t.dtype).removeprefix("torch.")) for name, t in inputs.items()}
            budget = max(1 << 30, 16 * sum(t.nbytes for t in inputs.values()))
            self._parsed = {key: proposal.parse(data, geometry, budget)}
        return self._parsed[key]


def describe_output(output) -> dict:
    """How a returned value crosses: {"device": ...} for a plain tensor, else its type."""
    import torch

    if type(output) is torch.Tensor:  # noqa: E721 - subclasses do not cross
        from grader.tensor_buffer import TENSOR_DTYPES

        if str(output.dtype).removeprefix("torch.") in TENSOR_DTYPES:
            return {"device": output.device.type}
        return {"type": f"a {output.dtype} tensor"}
    if isinstance(output, torch.Tensor):
        return {"type": f"{type(output).__name__} (a subclass of torch.Tensor)"}
    return {"type": type(output).__name__}
