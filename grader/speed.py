"""Grading a stage's speed on the GPU: each speed case timed against its PyTorch baseline.

Speed is graded only where it means something: on a GPU backend, for a stage whose
correctness passed, and when course.toml sets a threshold for that backend. Anywhere else
the scorecard says "not graded" and why; it never counts as a pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from grader import ceilings as ceilings_module
from grader import timing
from grader.backends import Selection
from grader.compare import compare
from grader.course import Case, Stage, Threshold
from grader.problems import DTYPES
from grader.results import SpeedCase, SpeedResult
from grader.sandbox import Runner

PLAUSIBLE_FRACTION = 1.15  # above the measured ceiling by more than noise: impossible
BASELINE_SLACK = 1.5  # the baseline next to the submission vs alone in the grader


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


def not_graded_reason(stage: Stage, selection: Selection) -> str | None:
    """Why speed cannot be graded for this stage and backend (None: it can)."""
    if selection.backend.device != "cuda":
        return "needs a GPU"
    if stage.speed is None or selection.backend.name not in stage.speed.thresholds:
        return f"no speed thresholds for {selection.backend.name} in course.toml"
    return None


@dataclass
class Timed:
    """A speed case's verdict and the submission's raw samples (for pytest-benchmark)."""

    case: SpeedCase
    samples_ms: list[float]


class SpeedCheck:
    """Times the speed cases of one stage for one loaded submission."""

    def __init__(self, stage: Stage, selection: Selection, runner: Runner,
                 threshold: Threshold | None = None, run_seed: int = 0):
        assert stage.speed is not None
        self.stage = stage
        self.speed = stage.speed
        self.threshold = threshold or stage.speed.thresholds[selection.backend.name]
        self.runner = runner
        self.run_seed = run_seed
        self.device = selection.backend.device
        self.results: dict[str, SpeedCase] = {}

    def time(self, case: Case) -> Timed:
        problem = self.stage.problem
        dtype = DTYPES[case.dtype]
        seed = case.seed_in_run(self.run_seed)
        call = problem.draw(case.params, case.dtype, seed).to(self.device)
        expected = problem.reference(call)
        samples, output, error = self.runner.time(problem.id, dict(case.params), case.dtype, seed,
                                                  self.speed.baseline, self.speed.seconds,
                                                  expected.nbytes)
        result = SpeedCase(id=case.id, dtype=case.dtype, params=dict(case.params), passed=False,
                           summary="", baseline=self.speed.baseline)
        self.results[case.id] = result
        if error:
            result.summary = f"the timed calls failed: {error}"
            return Timed(result, [])
        # The timed calls must compute the right thing too, not only the checked ones.
        verdict = compare(output, expected, dtype, "cpu", self.stage.tolerance[case.dtype])
        mine = timing.Samples(samples["student"])
        theirs = timing.Samples(samples["baseline"])
        work = problem.work(case.params, dtype)
        limits = ceilings_module.ceilings()
        ceiling, unit = limits.limit(work, case.dtype)
        rate = ceilings_module.achieved(work, mine.median / 1e3)
        result.ms = round(mine.median, 4)
        result.baseline_ms = round(theirs.median, 4)
        result.speedup = round(theirs.median / mine.median, 3)
        result.achieved, result.unit, result.ceiling = round(rate, 1), unit, ceiling
        result.fraction = round(rate / ceiling, 3)
        result.repeats, result.spread = len(mine.times_ms), round(mine.spread, 3)
        tampered = self._tampered(result, problem.baselines[self.speed.baseline], call)
        result.passed, result.summary = self._verdict(result, verdict.passed, verdict.summary, tampered)
        return Timed(result, mine.times_ms)

    def _tampered(self, r: SpeedCase, baseline, call) -> str | None:
        """Figures that cannot be true: the timing in the submission's process was altered."""
        if r.fraction > PLAUSIBLE_FRACTION:
            return (f"{100 * r.fraction:.0f}% of the GPU's measured ceiling is not possible: the "
                    "timing was altered")
        # The baseline, timed here in the grader's own process, must take about as long.
        own = timing.measure({"baseline": lambda: baseline(call)},
                             timing.Budget(seconds=1.0, min_repeats=10))["baseline"].median
        if r.baseline_ms > BASELINE_SLACK * own:
            return (f"the baseline took {r.baseline_ms:.4g} ms next to the submission but "
                    f"{own:.4g} ms in the grader: something slowed PyTorch down")
        return None

    def summary(self) -> SpeedResult:
        """Speed points in proportion to the speed cases that were fast enough."""
        cases = [self.results[c.id] for c in self.speed.cases if c.id in self.results]
        passed, total = sum(c.passed for c in cases), len(self.speed.cases)
        points = round(self.speed.points * passed / total, 2) if total else 0.0
        return SpeedResult(True, f"{passed}/{total} speed cases fast enough", points,
                           self.speed.points, cases)

    def _verdict(self, r: SpeedCase, correct: bool, wrong: str, tampered: str | None) -> tuple[bool, str]:
        figures = (f"{r.ms:.4g} ms vs {r.baseline} {r.baseline_ms:.4g} ms: {r.speedup:.2f}x; "
                   f"{r.achieved:g} {r.unit} = {100 * r.fraction:.0f}% of the measured "
                   f"{r.ceiling:g} {r.unit}")
        if not correct:
            return False, f"the timed calls returned a wrong result: {wrong}"
        if tampered:
            return False, f"timing rejected: {tampered}"
        missed = []
        t = self.threshold
        if t.min_speedup is not None and r.speedup < t.min_speedup:
            missed.append(f"needs {t.min_speedup:g}x {r.baseline}")
        if t.min_fraction is not None and r.fraction < t.min_fraction:
            missed.append(f"needs {100 * t.min_fraction:.0f}% of the limit")
        if missed:
            return False, f"too slow: {figures} ({'; '.join(missed)})"
        return True, figures
