"""The grader's side of the replay: the process that runs a submission's kernels.

It is started and confined like the child (grader.sandbox.process), but the submission's
module is never imported there. On a CPU it rebuilds the file's kernels from source; on a
GPU a builder process (grader.sandbox.builder) compiles each proposal's launches first, and
the replay is given the binaries (`install`) before it is asked to run them, so that no
compile-time Python ever runs in the process that keeps the clock. It runs the proposals
the child recorded, on inputs it draws from the grader's seeds (grader.replay). Its outputs
and times are the only ones grading uses.
"""

from __future__ import annotations

import time

from grader import protocol
from grader.quoting import inline
from grader.replay.binaries import proposal_key
from grader.sandbox.builder import Builder
from grader.sandbox.outcomes import (CALL_REPLY, RETURNED, WARM_REPLY, Batch, Outcome,
                                     TimingFailed, call_outcome)
from grader.sandbox.process import Failed, Process, failed_call
from grader.sandbox.submission import SubmissionError
from grader.replay.execute import LaunchRecord


class Replayer(Process):
    """The replay process of one submission (and, on a GPU, its builder)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._builder: Builder | None = None
        self._installed: set[str] = set()  # the proposals whose binaries the process holds
        self._installed_in = None  # ... that process

    @property
    def builder(self) -> Builder:
        if self._builder is None:
            self._builder = Builder(self.path, self.function, self.device, self.timeout,
                                    self.hidden, self.rules, self.track, role="builder")
        return self._builder

    def spawn(self) -> None:
        """Start the replay, and on a GPU its builder, without waiting for them."""
        super().spawn()
        if self.device != "cpu" and not self.builder.running:
            self.builder.spawn()

    def close(self) -> None:
        if self._builder is not None:
            self._builder.close()
        super().close()

    def withhold_output(self) -> None:
        super().withhold_output()
        if self.device != "cpu":
            self.builder.withhold_output()

    def output(self) -> str:
        """What the kernels printed: while they compiled (a GPU), then while they ran."""
        built = self._builder.output() if self._builder is not None else ""
        return built + super().output()

    def _install(self, problem_id: str, params: dict, dtype: str, seed: int,
                 proposal: dict) -> None:
        """On a GPU: the builder's binaries of `proposal`, given to the replay process unless
        it holds them already; raises Failed or SubmissionError."""
        if self.device == "cpu":
            return
        if not self._loaded:
            self.load()  # a fresh process: it holds nothing yet
        if self._installed_in is not self._process:
            self._installed, self._installed_in = set(), self._process
        key = proposal_key(proposal)
        if key in self._installed:
            return
        built = self.builder.build(problem_id, params, dtype, seed, proposal)
        self._ask("install", 0, tensors=built.tensors, key=key, value=built.header["value"])
        self._installed.add(key)

    def call(self, problem_id: str, params: dict, dtype: str, seed: int,
             inputs: list, output_bytes: int, proposal: dict) -> Outcome:
        """The replay of `proposal` on the case's inputs drawn from `seed` (`inputs`: the
        parent's own copies, for the sizes that may come back; `output_bytes`: the size of
        the expected output)."""
        limit = 2 * (sum(t.nbytes for t in inputs) + output_bytes) + (1 << 20)
        try:
            self._install(problem_id, params, dtype, seed, proposal)
            reply = self._ask("call", limit, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed, proposal=proposal)
            outcome = self._outcome(reply, inputs)
        except (Failed, SubmissionError) as exc:
            return failed_call(exc)
        if outcome.context_lost:
            self.end()  # the next call gets a fresh CUDA context
        return outcome

    def _outcome(self, reply: protocol.Message, inputs: list) -> Outcome:
        value = self._check(reply.header["value"], CALL_REPLY, "the call's reply")
        try:
            return call_outcome(value, reply.tensors, inputs)
        except protocol.ProtocolError as exc:
            raise self._broken(str(exc)) from None

    def memory(self, problem_id: str, params: dict, dtype: str, seed: int,
               proposal: dict) -> tuple[int | None, str | None]:
        """(peak extra bytes of one replayed call, error)."""
        try:
            self._install(problem_id, params, dtype, seed, proposal)
            reply = self._ask("memory", 0, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed, proposal=proposal)
            return self._check(reply.header["value"], int, "the memory reply"), None
        except (Failed, SubmissionError) as exc:
            return None, str(exc)

    def warm(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict,
             calls: int = 3) -> Outcome:
        """Untimed replays at a timed size that absorb compilation; what the first of them
        did (no output: only its launches, compile errors and error)."""
        try:
            self._install(problem_id, params, dtype, seed, proposal)
            reply = self._ask("warm", 0, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed, calls=calls, proposal=proposal)
            value = self._check(reply.header["value"], WARM_REPLY, "the warm-up reply")
        except (Failed, SubmissionError) as exc:
            return failed_call(exc)
        return Outcome(error=value["error"], host=value["host"],
                       compile_errors=value["compile_errors"],
                       launches=[LaunchRecord(**la) for la in value["launches"]])

    def time_batch(self, problem_id: str, params: dict, dtype: str, seeds: list[int],
                   key: int, proposal: dict) -> Batch:
        """One batch of timed replays, on fresh inputs drawn from `seeds`, with the grader's
        own clock around all of it; raises TimingFailed."""
        try:
            self._install(problem_id, params, dtype, seeds[0], proposal)
        except (Failed, SubmissionError) as exc:
            raise TimingFailed(str(exc)) from None
        start = time.perf_counter()
        try:
            reply = self._ask("time_batch", 0, problem_id=problem_id, params=params,
                              dtype=dtype, seeds=seeds, key=key, proposal=proposal)
            value = self._check(reply.header["value"], {
                "times": [float], "digests": [(int, None)], "outputs": [RETURNED]},
                "the timing reply")
        except (Failed, SubmissionError) as exc:
            raise TimingFailed(str(exc)) from None
        wall = (time.perf_counter() - start) * 1e3
        if not len(value["times"]) == len(value["digests"]) == len(seeds):
            self.end()
            raise TimingFailed("crashed: its process sent timings for other calls than asked")
        returned = next((o.get("type") for o in value["outputs"] if "type" in o), None)
        if returned:
            raise TimingFailed(f"they returned {inline(returned)}, expected a torch.Tensor")
        return Batch(value["times"], value["digests"], wall)

    def fetch(self, index: int, output_bytes: int):
        """The output of call `index` of the last batch; raises TimingFailed."""
        try:
            reply = self._ask("fetch", 2 * output_bytes + (1 << 20), index=index)
            self._check(reply.header["value"], RETURNED, "the fetched output")
        except (Failed, SubmissionError) as exc:
            raise TimingFailed(str(exc)) from None
        if "output" not in reply.tensors:
            raise TimingFailed("crashed: its process did not send the output asked for")
        return reply.tensors["output"]

