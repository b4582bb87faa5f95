"""One speed case timed by the grader's rules: the replay of the student's launches against
the baseline, both timed by the grader.

The child records the wrapper's launches at the timed size once (a proposal); the replay
process (grader.replay), where no student host code ever ran, runs that proposal in batches,
each call on fresh inputs drawn on the GPU from a seed the grader picks, after an L2 flush,
timed by CUDA events in that process. What the child does to its own clocks changes
nothing: it times nothing. The grader still checks what it is told:

- the replay commits to each output with a keyed checksum (grader.timing.digest); the
  grader picks calls at random, fetches their outputs, checks each against its checksum
  and against the float32 reference of the inputs it draws itself;
- the grader's own clock spans the whole batch, and what the reported times cannot explain,
  once the grader's own cost of drawing inputs, flushing L2, synchronising and
  checksumming is taken away, rejects the timing beyond an allowance for one batch and a
  tighter one for the median batch (grader.speed.allowance: a kernel's work left running
  past its events);
- the baseline is timed here, in batches interleaved with the replay's, so a drifting GPU
  moves both.

The figure reported is the median over batches of each batch's mean call time. Batches go on
until the speed-up is known to PRECISION (by the spread of the batches' own speed-ups), until
the case's verdict is certain (its `certain` rule, from its thresholds), or until the case's
time budget is spent.
"""

from __future__ import annotations

import secrets
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import torch

from grader import placement, shown_clock, timing
from grader.sandbox import memory_ceiling
from grader.speed import allowance
from grader.course import Tolerance
from grader.judge.compare import Expected, compare
from grader.judge.misconduct import proposal_misconduct
from grader.problems import DTYPES, Call, Problem
from grader.quoting import said
from grader.sandbox.outcomes import Batch, Outcome, Proposed, TimingFailed
from grader.sandbox.child import ChildProcess
from grader.sandbox.replayer import ReplayProcess
from grader.speed.result import TrialResult

RECORD_CALLS = "record the calls"  # the phase (grade --profile) recording the wrapper's launches
# The timed batches' parts (grade --profile): where a trial's seconds go once it times.
FIRST_BATCHES = "first batches (not counted)"
MOVED_BATCHES = "memory moved, a batch each (not counted)"  # grader.placement
BASELINE_BATCHES = "baseline batches"
REPLAY_BATCHES = "replay batches"
OUTPUTS_FETCHED = "outputs fetched"  # from the replay's process, for the grader to check
OUTPUTS_CHECKED = "outputs checked"  # against their checksums and the reference
MEMORY_KEPT = 4 << 30  # bytes of outputs the replay keeps per batch, for the grader to fetch
BATCH = 10  # timed calls per batch, fewer for outputs that large
MIN_BATCHES = 5
MAX_BATCHES = 200
# After MIN_BATCHES, batches go on (within the case's time budget) until the speed-up is
# known to this relative standard error. Stopping at MIN_BATCHES as soon as the batches
# looked steady, five gradings of the Triton matmul reference on the H200 spread 1.79%
# (BENCHMARKS.md): the median of five batches moves by the noise of one. The range of five
# figures is about 2.3 standard errors, so this aims at runs within 0.5% of each other.
PRECISION = 0.002
# A trial whose verdict is certain (TimedCase.certain) stops sooner, never before this many
# batches: five can look steadier than the kernel is.
CERTAIN_MIN_BATCHES = 8
# Counted batches between two moves of both sides' memory (grader.placement): a
# trial's median is over several placements of its tensors, not one (0: the first only).
MOVE_EVERY = 2
# Every one of the first MIN_BATCHES batches has an output fetched and checked, and one in
# CHECKED after them: the median over batches moves only if most batches are faked.
CHECKED = 3
class _Wrong(Exception):
    """A checked output is wrong: nothing more to time."""


@dataclass(frozen=True)
class TimedCase:
    """What a trial times: one size and dtype of a problem, against a baseline, on a device;
    its outputs are checked with the stage's tolerance."""

    problem: Problem
    params: dict
    dtype: str
    baseline: Callable[[Call], torch.Tensor]
    tolerance: Tolerance | None
    device: str = "cuda"
    # Whether the batches so far decide the verdict (grader.speed.check); None: calibration
    certain: Callable[["TrialResult"], bool] | None = None


class Trial:
    def __init__(self, case: TimedCase, child: ChildProcess, budget: timing.Budget,
                 proposed: Proposed | None = None, phases: dict[str, float] | None = None):
        self.problem, self.params, self.dtype = case.problem, case.params, case.dtype
        self.baseline, self.tolerance, self.device = case.baseline, case.tolerance, case.device
        self.certain = case.certain
        self.child, self.budget = child, budget
        self.proposed = proposed  # the wrapper's launches at this size, if recorded already
        self.phases = {} if phases is None else phases  # where its seconds go, by phase
        self.placements = placement.Placements(self.device)  # where its tensors go, this side

    def draw(self, seed: int) -> Call:
        return self.problem.draw(self.params, self.dtype, seed, device=self.device)

    # --- the grader's own measurements (replaced in the CPU tests) ------------------------

    @staticmethod
    def clock() -> float:
        """Seconds on the clock the case's time budget is spent against."""
        return time.perf_counter()

    def baseline_batch(self, seeds: list[int], key: int) -> tuple[list[float], float]:
        """The baseline's call times, and the wall time of its whole batch here: the same
        work as a batch in the child (drawing, flushing, synchronising, checksumming every
        output), so that what the child's batch took beyond its calls can be compared."""
        with _undisturbed():
            start = time.perf_counter()
            times, outputs = timing.run_batch(lambda i: self.draw(seeds[i]), self.baseline,
                                              len(seeds), *self._between())
            for output in outputs:
                timing.digest(output, key)
            timing.synchronize()
            return times, (time.perf_counter() - start) * 1e3

    def replay_batch(self, seeds: list[int], key: int, move: bool = False) -> Batch:
        """One batch of the submission's timed calls, in its replay process, under the
        grader's clock (ReplayProcess.time_batch), undisturbed here as the baseline's batch
        is; raises TimingFailed."""
        with _undisturbed():
            return self.replay_process.time_batch(self.problem.id, self.params, self.dtype,
                                                  seeds, key, self.proposal, move)

    def _between(self):
        """What runs before each timed call: the L2 flush, and a spacer (self.placements)."""
        if not hasattr(self, "_l2"):
            self._l2 = timing.L2Flush(torch.device(self.device))
        return self._l2, self.placements

    # --- the trial ----------------------------------------------------------------------

    def baseline_alone(self, batches: int = 3) -> float:
        """The baseline's mean call time (median over `batches`, after one uncounted), timed
        the way a trial times it; called while no submission process lives, it is what the
        baseline costs on a GPU that nothing else is using."""
        sample = self._warm_baseline()
        key, count = secrets.randbits(62), self._count(sample.nbytes)
        means = []
        for _ in range(batches + 1):
            times, _ = self.baseline_batch(self._seeds(count), key)
            means.append(sum(times) / len(times))
        return statistics.median(means[1:])

    def _warm_baseline(self) -> torch.Tensor:
        warmup = self.draw(secrets.randbits(31))
        for _ in range(self.budget.warmup):
            sample = self.baseline(warmup)
        return sample

    @staticmethod
    def _count(size: int) -> int:
        return max(1, min(BATCH, MEMORY_KEPT // max(size, 1)))

    def run(self) -> TrialResult:
        result = TrialResult()
        try:
            with shown_clock.phase(self.phases, RECORD_CALLS):
                self._propose()
            with shown_clock.phase(self.phases, "build, warm up"):
                self._warm(self.budget.warmup)
        except TimingFailed as exc:
            result.failed = str(exc)
            return result
        with shown_clock.phase(self.phases, "baseline warm-up"):
            size = self._warm_baseline().nbytes
        return self._batches(result, size)

    def _batches(self, result: TrialResult, size: int) -> TrialResult:
        """The timed batches, each side in turn, until the figures settle, the verdict is
        certain, or time is up."""
        key, count = secrets.randbits(62), self._count(size)
        deadline = self.clock() + self.budget.seconds
        try:
            # One batch on each side first, not counted: the memory the batches need is
            # allocated there, and what has not run before is loaded.
            self._move(count, key, FIRST_BATCHES)
            since = 0  # counted batches since the last move
            while True:
                if since == MOVE_EVERY > 0:
                    self._move(count, key, MOVED_BATCHES)
                    since = 0
                before = len(result.student)
                self._batch(result, count, key, size)
                done = len(result.student)
                since += done - before
                settled = precise(result.student, result.baseline) and all(
                    timing.Samples(s).spread <= self.budget.rel_spread
                    for s in (result.student, result.baseline))
                if done >= MAX_BATCHES or (done >= MIN_BATCHES and
                                           (settled or self.clock() > deadline)):
                    break
                if done >= CERTAIN_MIN_BATCHES and self.certain and self.certain(result):
                    break
            allowance.judge_median(result.unexplained, result.student, result.around,
                                   result.calls)
        except TimingFailed as exc:
            result.failed = str(exc)
        except allowance.Rejected as exc:
            result.rejected = str(exc)
            result.unseen = isinstance(exc, allowance.Unseen)
        except _Wrong:
            pass
        return result

    def _move(self, count: int, key: int, phase: str) -> None:
        """Both sides' memory moved (grader.placement), then a batch on each side,
        not counted: it allocates the batches' memory anew."""
        with shown_clock.phase(self.phases, phase):
            self.placements.move()
            self.baseline_batch(self._seeds(count), key)
            self.replay_batch(self._seeds(count), key, move=True)

    @staticmethod
    def _seeds(count: int) -> list[int]:
        return [secrets.randbits(31) for _ in range(count)]

    def _batch(self, result: TrialResult, count: int, key: int, size: int) -> None:
        with shown_clock.phase(self.phases, BASELINE_BATCHES):
            theirs, wall = self.baseline_batch(self._seeds(count), key)
        overhead = max(0.0, wall - sum(theirs))  # drawing, flushing, syncing, checksums here
        seeds = self._seeds(count)
        with shown_clock.phase(self.phases, REPLAY_BATCHES):
            batch = self.replay_batch(seeds, key)
        if len(result.student) < MIN_BATCHES or secrets.randbelow(CHECKED) == 0:
            self._check_one(result, batch, seeds, key, size)  # a wrong output says more
        claimed = sum(batch.times_ms)
        unexplained = batch.wall_ms - claimed - overhead
        result.unexplained.append(unexplained)
        result.around.append(overhead)
        result.calls = count
        allowed = allowance.batch(count, claimed)
        if min(batch.times_ms) <= 0:
            raise allowance.Rejected(f"a timed call reported {min(batch.times_ms):.4g} ms "
                                     "(timers altered)")
        if unexplained > allowed:
            result.over.append(
                f"the grader's clock saw {batch.wall_ms:.4g} ms for a batch of {count} calls "
                f"whose times add up to {claimed:.4g} ms: {unexplained:.3g} ms more than the "
                f"same batch of the baseline spent around its calls here, {allowed:.3g} ms "
                "allowed")
            if len(result.over) > allowance.OVER_ALLOWANCE_TOLERATED:
                raise allowance.Unseen(
                    f"{'; then '.join(result.over)} (work the timed calls did not show: on "
                    "another stream, before or after their events, or timers altered)")
            return  # timed again: the next batch stands in for this one
        result.student.append(claimed / count)
        result.baseline.append(sum(theirs) / count)

    @property
    def replay_process(self) -> ReplayProcess:
        return self.child.replay_process

    def _propose(self) -> None:
        """The wrapper's launches at this size, recorded in the child: what the grader's
        replay times (the wrapper itself is never timed)."""
        proposed = self.proposed or self.child.record(self.problem.id, self.params,
                                                      self.dtype, secrets.randbits(31))
        found = proposal_misconduct(proposed, self.child.track)
        if found:
            raise TimingFailed(f"the call at this size: {found.report}")
        self.proposal = proposed.proposal

    def _warm(self, calls: int) -> None:
        """Untimed replays at this size: compilation and autotuning happen here."""
        outcome = self.replay_process.warm(self.problem.id, self.params, self.dtype,
                                           secrets.randbits(31), self.proposal, calls)
        if outcome.failure:  # the grader's finding, its process's words already quoted
            raise TimingFailed(f"the replay at this size: {outcome.error}")
        if outcome.error:
            raise TimingFailed(said("the replay at this size raised an exception:",
                                    outcome.error))
        if outcome.compile_errors:
            raise TimingFailed(said("the replay at this size: a kernel does not compile for a "
                                    "GPU; the compiler said:", outcome.compile_errors[0]))

    def _check_one(self, result: TrialResult, batch, seeds: list[int], key: int,
                   size: int) -> None:
        """Fetch one output of the batch at random, and judge it (`_judge_one`)."""
        index = secrets.randbelow(len(seeds))
        with shown_clock.phase(self.phases, OUTPUTS_FETCHED):
            output = self.replay_process.fetch(index, size).to(self.device)
        with shown_clock.phase(self.phases, OUTPUTS_CHECKED):
            self._judge_one(result, output, batch.digests[index], seeds[index], key)

    def _judge_one(self, result: TrialResult, output: torch.Tensor, committed: int, seed: int,
                   key: int) -> None:
        """The fetched output must be the one committed to, and right."""
        if committed != timing.digest(output, key):
            raise allowance.Rejected("the output its process sent is not the one its timed "
                                     "call made (its checksum differs)")
        expected = self.problem.reference(self.draw(seed))
        verdict = compare(Outcome(output=output),
                          Expected(expected, DTYPES[self.dtype], self.device, self.tolerance))
        result.checked += 1
        if not verdict.passed:
            result.wrong = verdict.summary
            raise _Wrong()


def precise(student: list[float], baseline: list[float]) -> bool:
    """Whether the speed-up is known to PRECISION (grader.timing.speedup_error)."""
    return timing.speedup_error(student, baseline) <= PRECISION


@contextmanager
def _undisturbed():
    """Around either side's batch, in the grader: nothing else of this process competes with
    the thread that keeps the clock: the collector held off (timing.collector_paused), the
    interpreter handed back at once (timing.quick_switches), no memory measured
    (grader.sandbox.memory_ceiling.held_off). On the H200 honest references were rejected, now and
    then, for 5-9 ms their batches showed beyond the baseline's (BENCHMARKS.md)."""
    with timing.collector_paused(), timing.quick_switches(), memory_ceiling.held_off():
        yield
