"""What the grader's clock may see around a batch of timed calls beyond the times the replay
reported for them and the grader's own work around them (drawing inputs, flushing L2,
synchronising, checksums): an allowance per batch, and a tighter one for the median batch.
Beyond them the timing is rejected: work the timed calls did not show (on another stream,
before or after their events) or timers altered."""

from __future__ import annotations

import statistics

# What the grader's clock may see beyond the reported times and its own work around them:
# per batch, per call, and in proportion. Honest references on the H200 showed up to 3.1 ms
# in one batch of 10 calls, where 5.1 ms were allowed (BENCHMARKS.md); gross lies also meet
# the ceiling check.
UNEXPLAINED_PER_BATCH_MS = 3.0
UNEXPLAINED_PER_CALL_MS = 0.1
UNEXPLAINED_FRACTION = 0.10
# The same over the median batch, where the noise of one batch averages out: work hidden in
# every call shows there long before one batch's allowance is spent. On the H200 the honest
# references' medians were -0.4 to 1.8 ms per batch, at most 55% of this allowance; a matmul
# twice as slow as it claimed (a side stream behind a GPU sleep) showed 2.26 ms of 2.21 ms
# allowed. Part of the honest excess grows with the work around the calls (fresh inputs,
# checksums: 6 to 21 ms per batch), hence the last term.
# One batch over its allowance is timed again rather than believed or condemned: on the
# H200 an honest Triton matmul reference once showed 5.1 ms beyond 4.2 ms allowed, in one
# batch of a trial, twice in a run. A second such batch rejects the timing; hidden work
# shows in every batch, and in the median besides.
OVER_ALLOWANCE_TOLERATED = 1
MEDIAN_PER_BATCH_MS = 1.0
MEDIAN_PER_CALL_MS = 0.05
MEDIAN_FRACTION = 0.05
MEDIAN_AROUND_FRACTION = 0.10  # of the grader's own work around the calls of a batch


class Rejected(Exception):
    """The child's figures or outputs did not stand up to the grader's checks."""


class Unseen(Rejected):
    """The grader's clock saw more around the timed calls than the allowances grant: work
    the calls did not show, or something else of the machine that delayed the batches (on
    the H200 honest references were rejected so, now and then, in one trial of a grading).
    Such a trial is timed once more (grader.speed.check); hidden work shows in both."""


def batch(calls: int, claimed: float) -> float:
    """What one batch of `calls` calls whose times add up to `claimed` ms may show beyond
    them, in ms."""
    return (UNEXPLAINED_PER_BATCH_MS + calls * UNEXPLAINED_PER_CALL_MS
            + UNEXPLAINED_FRACTION * claimed)


def judge_median(unexplained: list[float], student: list[float], around: list[float],
                 calls: int) -> None:
    """Over all batches, the median of what the grader's clock could not explain: work
    hidden in every call (a side stream, a GPU sleep standing in for a slower kernel) too
    small to reject one noisy batch adds up here."""
    claimed = statistics.median(student) * calls
    seen, around = statistics.median(unexplained), statistics.median(around)
    allowed = (MEDIAN_PER_BATCH_MS + calls * MEDIAN_PER_CALL_MS
               + MEDIAN_FRACTION * claimed + MEDIAN_AROUND_FRACTION * around)
    if seen > allowed:
        raise Unseen(
            f"over {len(unexplained)} batches of {calls} calls, the grader's "
            f"clock saw a median {seen:.3g} ms per batch more than the reported times "
            f"({claimed:.4g} ms) and the baseline's own work around its calls ({around:.3g} "
            f"ms) explain, {allowed:.3g} ms allowed: work the timed calls did not show (on "
            "another stream, before or after their events, or timers altered)")
