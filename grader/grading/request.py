"""One grading request, resolved once.

`grade`, `pytest --pyargs grader.checks` and `grade batch` each build a GradingRequest from
what they were asked (the course, the stages, a backend name, a track, the solutions or a
student's folder, a seed, limits, result files) and call `resolve()`, the one place that
decides what was left open: which track is graded and on which backend, which file each
stage reads, and the run's seed. What is decided travels down as one `Grading` record,
never as long parameter lists.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from grader.backends import selection as backends
from grader.backends.selection import Selection
from grader.course import Course, Stage
from grader.course.outline import CourseOutline, StageOutline
from grader.errors import GradeError
from grader.intake import started_stages
from grader.results import StageResult
from grader.tracks import TRACKS


@dataclass(frozen=True)
class Limits:
    """How long a submission may take. `timeout` overrides each stage's time limit per
    call; `keep_going` runs every case of a stage even after one timed out."""

    timeout: float | None = None
    keep_going: bool = False


@dataclass(frozen=True)
class Outputs:
    """The result files asked for besides the scorecard, and how much the scorecard shows."""

    json: Path | None = None
    junit: Path | None = None
    gradescope: Path | None = None
    # Gradescope's submission_metadata.json: the submission's time and the earlier ones, for
    # the class's late penalty and resubmission limit in results.json
    gradescope_metadata: Path | None = None
    markdown: Path | None = None
    picture: Path | None = None  # a folder: failures.html
    benchmark_json: Path | None = None  # pytest-benchmark's record of the timed cases
    verbose: bool = False
    profile: bool = False  # show where the time went (each stage's phases)
    summary: Path | None = None  # the Markdown scorecard, appended (a CI job's summary)
    # The stages graded so far, rewritten after each one (`grade batch` keeps them when a
    # submission runs out of its --limit before the last stage).
    so_far: Path | None = None

    def files(self) -> list[Path]:
        """The files grading writes (the picture's folder is not one)."""
        return [p for p in (self.json, self.junit, self.gradescope, self.markdown,
                            self.benchmark_json, self.summary) if p]


@dataclass(frozen=True)
class TrackChoice:
    """The track a submission is graded on (None: the backend's own choice) and why."""

    track: str | None
    why: str


@dataclass(frozen=True)
class GradingRequest:
    """What was asked: grade `stages` of `course` from the solutions, from `submission` (a
    folder laid out like exercises/, or one holding exercises/), or else from the course's
    own exercises/. `module` grades that one file for the one stage asked for. What it
    decides reads only the course's folder and its stages' files: a course's outline
    (grader.course.outline) does for a request answered before anything is graded
    (grader.grading.unstarted)."""

    course: Course | CourseOutline
    stages: tuple[Stage | StageOutline, ...]
    backend: str = backends.AUTO
    track: str | None = None
    solutions: bool = False
    submission: Path | None = None
    module: Path | None = None
    seed: int | None = None
    limits: Limits = field(default_factory=Limits)
    outputs: Outputs = field(default_factory=Outputs)

    def resolve(self) -> Grading:
        """Everything left open, decided; raises GradeError for a request that cannot be
        graded (and BackendUnavailable, with the fix, where its backend cannot run)."""
        if self.solutions and not (self.course.root / "solutions").is_dir():
            raise GradeError(f"{self.course.root} has no solutions/ folder (a student "
                             "handout?): --solutions needs the instructor's copy of the course.")
        if self.solutions and self.submission:
            raise GradeError("Use --solutions or --submission, not both.")
        if self.module is not None and len(self.stages) != 1:
            raise GradeError("One file grades one stage: name a single stage.")
        folder = self.folder()
        choice = self.choose_track(folder)
        selection = backends.select(self.backend, choice.track)
        if choice.track is not None and choice.track != self.track and self.backend == backends.AUTO:
            selection = Selection(selection.backend, f"{selection.reason}; the "
                                  f"{choice.track} track: {choice.why}")
        seed = secrets.randbelow(2**31) if self.seed is None else self.seed
        target = ("solutions" if self.solutions else str(self.submission) if self.submission
                  else "exercises")
        return Grading(self, selection, folder, target, seed)

    def folder(self) -> Path:
        """The folder laid out like exercises/ whose files are graded."""
        if self.solutions:
            return self.course.root / "solutions"
        if self.submission is None:
            return self.course.root / "exercises"
        inner = self.submission / "exercises"
        return inner if inner.is_dir() else self.submission

    def choose_track(self, folder: Path) -> TrackChoice:
        """The track to grade: forced by --track or a backend's name, else the one whose
        stage files in `folder` are started (the one with more started stages, when both
        are; a tie goes to the first track); the solutions, a single file, or nothing
        started leave it to the backend (on a GPU where cuTile runs, cuTile)."""
        if self.track:
            return TrackChoice(self.track, "chosen with --track")
        if self.backend != backends.AUTO:
            return TrackChoice(backends.BACKENDS[self.backend].track,
                               f"chosen with --backend {self.backend}")
        if self.solutions or self.module is not None:
            return TrackChoice(None, "the reference solutions" if self.solutions else "one file")
        started = started_stages(self.stages, folder)
        counts = {track: len(ids) for track, ids in started.items()}
        if not any(counts.values()):
            return TrackChoice(None, "no stage started")
        best = max(TRACKS, key=lambda t: counts[t])
        others = [t for t in TRACKS if t != best and started[t]]
        if not others:
            return TrackChoice(best, "the only track whose exercises are started")
        tied = any(counts[t] == counts[best] for t in others)
        # Say how to grade the other: a student who started both must not take the one
        # graded for the only one there is.
        return TrackChoice(best, ("as many stages started as the other, and first in the "
                                  f"tracks' order ({', '.join(TRACKS)})" if tied
                                  else "the track with more stages started")
                           + "; also started, not graded: "
                           + "; ".join(f"{t}: {' '.join(started[t])} (`--track {t}` grades "
                                       "it)" for t in others))

    def child_options(self) -> list[str]:
        """This request's backend, track, seed and limits as `grade` options, for a
        `grade all` process of its own (grade batch, a Slurm task)."""
        options = ["--backend", self.backend]
        options += ["--track", self.track] if self.track else []
        options += ["--seed", str(self.seed)] if self.seed is not None else []
        options += ["--timeout", f"{self.limits.timeout:g}"] if self.limits.timeout else []
        options += ["--keep-going"] if self.limits.keep_going else []
        return options

    def to_json(self) -> dict:
        """How a class is graded, as a Slurm manifest keeps it (course and stages apart)."""
        return {"backend": self.backend, "track": self.track, "seed": self.seed,
                "timeout": self.limits.timeout, "keep_going": self.limits.keep_going}

    @classmethod
    def from_json(cls, course: Course, data: dict) -> GradingRequest:
        return cls(course, tuple(course.stages), data["backend"], data.get("track"),
                   seed=data.get("seed"), limits=Limits(data.get("timeout"),
                                                        bool(data.get("keep_going"))))


@dataclass(frozen=True)
class StageFile:
    """The file a stage reads, and how messages name it."""

    path: Path
    shown: str


@dataclass(frozen=True)
class Grading:
    """A request resolved: the backend (with why), the folder graded, the run's seed."""

    request: GradingRequest
    selection: Selection
    folder: Path
    target: str  # how the scorecard names what was graded
    seed: int

    @property
    def course(self) -> Course:
        return self.request.course

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.request.stages

    @property
    def limits(self) -> Limits:
        return self.request.limits

    @property
    def outputs(self) -> Outputs:
        return self.request.outputs

    @property
    def track(self) -> str:
        return self.selection.backend.track

    def file(self, stage: Stage) -> StageFile:
        path = self.request.module or self.folder / stage.modules[self.track]
        try:
            shown = str(path.relative_to(self.course.root))
        except ValueError:
            shown = str(path)
        return StageFile(path, shown)

    def label(self, stage: Stage) -> str:
        """How the progress names a stage while it is graded."""
        return f"{stage.name} {stage.id} [{self.selection.backend.name}]"

    def new_result(self, stage: Stage) -> StageResult:
        """The result of a stage before anything is graded."""
        return StageResult(number=stage.number, id=stage.id, title=stage.title,
                           backend=self.selection.backend.name, module=self.file(stage).shown,
                           max_points=stage.points)
