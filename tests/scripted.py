"""A submission's processes played from a script, for the tests of what the grader makes of
their answers (tests/sandbox/test_child.py, tests/replay/test_kernel_work.py)."""

from dataclasses import dataclass, field

from grader.problems import PROBLEMS
from grader.replay.execute import LaunchRecord as Launch
from grader.sandbox import Outcome
from grader.sandbox.outcomes import Proposed

# A proposal with one launch of the track's language, as a good wrapper makes.
PROPOSAL = {"steps": [{"op": "launch", "language": "triton", "kernel": "vector_add_kernel",
                       "grid": [1], "grids": None, "args": [], "kwargs": {}}],
            "result": None, "returned": None}


@dataclass
class ScriptedReplay:
    """Answers each replay with the next outcome from a list, like a replay process would."""

    outcomes: list
    calls: list = field(default_factory=list)
    installing: float = 0.0  # seconds waiting for binaries (none here: nothing is built)

    in_grid_order: list = field(default_factory=list)  # seeds replayed in grid order
    settled: int = 0  # times its builds ahead were settled (none are begun here)

    def call(self, problem_id, params, dtype, seed, inputs, output_bytes, proposal,
             replay=None):
        # The grid-order experiment (grader.judge.stage) gets what the case's replay got: a
        # script runs no programs, in any order.
        if replay is not None and replay.in_grid_order:
            self.in_grid_order.append(seed)
        else:
            self.calls.append(seed)
        outcome = self.outcomes[len(self.calls) - 1]
        return outcome(problem_id, params, dtype, seed) if callable(outcome) else outcome

    def settle_builds(self):
        self.settled += 1


@dataclass
class ScriptedChild:
    """A child that proposes `proposed` for every call, and a scripted replay."""

    outcomes: list
    proposed: Proposed = field(default_factory=lambda: Proposed(proposal=PROPOSAL, launches=1))
    records: list = field(default_factory=list)

    withheld_before: list = field(default_factory=list)  # records made before withholding
    closed_before: list = field(default_factory=list)  # records made before each close

    def __post_init__(self):
        self.replay_process = ScriptedReplay(self.outcomes)

    def withhold_output(self):
        self.withheld_before.append(len(self.records))

    def close(self):
        self.closed_before.append(len(self.records))

    def record(self, problem_id, params, dtype, seed):
        self.records.append(seed)
        return self.proposed


def correct(problem_id, params, dtype, seed):
    """The right answer for the inputs drawn from `seed`, as a good kernel's replay returns."""
    call = PROBLEMS[problem_id].draw(params, dtype, seed)
    output = PROBLEMS[problem_id].reference(call).to(call.args[0].dtype)
    launch = Launch(kernel="vector_add_kernel", grid=(1,), language="triton")
    return Outcome(output=output, output_device="cpu", launches=[launch],
                   inputs_after=list(call.tensors()))
