"""The builder, both ends: on a GPU, the confined process that compiles a submission's
kernels, apart from the process that runs and times them.

Compiling a kernel runs the kernel language's compile-time Python, so it happens here, in
a process started for the stage and ended with it; the replay (grader.sandbox.replayer)
only installs what comes back and launches it. What comes back is data: per launch step
of a proposal, JSON records and binary files (grader.replay.binaries), checked for their
shape by the grader and loaded, never run, by the replay.

`BuilderWorker` is the builder's side of each request, `BuilderProcess` the grader's; the
shape of the reply sits between them.
"""

from __future__ import annotations

from grader import protocol
from grader.sandbox.confined import Process
from grader.sandbox.roles import KernelWorker


class BuilderWorker(KernelWorker):
    """In the builder: the file's kernels rebuilt from source, as the replay would, and each
    proposal's launches compiled."""

    role = "builder"

    def load(self, path: str, function: str, device: str, rules: dict):
        self.load_kernels(path, device)
        return True, {}

    def build(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict):
        """Compile every launch of `proposal` on buffers laid out as the replay's."""
        from grader.problems import PROBLEMS
        from grader.replay import binaries

        inputs = self.drawn(PROBLEMS[problem_id], params, dtype, seed)
        return binaries.build(self.file, self.parsed(proposal, inputs), inputs)


# The most a build may send back: a cubin is some hundreds of KiB, an autotuned launch has
# a binary per configuration.
MAX_BUILD_BYTES = 256 << 20
BUILD_REPLY = {"launches": [{"step": int, "names": [str], "error?": str, "unchecked?": str,
                              "records?": [dict]}]}


class BuilderProcess(Process):
    """The grader's side of the builder of one submission's kernels."""

    role = BuilderWorker.role

    def build(self, problem_id: str, params: dict, dtype: str, seed: int,
              proposal: dict) -> protocol.Message:
        """The binaries of every launch of `proposal`, on buffers laid out as the case's
        inputs drawn from `seed`; raises grader.sandbox.confined.Failed or SubmissionError."""
        reply = self._ask("build", MAX_BUILD_BYTES, problem_id=problem_id, params=params,
                          dtype=dtype, seed=seed, proposal=proposal)
        self._check(reply.header["value"], BUILD_REPLY, "the build")
        return reply
