"""Grading results: typed records, the stage verdict, and the versioned JSON written by --json.

The bottom layer: where a verdict is decided (the judge, the sandbox's findings, the course's
hints) writes these records; grader/report/ reads them.

The JSON layout is documented by `result.schema.json` next to this file; bump SCHEMA when a
field changes meaning or disappears, so CI scripts that read results can tell.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any

SCHEMA = "tilecourse.result/1"


class Status(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    NOT_STARTED = "NOT STARTED"
    ERROR = "ERROR"
    # Every case that could run here passed, but some cannot run on this GPU (bf16 on a
    # T4): not a pass, since those cases were never checked.
    PARTLY_GRADED = "PARTLY GRADED"


class Failure(str, Enum):
    """The kind of a failed case: data carried with its verdict from where it is decided,
    never parsed back from a message. A hidden case's is FAILED, whatever happened."""

    WRONG_RESULT = "wrong result"
    TIMED_OUT = "timed out"
    CRASHED = "crashed"
    RAISED = "raised an exception"
    DOES_NOT_COMPILE = "does not compile"
    NO_KERNEL = "launched no kernel"
    HOST_WORK = "host did the work"
    NOT_REPLAYABLE = "launches not replayable"  # the grader could not replay what it proposed
    # A load (and no store) outside its tensor: the GPU read memory of something else.
    READ_OUT_OF_BOUNDS = "read out of bounds"
    OUT_OF_BOUNDS = "wrote out of bounds"  # a store outside its tensor (loads too, maybe)
    MODIFIED_INPUTS = "modified its inputs"
    WRONG_RETURN = "returned no tensor on its device"
    NOT_RUN = "not run"  # an earlier case of the stage timed out
    NOT_GRADED = "not graded on this GPU"  # its dtype has no arithmetic on this GPU
    # A hidden case's failure: its kind is the submission's to choose, and so would tell a
    # few bits of the case's inputs (grader.judge.hidden).
    FAILED = "failed"
    # speed cases
    CALLS_FAILED = "the timed calls failed"
    TIMING_REJECTED = "timing rejected"
    TOO_SLOW = "too slow"


# What a hidden case that did not pass says, in its result and every report of it.
HIDDEN_FAILED = "hidden case failed"
HIDDEN_NOT_GRADED = "hidden case not graded on this GPU"  # its dtype, which its name shows


@dataclass
class CaseResult:
    id: str
    dtype: str
    params: dict[str, Any]
    seed: int
    passed: bool
    summary: str
    details: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    hidden: bool = False  # an instructor-only case: inputs and diagnostics are withheld
    failure: Failure | None = None  # set when it failed
    # A failing output drawn (grader.judge.picture.draw) for `grade --picture`: large, and a
    # drawing, so it stays out of the JSON (to_json), where the diagnostics say it in words.
    picture: dict[str, Any] | None = field(default=None, repr=False)


@dataclass
class SpeedCase:
    """One timed comparison of the submission with its PyTorch baseline on the GPU."""

    id: str
    dtype: str
    params: dict[str, Any]
    passed: bool
    summary: str
    ms: float = 0.0  # median
    baseline: str = ""
    baseline_ms: float = 0.0
    speedup: float = 0.0  # baseline_ms / ms
    achieved: float = 0.0  # in `unit`
    unit: str = ""
    ceiling: float = 0.0
    fraction: float = 0.0  # achieved / ceiling
    repeats: int = 0  # batches of timed calls
    spread: float = 0.0  # interquartile range / median of the submission's batch times
    unexplained_ms: float = 0.0  # per call, the most the grader's clock saw beyond its times
    checked: int = 0  # outputs of timed calls fetched and checked
    # trials rejected for what the grader's clock saw beyond the calls (each timed again once)
    trials_rejected: int = 0
    failure: Failure | None = None  # set when it failed


@dataclass
class SpeedResult:
    graded: bool
    reason: str
    points: float = 0.0
    max_points: float = 0.0
    cases: list[SpeedCase] = field(default_factory=list)


@dataclass
class CheckResult:
    """A stage-wide check beyond the cases, such as memory growth; graded=False: not run."""

    name: str
    graded: bool
    passed: bool
    message: str


PHASE_PART = " / "  # "speed / replay batches": a part of the phase before it
# The phase of a stage opened beside an earlier one, its calls recorded and their kernels
# built ahead (grade --profile): seconds of the earlier stage's turn, not of its own.
READIED = "readied beside an earlier stage"


@dataclass
class StageResult:
    number: int
    id: str
    title: str
    backend: str
    module: str
    max_points: float
    status: Status = Status.ERROR
    points: float = 0.0
    message: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    speed: SpeedResult = field(default_factory=lambda: SpeedResult(False, ""))
    seconds: float = 0.0  # wall time of grading this stage, speed included
    # Where those seconds went, by phase ("correctness cases", "speed / replay batches", ...),
    # by the grader's clock (grade --profile shows them). Both are read from the shown clock
    # (grader.shown_clock): nothing done with a hidden case's inputs counts.
    phases: dict[str, float] = field(default_factory=dict)
    checks: list[CheckResult] = field(default_factory=list)
    output: str = ""  # what the submission printed while it was graded
    hints: list[str] = field(default_factory=list)  # the stage's hints its failures match
    # The protections its process ran under (grader.sandbox.Protection); the JSON has them
    # once, at the top: they are the same for every stage of a run.
    sandbox: list[Any] = field(default_factory=list)

    @property
    def cases_passed(self) -> int:
        return sum(c.passed for c in self.cases)

    @property
    def total_points(self) -> float:
        return round(self.points + self.speed.points, 2)

    @property
    def failures(self) -> list[CaseResult]:
        """The failing cases in the order a report shows them: first those with a cause the
        judge confirmed, then those whose output shows how it is wrong (a relation to the
        reference: grader.judge.relation), each the smallest first, as the easiest to reason
        about; then the others in the order they ran. A 1 x 1 case that is wrong shows no
        pattern, and a 45 x 301 one that is twice the right answer everywhere does."""
        failed = [c for c in self.cases if not c.passed]

        def order(numbered: tuple[int, CaseResult]) -> tuple:
            index, case = numbered
            rank = 0 if case.stats.get("causes") else 1 if case.stats.get("relation") else 2
            return (rank, case.stats.get("total", 0), index) if rank < 2 else (rank, 0, index)

        return [case for _, case in sorted(enumerate(failed), key=order)]

    @property
    def total_max_points(self) -> float:
        """Correctness points, plus speed points where speed is graded on this machine."""
        return round(self.max_points + (self.speed.max_points if self.speed.graded else 0), 2)

    def add_readied(self, phases: dict[str, float]) -> None:
        """Record how the stage was readied beside an earlier one: `phases` holds the whole
        under READIED and its parts (nothing: it was not)."""
        parts = dict(phases)
        if READIED in parts:
            self.phases[READIED] = parts.pop(READIED)
            self.add_parts(READIED, parts)

    def add_parts(self, phase: str, parts: dict[str, float]) -> None:
        """Record the parts of `phase` (each shown below it: "speed / replay batches")."""
        self.phases.update({f"{phase}{PHASE_PART}{name}": s for name, s in parts.items()})

    def conclude(self, total_cases: int) -> None:
        """Status and points from the case results: points in proportion to cases passed.
        A failed stage-wide check (memory growth: the kernel is not what the stage asks
        for) fails the stage."""
        passed = self.cases_passed
        not_graded = sum(c.failure is Failure.NOT_GRADED for c in self.cases)
        self.status = Status.PASS if passed == total_cases and total_cases else Status.FAIL
        if not_graded and passed + not_graded == total_cases:
            self.status = Status.PARTLY_GRADED
        self.points = round(self.max_points * passed / total_cases, 2) if total_cases else 0.0
        if any(c.graded and not c.passed for c in self.checks):
            self.status, self.points = Status.FAIL, 0.0


@dataclass
class Report:
    course: str
    target: str  # "exercises" or "solutions"
    backend: str
    backend_reason: str
    machine: dict[str, Any]
    started_at: str
    seed: int = 0  # the run's seed: `--seed` reproduces the inputs
    seconds: float = 0.0
    stages: list[StageResult] = field(default_factory=list)

    @property
    def sandbox(self) -> list[Any]:
        """The protections the submission ran under (none: no submission code ran)."""
        return next((s.sandbox for s in self.stages if s.sandbox), [])

    @property
    def points(self) -> float:
        return round(sum(s.total_points for s in self.stages), 2)

    @property
    def max_points(self) -> float:
        return round(sum(s.total_max_points for s in self.stages), 2)

    @property
    def passed(self) -> bool:
        """Every stage correct, and fast enough wherever speed was graded."""
        return all(s.status is Status.PASS and (not s.speed.graded or s.speed.points == s.speed.max_points)
                   for s in self.stages)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["sandbox"] = [asdict(p) for p in self.sandbox]
        for stage, result in zip(data["stages"], self.stages):
            del stage["sandbox"]
            for case in stage["cases"]:
                del case["picture"]
            stage["status"] = result.status.value
            stage["cases_passed"] = result.cases_passed
            stage["total_points"] = result.total_points
            stage["total_max_points"] = result.total_max_points
        return {"schema": SCHEMA, **data, "points": self.points, "max_points": self.max_points,
                "passed": self.passed}

    def write_json(self, path: Path) -> None:
        write_file(path, json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Report":
        """The report a `to_json` dict describes (what `grade batch` reads back to write a
        student's feedback). The sandbox protections and derived totals are not kept."""
        stages = [_stage_from_json(s) for s in data.get("stages", [])]
        return _build(cls, data, stages=stages)


@dataclass(frozen=True)
class Standing:
    """Where one submission stands in the class's policy, as the platform that took it says
    (Gradescope's submission metadata, grader.intake.gradescope_metadata): which of the
    student's submissions it is, how late it came, and, past the resubmission limit, the
    earlier result that stands in its place (it is then not graded)."""

    number: int  # this submission, the earlier ones counted
    allowed: int | None = None  # the class's limit (None: any number)
    days_late: int = 0  # the most of any stage
    # (stage id, percent of its points taken off), each stage late by its own due date
    stage_late: tuple[tuple[str, float], ...] = ()
    held: dict[str, Any] | None = None  # past the limit: the results.json that stands

    def after(self, report: "Report") -> float:
        """The report's points once each stage's late penalty is taken off."""
        late = dict(self.stage_late)
        return round(sum(s.total_points * (1 - late.get(s.id, 0.0) / 100)
                         for s in report.stages), 2)

    @property
    def over_limit(self) -> bool:
        return self.allowed is not None and self.number > self.allowed


def _build(kind, data: dict[str, Any], **given):
    """`kind(...)` from the keys of `data` that are its fields, and `given` over them."""
    names = {f.name for f in fields(kind)}
    return kind(**{**{k: v for k, v in data.items() if k in names}, **given})


def _failure(value: str | None) -> Failure | None:
    return Failure(value) if value else None


def _stage_from_json(data: dict[str, Any]) -> StageResult:
    speed = data.get("speed") or {}
    return _build(
        StageResult, data, status=Status(data["status"]), sandbox=[],
        cases=[_build(CaseResult, c, failure=_failure(c.get("failure")))
               for c in data.get("cases", [])],
        checks=[_build(CheckResult, c) for c in data.get("checks", [])],
        speed=_build(SpeedResult, {"graded": False, "reason": "", **speed},
                     cases=[_build(SpeedCase, c, failure=_failure(c.get("failure")))
                            for c in speed.get("cases", [])]))


def write_file(path: Path, data: str | bytes) -> None:
    """Write a result file whole or not at all: into a scratch file beside it, renamed into
    place, so that no reader ever sees half of one. A path that is not a plain file
    (/dev/stdout, a pipe) is written as it is."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if path.is_symlink() or (path.exists() and not path.is_file()):
        path.write_bytes(raw)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
