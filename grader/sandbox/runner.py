"""The grader's side of the child: the confined process that runs a submission's wrapper.

The child imports the submission and calls its wrapper on inputs drawn from the grader's
seeds, with every launch written down and none run (`record`): what comes back is a
proposal, plain data that the replay process (`replay`, grader.sandbox.replayer) checks and
runs. The child also captures cuTile launches for the compile check (`compile`).
"""

from __future__ import annotations

from grader import protocol
from grader.sandbox.outcomes import RECORD_REPLY, Proposed
from grader.sandbox.process import Failed, Process, failed_call
from grader.sandbox.replayer import Replayer
from grader.sandbox.submission import SubmissionError


class Runner(Process):
    """The child of one submission, and its replay process (started when first asked)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._replay: Replayer | None = None

    def load(self) -> None:
        """Start the child and load the submission there; the replay is started first, so
        that both confine themselves and import torch at the same time."""
        if not self.replay.running:
            try:
                self.replay.spawn()
            except SubmissionError:
                pass  # its first request starts it again, and says why it cannot
        super().load()

    @property
    def replay(self) -> Replayer:
        """The replay process of this submission: confined like the child, but no student
        host code ever runs there."""
        if self._replay is None:
            self._replay = Replayer(self.path, self.function, self.device, self.timeout,
                                    self.hidden, self.rules, self.track, role="replay")
        return self._replay

    def close(self) -> None:
        """End the child, the replay and everything they started."""
        if getattr(self, "_replay", None) is not None:
            self._replay.close()
        self.end()

    def withhold_output(self) -> None:
        """Leave out what the child and the replay print until each ends (a hidden case)."""
        super().withhold_output()
        self.replay.withhold_output()

    def output(self) -> str:
        """What the submission printed: its wrapper in the child, then its kernels."""
        kernels = self._replay.output() if self._replay is not None else ""
        return super().output() + kernels

    def record(self, problem_id: str, params: dict, dtype: str, seed: int) -> Proposed:
        """One call of the wrapper on the case's inputs drawn from `seed`, written down as a
        proposal (its launches are not run)."""
        try:
            reply = self._ask("record", 0, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed)
            value = self._check(reply.header["value"], RECORD_REPLY, "the recorded call")
        except (Failed, SubmissionError) as exc:
            failed = failed_call(exc)
            return Proposed(error=failed.error, failure=failed.failure)
        return Proposed(proposal=value["proposal"], error=value["error"],
                        refused=value["refused"], refused_launch=value["refused_launch"],
                        launches=value["launches"],
                        host=value["host"])

    def compile(self, problem_id: str, cases: list, archs: tuple[str, ...]) -> protocol.Message:
        """Capture the launches of `cases` and build them for `archs` without a GPU; the
        reply's JSON and binaries, unchecked (the language's compile check checks them:
        grader.languages.cutile.compile_check)."""
        timeout = max(self.timeout, 300.0 + 120.0 * len(archs))
        try:
            return self._ask("compile", 256 << 20, timeout=timeout, problem_id=problem_id,
                             cases=cases, archs=list(archs))
        except Failed as exc:
            raise SubmissionError(f"compiling it failed: {exc}") from None


