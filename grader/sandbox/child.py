"""The child, both ends: the confined process that runs a submission's wrapper.

The child imports the submission and calls its wrapper on inputs drawn from the grader's
seeds, with every launch written down and none run (`record`): what comes back is a
proposal, plain data that the replay process (grader.sandbox.replayer) checks and runs.
The seeds the child is given are masked by a key that never leaves the grader: the wrapper
can read them (in the frames that call it), and the replay's own seeds, the ones that
`--seed` reproduces, must not follow from them.
The child also captures a language's launches for `grade compile` (`compile`), which the
language's recorder part builds without a GPU.

`ChildWorker` is the child's side of each request, `ChildProcess` the grader's; the shape of
each reply sits between them.
"""

from __future__ import annotations

import json
import secrets

from grader import protocol
from grader.sandbox.outcomes import Proposed
from grader.sandbox.confined import Failed, Process, failed_call
from grader.sandbox.replayer import ReplayProcess
from grader.sandbox.roles import Worker
from grader.sandbox.submission import SubmissionError


class ChildWorker(Worker):
    """In the child: the submission loaded, its wrapper's calls recorded."""

    role = "child"

    def __init__(self, track: str):
        super().__init__(track)
        self.submission = None  # grader.sandbox.submission.Submission
        self.rules = None

    def load(self, path: str, function: str, device: str, rules: dict):
        from grader.course import SubmissionRules
        from grader.sandbox.submission import Submission

        self.device = device
        self.rules = SubmissionRules(**{k: tuple(v) for k, v in rules.items()})
        self.submission = Submission(path, function)
        self.submission.load()  # raises SubmissionError, sent back as such
        return True, {}

    def record(self, problem_id: str, params: dict, dtype: str, seed: int):
        from grader.problems import PROBLEMS

        problem = PROBLEMS[problem_id]
        call = problem.draw(params, dtype, seed, device=self.device)
        proposed = self.submission.record(call.args, call.kwargs, self.rules,
                                          problem.tensor_names(call))
        return proposed.reply(), {}

    def compile(self, problem_id: str, cases: list, archs: list):
        """Capture the launches of every case, then build each kernel for `archs`, without a
        GPU (the language's recorder part builds them)."""
        from grader.problems import PROBLEMS
        from grader.tracks import wing

        problem = PROBLEMS[problem_id]
        launches = []
        for params, dtype, seed in cases:
            call = problem.draw(params, dtype, seed)
            launches += self.submission.capture(call.args, call.kwargs)
        return wing(self.track).recorder.build_offline(launches, tuple(archs))


# The shape of `record`'s reply (grader.protocol.check_shape): a reply of another shape is a crash
# of its case. `compile`'s reply is checked by the language's compile check.
RECORD_REPLY = {"error": (str, None), "refused": (str, None), "refused_launch": bool,
                "launches": int, "host": [str],
                "proposal": {str: object}}


class ChildProcess(Process):
    """The grader's side of one submission's child, and of its replay process (started
    when first asked)."""

    role = ChildWorker.role

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._replay: ReplayProcess | None = None
        self._ahead: dict[str, Proposed] = {}  # calls recorded ahead (`record_ahead`)
        # XORed into every seed the child draws from: the seeds it sees are uniform and
        # independent of the run's seed, so the replay's seeds (the run's, drawn from
        # another way) cannot be told from them. A wrapper that found its seed in the
        # frames that call it drew the replay's inputs itself and patched its output with
        # a step the replay repeats (tests/attacks/triton/stage1_predicts_the_replays_inputs.py).
        self._seed_key = secrets.randbits(31)

    def load(self) -> None:
        """Start the child and load the submission there; the replay is started first, so
        that both confine themselves and import torch at the same time."""
        if not self.replay_process.running:
            try:
                self.replay_process.spawn()
            except SubmissionError:
                pass  # its first request starts it again, and says why it cannot
        super().load()

    @property
    def replay_process(self) -> ReplayProcess:
        """The replay process of this submission: confined like the child, but no student
        host code ever runs there."""
        if self._replay is None:
            self._replay = ReplayProcess(self.path, self.function, self.device, self.timeout,
                                         self.hidden, self.rules, self.track)
        return self._replay

    def close(self) -> None:
        """End the child, the replay and everything they started."""
        if getattr(self, "_replay", None) is not None:
            self._replay.close()
        self.end()

    def withhold_output(self) -> None:
        """Leave out what the child and the replay print until each ends (a hidden case)."""
        super().withhold_output()
        self.replay_process.withhold_output()

    def output(self) -> str:
        """What the submission printed: its wrapper in the child, then its kernels."""
        kernels = self._replay.output() if self._replay is not None else ""
        return super().output() + kernels

    def record_ahead(self, problem_id: str, params: dict, dtype: str, seed: int) -> Proposed:
        """`record` now, the result kept for the `record` of the same call later (once):
        what a stage records before its cases, so that their kernels compile meanwhile."""
        proposed = self.record(problem_id, params, dtype, seed)
        self._ahead[_call_key(problem_id, params, dtype, seed)] = proposed
        return proposed

    def record(self, problem_id: str, params: dict, dtype: str, seed: int) -> Proposed:
        """One call of the wrapper on inputs of the case's size drawn from `seed` masked
        (the module's docstring says why), written down as a proposal (its launches are not
        run); one recorded ahead is taken as it is."""
        ahead = self._ahead.pop(_call_key(problem_id, params, dtype, seed), None)
        if ahead is not None:
            return ahead
        try:
            reply = self._ask("record", 0, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed ^ self._seed_key)
            value = self._check(reply.header["value"], RECORD_REPLY, "the recorded call")
        except (Failed, SubmissionError) as exc:
            failed = failed_call(exc)
            return Proposed(error=failed.error, failure=failed.failure)
        return Proposed.from_reply(value)

    def compile(self, problem_id: str, cases: list, archs: tuple[str, ...]) -> protocol.Message:
        """Capture the launches of `cases` and build them for `archs` without a GPU; the
        reply's JSON and binaries, unchecked (the language's compile check checks them)."""
        timeout = max(self.timeout, 300.0 + 120.0 * len(archs))
        try:
            return self._ask("compile", 256 << 20, timeout=timeout, problem_id=problem_id,
                             cases=cases, archs=list(archs))
        except Failed as exc:
            raise SubmissionError(f"compiling it failed: {exc}") from None


def _call_key(problem_id: str, params: dict, dtype: str, seed: int) -> str:
    return json.dumps([problem_id, params, dtype, seed], sort_keys=True)
