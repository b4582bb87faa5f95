"""What one speed trial found (grader.speed.trial): its batches' figures on both sides,
and why, if so, they do not stand."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class TrialResult:
    student: list[float] = field(default_factory=list)  # per batch: mean call time, ms
    baseline: list[float] = field(default_factory=list)
    unexplained: list[float] = field(default_factory=list)  # per batch: what the grader's
    # clock saw beyond the reported times and the baseline batch's own work around its calls
    around: list[float] = field(default_factory=list)  # per batch: the grader's own work
    # around the baseline's calls (drawing, flushing, synchronising, checksums), ms
    calls: int = 0  # timed calls per batch
    over: list[str] = field(default_factory=list)  # batches over their allowance, dropped
    checked: int = 0  # outputs fetched and checked
    wrong: str | None = None  # why a checked output is wrong
    rejected: str | None = None  # why the timing was not believed
    unseen: bool = False  # rejected for what the grader's clock saw beyond the calls
    failed: str | None = None  # why the timed calls could not run

    @property
    def timed(self) -> bool:
        """Whether the trial timed batches without a failure, a rejection or a wrong output."""
        return bool(self.student) and not (self.failed or self.rejected or self.wrong)

    @property
    def student_ms(self) -> float:
        return statistics.median(self.student)

    @property
    def baseline_ms(self) -> float:
        return statistics.median(self.baseline)

    @property
    def unexplained_ms(self) -> float:
        """The most, per call, that the grader's clock saw in one batch beyond the calls."""
        return max(self.unexplained, default=0.0) / max(self.calls, 1)
