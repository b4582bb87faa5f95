"""What a stage's hidden cases may tell a student: whether each passed, nothing more.

A hidden case's inputs are the instructor's, and whatever the submission learns of them it
can try to say back. Its parameters and seed are never shown, nor its diagnostics, nor what
was printed while it ran (grader.sandbox.output_log); here is the rest:

- its verdict: passed or failed, never the kind of failure, which the submission chooses
  (a wrong result for one size, a crash for another: a few bits of its inputs a case);
- its time: everything done with its inputs (the call recorded, the replay, the judging,
  the ending of the processes that saw them) is left out of every time a student sees
  (grader.shown_clock), and nothing else of the grading runs beside it, which would end
  the sooner for the time withheld;
- the processes given its inputs are ended before they are asked anything else.

What stays is the one bit each hidden case is: passed or failed, chosen by the submission.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Protocol, Sequence

from grader import shown_clock
from grader.judge.compare import Verdict
from grader.results import HIDDEN_FAILED, HIDDEN_NOT_GRADED, Failure
from grader.sandbox import ChildProcess

# The part of the cases' time (grade --profile) spent waiting, before the hidden cases, for
# what ran beside them (HiddenInputs.alone).
ALONE = "work beside settled, before the hidden cases"


class Settles(Protocol):
    """Work that may run beside a stage's cases (a later stage readied beside it)."""

    def settle(self) -> None: ...


class HiddenInputs:
    """Where a stage's hidden inputs go: into `child`'s processes, which are ended before
    they are asked anything else, and into no work that runs beside them."""

    def __init__(self, child: ChildProcess):
        self.child = child
        self.given = False  # the processes were given a hidden case's inputs
        # What else of the grading may run while the cases do, beside the stage's own
        # builds ahead: settled before a hidden case's inputs are given.
        self.alongside: Sequence[Settles] = ()

    @contextmanager
    def case(self, phases: dict[str, float]) -> Iterator[None]:
        """A hidden case's work, alone and withheld: none of its time shows, and what the
        processes print from here on is withheld too (it could show the inputs)."""
        self.alone(phases)
        with shown_clock.withheld():
            self.child.withhold_output()
            self.given = True
            yield

    def alone(self, phases: dict[str, float]) -> None:
        """Nothing of the grading left running beside the cases: the stage's builds ahead
        done and the later stages readied beside it settled. Work beside a hidden case
        would end the sooner for the time the case took, and a wait for that work
        afterwards (the memory check's build, the next stage's opening) would tell it."""
        with shown_clock.phase(phases, ALONE):
            self.child.replay_process.settle_builds()
            for other in self.alongside:
                other.settle()

    def forget(self) -> None:
        """End the processes if they were given a hidden case: they could tell its inputs in
        whatever they say next (a shown case's verdict, a speed case's, the memory check's).
        The next request starts fresh ones. Their ending is the hidden case's time: a process
        can make its own end slow."""
        if self.given:
            with shown_clock.withheld():
                self.child.close()
            self.given = False


def withheld(verdict: Verdict, not_graded_here: bool) -> Verdict:
    """A hidden case's verdict: passed or failed, nothing more. Only where this GPU has no
    arithmetic for its dtype (which the case's name shows) is it not graded: the machine
    decided that before the submission was given anything."""
    if verdict.passed:
        return Verdict(True, "hidden case passed")
    if not_graded_here:
        return Verdict(False, HIDDEN_NOT_GRADED, kind=Failure.NOT_GRADED)
    return Verdict(False, HIDDEN_FAILED, kind=Failure.FAILED)
