"""Grading a stage's speed on the GPU: each speed case timed against its PyTorch baseline.

Speed is graded only where it means something: on a GPU backend, for a stage whose
correctness passed, and when course.toml sets a threshold for that backend on this GPU's
architecture (a speed-up over PyTorch measured on an H200 says little about a T4). Anywhere
else the scorecard says "not graded" and why; it never counts as a pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from grader import shown_clock, timing
from grader.backends.selection import Selection, dtype_unsupported, gpu_arch
from grader.course import Case, Stage, Threshold
from grader.problems import DTYPES
from grader.results import Failure, SpeedCase, SpeedResult
from grader.sandbox import ChildProcess
from grader.sandbox.outcomes import Proposed
from grader.speed import ceilings as ceilings_module
from grader.speed.result import TrialResult
from grader.speed.trial import RECORD_CALLS, TimedCase, Trial

# The parts of speed (grade --profile) that read the GPU's ceilings (measured where none are
# cached), and that measure them again when a kernel seems to beat them.
CEILINGS = "the GPU's ceilings"
CEILINGS_AGAIN = "the GPU's ceilings measured again"
PLAUSIBLE_FRACTION = 1.15  # above the measured ceiling by more than noise: impossible
# A speed-up this close to its threshold (either side) is timed once more, and the verdict
# taken over both trials' batches: five gradings of the same matmul on the H200 spread 1.85%
# (BENCHMARKS.md), so a single trial there could land on either side.
RETIME_WITHIN = 0.02
# The baseline is also timed with the submission's process ended (its GPU context, and any
# work it left running, gone with it). Timed next to the submission it may read this much
# slower (drift) before its time alone is used instead: GPU work a submission leaves running
# after its batch would slow the grader's next baseline batch and flatter the speed-up.
BASELINE_SLOWER = 0.03
# A trial stops before its full precision (grader.speed.trial.PRECISION) once its verdict is
# certain: every figure with a threshold is known to CERTAIN_PRECISION and lies farther from
# its threshold than RETIME_WITHIN plus CERTAIN_SIGMAS standard errors. Most cases are far
# from theirs (a speed-up of 4x against 3.15x), and timing them to 0.2% spent most of a
# grading. Five gradings at 0.5% land within about 2.3 standard errors of one another
# (1.2%), inside the 2% the repeatability check asks (scripts/repeat_check.py).
CERTAIN_PRECISION = 0.005
CERTAIN_SIGMAS = 4.0


def merge_benchmark_files(parts: list[Path], out: Path) -> None:
    """One pytest-benchmark JSON from the per-stage files (pytest runs once per stage)."""
    merged = None
    for part in parts:
        if not part.is_file():
            continue
        data = json.loads(part.read_text())
        if merged is None:
            merged = data
        else:
            merged["benchmarks"] += data["benchmarks"]
        part.unlink()
    if merged is not None:
        out.write_text(json.dumps(merged, indent=2))


@dataclass
class Timed:
    """A speed case's verdict and the submission's raw samples (for pytest-benchmark)."""

    case: SpeedCase
    samples_ms: list[float]


class SpeedCheck:
    """Times the speed cases of one stage for one loaded submission."""

    def __init__(self, stage: Stage, selection: Selection, child: ChildProcess,
                 threshold: Threshold | None = None, run_seed: int = 0):
        assert stage.speed is not None
        self.stage = stage
        self.speed = stage.speed
        self.threshold = threshold or stage.speed.threshold(gpu_arch(), selection.backend.name)
        # the baseline timed here: this architecture's, where its threshold names one
        self.baseline = (self.threshold.baseline if self.threshold and self.threshold.baseline
                         else stage.speed.baseline)
        self.child = child
        self.run_seed = run_seed
        self.device = selection.backend.device
        self._alone: dict[str, float] | None = None  # case id -> baseline ms, timed alone
        self.results: dict[str, SpeedCase] = {}  # case id -> its verdict, once timed
        self._proposed: dict[str, Proposed] = {}  # case id -> the wrapper's proposal
        self.phases: dict[str, float] = {}  # where the trials' seconds went (grade --profile)

    def _trial(self, case: Case, certain: Callable[[TrialResult], bool] | None = None) -> Trial:
        problem = self.stage.problem
        timed = TimedCase(problem, dict(case.params), case.dtype, problem.baselines[self.baseline],
                          self.stage.tolerance[case.dtype], self.device, certain)
        return Trial(timed, self.child, timing.Budget(seconds=self.speed.seconds),
                     self._proposed.get(case.id), self.phases)

    def _certainty(self, alone: float | None,
                   roofline: ceilings_module.Roofline) -> Callable[[TrialResult], bool] | None:
        """The rule that tells a trial its verdict is already certain (CERTAIN_PRECISION);
        None where there is no threshold to decide (calibration times to the precision)."""
        wanted = self.threshold
        if wanted is None or (wanted.min_speedup is None and wanted.min_fraction is None):
            return None

        def certain(found: TrialResult) -> bool:
            figures = []  # (figure / its threshold, the figure's relative error)
            if wanted.min_speedup is not None:
                error = timing.speedup_error(found.student, found.baseline)
                baseline_ms = found.baseline_ms
                if alone and baseline_ms > alone * (1 + BASELINE_SLOWER):  # as the verdict
                    baseline_ms = alone
                    error = max(error, timing.median_error(found.student))
                figures.append((baseline_ms / found.student_ms / wanted.min_speedup, error))
            if wanted.min_fraction is not None:
                fraction = roofline.fraction(found.student_ms / 1e3)
                if fraction > PLAUSIBLE_FRACTION:  # the ceiling is measured again: no verdict yet
                    return False
                figures.append((fraction / wanted.min_fraction,
                                timing.median_error(found.student)))
            return all(error <= CERTAIN_PRECISION
                       and abs(ratio - 1) > RETIME_WITHIN + CERTAIN_SIGMAS * error
                       for ratio, error in figures)

        return certain

    def baselines_alone(self) -> dict[str, float]:
        """Before any of the stage's speed cases: the wrapper's proposal for each, recorded
        in the child; then the child is ended (its GPU context, and anything it left running,
        with it) for good; then each baseline is timed once, the replay alone beside it."""
        if self._alone is None:
            cases = [c for c in self.speed.cases if not dtype_unsupported(c.dtype, self.device)]
            with shown_clock.phase(self.phases, RECORD_CALLS):
                for case in cases:
                    self._proposed[case.id] = self.child.record(
                        self.stage.problem.id, dict(case.params), case.dtype,
                        case.seed_in_run(self.run_seed))
                self.child.end()
            with shown_clock.phase(self.phases, "baselines alone"):
                self._alone = {case.id: self._trial(case).baseline_alone() for case in cases}
        return self._alone

    def time(self, case: Case) -> Timed:
        """Time one speed case; its verdict is also kept in `results`."""
        timed = self._timed(case)
        self.results[case.id] = timed.case
        return timed

    def _timed(self, case: Case) -> Timed:
        problem = self.stage.problem
        dtype = DTYPES[case.dtype]
        result = SpeedCase(id=case.id, dtype=case.dtype, params=dict(case.params), passed=False,
                           summary="", baseline=self.baseline)
        alone = self.baselines_alone().get(case.id)  # first: it records the proposals
        if unsupported := dtype_unsupported(case.dtype, self.device):
            result.summary = f"not graded on this GPU: {unsupported}"
            result.failure = Failure.NOT_GRADED
            return Timed(result, [])
        work = problem.work(case.params, dtype)
        with shown_clock.phase(self.phases, CEILINGS):
            roofline = ceilings_module.ceilings().roofline(work, case.dtype)
        trial = self._trial(case, self._certainty(alone, roofline))
        found, rejected = self._run(trial)
        if self._near_threshold(found):
            again, rejected_again = self._run(trial)
            found, rejected = _together(found, again), rejected + rejected_again
        result.trials_rejected = rejected
        if found.failed:
            result.summary = f"the timed calls failed: {found.failed}"
            result.failure = Failure.CALLS_FAILED
            return Timed(result, [])
        if not found.student:  # the first batch was rejected or wrong: nothing to show
            result.summary = (f"timing rejected: {found.rejected}" if found.rejected else
                              f"the timed calls returned a wrong result: {found.wrong}")
            result.failure = Failure.TIMING_REJECTED if found.rejected else Failure.WRONG_RESULT
            return Timed(result, [])
        if roofline.fraction(found.student_ms / 1e3) > PLAUSIBLE_FRACTION:
            # Faster than the cached ceiling allows: measure the ceiling again before
            # calling the timing altered (a ceiling cached from a busy GPU is too low).
            with shown_clock.phase(self.phases, CEILINGS_AGAIN):
                roofline = ceilings_module.ceilings(remeasure=True).roofline(work, case.dtype)
        baseline_ms, slowed = found.baseline_ms, ""
        if alone and baseline_ms > alone * (1 + BASELINE_SLOWER):
            slowed = (f"; the {self.baseline} baseline ran {100 * (baseline_ms / alone - 1):.0f}% "
                      f"slower next to the submission than alone, so its time alone counts")
            baseline_ms = alone
        result.ms = round(found.student_ms, 4)
        result.baseline_ms = round(baseline_ms, 4)
        result.speedup = round(baseline_ms / found.student_ms, 3)
        result.unit, result.ceiling = roofline.unit, roofline.ceiling
        result.achieved = round(roofline.achieved(found.student_ms / 1e3), 1)
        result.fraction = round(roofline.fraction(found.student_ms / 1e3), 3)
        result.repeats = len(found.student)
        result.spread = round(timing.Samples(found.student).spread, 3)
        result.unexplained_ms = round(found.unexplained_ms, 4)
        result.checked = found.checked
        tampered = found.rejected or self._implausible(result)
        result.passed, result.summary, result.failure = self._verdict(
            result, found.wrong is None, found.wrong or "", tampered)
        result.summary += slowed
        if rejected and not found.rejected:
            result.summary += ("; timed twice: in the first trial the grader's clock saw more "
                               "than the calls' times and its own work explain")
        return Timed(result, found.student)

    @staticmethod
    def _run(trial: Trial) -> tuple[TrialResult, int]:
        """The trial's result, and how many trials its clock alone rejected
        (allowance.Unseen): a trial rejected so is timed once more, and the second trial
        stands. On the H200 two gradings of four rejected one honest reference each so, in
        one trial, where every other grading of the same code passed it; work hidden in the
        calls shows in every trial."""
        first = trial.run()
        if not first.unseen:
            return first, 0
        second = trial.run()
        if second.unseen:
            second.rejected += "; a first trial was rejected likewise"
            return second, 2
        return second, 1

    def _near_threshold(self, found) -> bool:
        """Whether an untroubled trial's speed-up lies within the noise of the threshold."""
        if not found.timed:
            return False
        wanted = self.threshold.min_speedup
        speedup = found.baseline_ms / found.student_ms
        return bool(wanted) and abs(speedup / wanted - 1) <= RETIME_WITHIN

    def _implausible(self, r: SpeedCase) -> str | None:
        """A figure that cannot be true, whatever the clocks say."""
        if r.fraction > PLAUSIBLE_FRACTION:
            return (f"{100 * r.fraction:.0f}% of the GPU's measured ceiling is not possible: the "
                    "timing was altered")
        return None

    def summary(self, cases: list[SpeedCase]) -> SpeedResult:
        """Speed points in proportion to the speed cases (those pytest reported) that were
        fast enough; a case not graded on this GPU earns none."""
        passed, total = sum(c.passed for c in cases), len(self.speed.cases)
        points = round(self.speed.points * passed / total, 2) if total else 0.0
        reason = f"{passed}/{total} speed cases fast enough"
        if skipped := sum(c.failure is Failure.NOT_GRADED for c in cases):
            reason += f" ({skipped} not graded on this GPU)"
        return SpeedResult(True, reason, points, self.speed.points, cases)

    def _verdict(self, r: SpeedCase, correct: bool, wrong: str,
                 tampered: str | None) -> tuple[bool, str, Failure | None]:
        figures = (f"{r.ms:.4g} ms vs {r.baseline} {r.baseline_ms:.4g} ms: {r.speedup:.2f}x; "
                   f"{r.achieved:g} {r.unit} = {100 * r.fraction:.0f}% of the measured "
                   f"{r.ceiling:g} {r.unit}")
        if not correct:
            return False, f"the timed calls returned a wrong result: {wrong}", Failure.WRONG_RESULT
        if tampered:
            return False, f"timing rejected: {tampered}", Failure.TIMING_REJECTED
        t = self.threshold
        missed = t.missed(r.speedup, r.fraction, r.baseline)
        if t.copied_from:
            figures += (f" (threshold copied from {t.copied_from}: not yet calibrated on "
                        f"{gpu_arch()})")
        if missed:
            return False, f"too slow: {figures} ({'; '.join(missed)})", Failure.TOO_SLOW
        return True, figures, None


def _together(first, second):
    """Two trials of one case as one: the second's failure stands; else all batches count."""
    if not second.timed:
        return second
    for name in ("student", "baseline", "unexplained", "around", "over"):
        getattr(first, name).extend(getattr(second, name))
    first.checked += second.checked
    return first
