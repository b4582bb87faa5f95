"""The grader's side of the builder: on a GPU, the confined process that compiles a
submission's kernels, apart from the process that runs and times them.

Compiling a kernel runs the kernel language's compile-time Python, so it happens here, in
a process started for the stage and ended with it; the replay (grader.sandbox.replayer)
only installs what comes back and launches it. What comes back is data: per launch step
of a proposal, JSON records and binary files (grader.replay.binaries), checked for their
shape here and loaded, never run, by the replay.
"""

from __future__ import annotations

from grader import protocol
from grader.sandbox.process import Process

# The most a build may send back: a cubin is some hundreds of KiB, an autotuned launch has
# a binary per configuration.
MAX_BUILD_BYTES = 256 << 20
BUILD_REPLY = {"launches": [{"step": int, "names": [str], "error?": str, "records?": [dict]}]}


class Builder(Process):
    """The builder of one submission's kernels."""

    def build(self, problem_id: str, params: dict, dtype: str, seed: int,
              proposal: dict) -> protocol.Message:
        """The binaries of every launch of `proposal`, on buffers laid out as the case's
        inputs drawn from `seed`; raises grader.sandbox.process.Failed or SubmissionError."""
        reply = self._ask("build", MAX_BUILD_BYTES, problem_id=problem_id, params=params,
                          dtype=dtype, seed=seed, proposal=proposal)
        self._check(reply.header["value"], BUILD_REPLY, "the build")
        return reply
