"""The course as typed records: what course.toml says, checked (grader.course.checker).

Each record is defined here once. Where a table of course.toml is a record, its keys are the
record's fields, with their types and bounds (grader.course.bounds), and grader.course.schema
validates the table straight into it; a stage and its cases are made of such records and of
what their place in the file says (the stage's number and problem, a case per dtype). Plain
frozen dataclasses: the grader's front door imports them, and no pydantic with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from grader.course.bounds import NAME, NOT_NEGATIVE, ONE_OR_MORE, POSITIVE, TEXT, Bound
from grader.course.naming import HIDDEN_FILE, named, select, stage_name
from grader.course.policy import Policy
from grader.results import Failure

if TYPE_CHECKING:  # the problems import PyTorch, which the dataclasses need not
    from grader.problems import Problem

WHOLE_DIM = "*"  # tile spec entry: one program owns the whole dimension
FailureKind = Literal[tuple(kind.value for kind in Failure)]  # as the result records say it
Text = Annotated[str, TEXT]


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True)
class Case:
    """One graded call: problem parameters, a dtype and the seed its inputs are drawn from."""

    params: dict[str, Any]
    dtype: str
    seed: int
    hidden: int = 0  # instructor-only cases are numbered from 1; their inputs stay secret
    # The names of the stage's lesson claims this case tests (Stage.claims); not part of id.
    claims: tuple[str, ...] = ()

    def seed_in_run(self, run_seed: int) -> int:
        """The seed this case's inputs are drawn from in a run (run seed 0: the course's own)."""
        return (self.seed ^ run_seed) & 0x7FFFFFFF

    @property
    def id(self) -> str:
        if self.hidden:
            return f"hidden{self.hidden}-{self.dtype}"
        shown = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"{shown}-{self.dtype}"


@dataclass(frozen=True)
class Threshold:
    """What a kernel must reach on the GPU for its speed points (None: not required)."""

    min_speedup: Annotated[float, POSITIVE] | None = None  # baseline time / kernel time
    # the fraction of the case's roofline limit
    min_fraction: Annotated[float, POSITIVE] | None = None
    # Another architecture's figures, not measured on this one (`grade calibrate --write`
    # on such a GPU replaces them): the verdict says so.
    copied_from: Text | None = None
    # The baseline timed on this architecture instead of the stage's (one of the problem's
    # baselines): SDPA's FlashAttention backend, say, does not run on a T4.
    baseline: Text | None = None

    def missed(self, speedup: float, fraction: float, baseline: str) -> list[str]:
        """What figures of a case fall short of, in the verdict's words (empty: met)."""
        missed = []
        if self.min_speedup is not None and speedup < self.min_speedup:
            missed.append(f"needs {self.min_speedup:g}x {baseline}")
        if self.min_fraction is not None and fraction < self.min_fraction:
            missed.append(f"needs {100 * self.min_fraction:.0f}% of the limit")
        return missed


@dataclass(frozen=True)
class Speed:
    """How a stage's speed is graded: the cases timed, the baseline, and thresholds per GPU
    architecture and backend (a kernel's speed relative to PyTorch differs between GPUs)."""

    points: float
    baseline: str
    cases: tuple[Case, ...]
    thresholds: dict[str, dict[str, Threshold]]  # "sm_90" -> backend name -> threshold
    seconds: float = 3.0  # timing budget per case
    # Why the plain (untuned) kernel may earn these points too (empty: it must not): the
    # stage's work is at the GPU's limit without tuning (scripts/untuned_check.py).
    plain_at_limit: str = ""

    def threshold(self, arch: str | None, backend: str) -> Threshold | None:
        """The threshold for `backend` on a GPU of `arch` (None: not set for it)."""
        return self.thresholds.get(arch or "", {}).get(backend)


@dataclass(frozen=True)
class MemoryGrowth:
    """On a GPU: the peak extra memory of a call at `large` may be at most `max_growth` times
    that at `small` - for a kernel whose memory must grow linearly, not quadratically."""

    small: Case
    large: Case
    max_growth: Annotated[float, Bound(gt=1)]


@dataclass(frozen=True)
class SubmissionRules:
    """What a kernel submission may do besides launching kernels ([submissions] in course.toml)."""

    forbidden_imports: tuple[Text, ...]  # modules; a submodule of one is forbidden too
    forbidden_calls: tuple[Text, ...]  # built-in functions called by name
    allowed_dunders: tuple[Text, ...]  # the only __names__ a submission may use
    host_functions: tuple[Text, ...]  # torch functions and Tensor methods, by resolve_name
    host_ops: tuple[Text, ...]  # ATen operators (overload packet names)


@dataclass(frozen=True)
class Signature:
    """How a common mistake shows on a failing case ([[stages.hints]] `when`): every part
    given must hold."""

    failure: tuple[FailureKind, ...] = ()  # failure kinds, as the result records them: any one
    # diagnostics that must be present
    never_written: bool = False
    nan: bool = False
    inf: bool = False
    params: dict[str, Any] = field(default_factory=dict)  # parameters with these values
    larger: dict[str, float] = field(default_factory=dict)  # parameters above these
    dtypes: tuple[str, ...] = ()  # the case's dtype is one of these
    # A cause the case's own output confirmed (grader.problems.evidence): a hint that names
    # a cause needs it, since other mistakes fail the same cases.
    cause: str | None = None

    @property
    def stats(self) -> tuple[str, ...]:
        """The diagnostics a case's stats must hold."""
        return tuple(name for name in ("never_written", "nan", "inf") if getattr(self, name))

    def covers(self, case) -> bool:
        """Whether a case's inputs are of the kind this mistake shows on."""
        return (all(case.params.get(k) == v for k, v in self.params.items())
                and all((case.params.get(k) or 0) > v for k, v in self.larger.items())
                and (not self.dtypes or case.dtype in self.dtypes))

    def matches(self, case) -> bool:
        """Whether a failed CaseResult shows this mistake's signature."""
        return ((not self.failure or (case.failure is not None
                                      and case.failure.value in self.failure))
                and all(case.stats.get(name) for name in self.stats) and self.covers(case)
                and (self.cause is None or self.cause in case.stats.get("causes", ())))


@dataclass(frozen=True)
class Hint:
    """A common mistake and how it shows: `hint` is printed under a stage whose every failing
    case (of those whose inputs are shown) matches `when`. Course content: it names the
    cause, never the code that fixes it."""

    when: Signature
    hint: Text


@dataclass(frozen=True)
class FromLaunch:
    """A probe's value that the failing case's own launches give ([[stages.hypotheses]]
    `probe = { N = { launch = ["BLOCK_N", "TILE_N"], minus = 1 } }`): the int the kernels
    were launched with under the first of `launch` they were given, less `minus`. A tile's
    size is the kernel's own choice, known only once it ran: N = BLOCK_N - 1 replays the
    kernel on one key tile (its last lane past the end, as a ragged tile has) where the case
    has several, which tells a fault the loop across tiles carries from one that any tile
    shows."""

    launch: Annotated[tuple[Annotated[str, NAME], ...], ONE_OR_MORE]
    minus: Annotated[int, NOT_NEGATIVE] = 0

    def of(self, constants: dict[str, Any]) -> tuple[int, str] | None:
        """The value for a case launched with `constants`, and where it came from in words
        (`BLOCK_N - 1`); None where none of the names was given an int, or the value is
        below 1."""
        name = next((n for n in self.launch if type(constants.get(n)) is int), None)
        if name is None or constants[name] - self.minus < 1:
            return None
        return constants[name] - self.minus, name + (f" - {self.minus}" if self.minus else "")


@dataclass(frozen=True)
class Hypothesis:
    """A mistake of the stage that an experiment can confirm ([[stages.hypotheses]]): course
    content, evaluated by grader.judge.experiments when a case fails. It is named (its
    `cause`, in its `says`) only when every experiment it gives holds: the output matches the
    reference recomputed under the mistake (`experiment`, a recompute the stage's problem
    defines), and a replay of the same kernel on the failing case's inputs changed by
    `probe` passes (a value of the probe may be a FromLaunch, resolved per case)."""

    cause: str
    says: Text
    experiment: str | None = None
    # parameter -> the value the failing case is replayed with (a FromLaunch: the launch's)
    probe: dict[str, Any] = field(default_factory=dict)


def matching_hints(hints, cases) -> list[str]:
    """The hints whose signature every failing case shows (of those whose inputs are shown);
    of several, the most specific: the one that covers the fewest cases. A float16-only
    failure at a long K is the accumulator, not the loop over K, though both cover it."""
    shown = [c for c in cases if not c.hidden]
    failed = [c for c in shown if not c.passed and c.failure is not Failure.NOT_GRADED]
    if not failed:
        return []
    fitting = [h for h in hints if all(h.when.matches(c) for c in failed)]
    reach = [sum(h.when.covers(c) for c in shown) for h in fitting]
    return [h.hint for h, covered in zip(fitting, reach) if covered == min(reach)]


@dataclass(frozen=True)
class TimeLimit:
    """Seconds one call of a submission may take, by where it runs ([[stages]] time_limit).
    The first call of a stage includes compiling its kernels."""

    cpu: Annotated[float, POSITIVE] = 60.0  # Triton's interpreter, the cuTile simulator
    gpu: Annotated[float, POSITIVE] = 120.0

    def seconds(self, device: str) -> float:
        return self.gpu if device == "cuda" else self.cpu


@dataclass(frozen=True)
class Stage:
    number: int  # its place in course.toml, from 1
    id: str
    title: str
    points: Annotated[float, NOT_NEGATIVE]
    problem: Problem  # the problem of its id
    modules: dict[str, str]  # track -> path below exercises/ and solutions/
    tolerance: dict[str, Tolerance]  # dtype name -> tolerance
    cases: tuple[Case, ...]
    # What the stage's lesson promises a kernel handles (name -> the claim in the lesson's
    # words): each case names the claims it tests, and each claim has a case.
    claims: dict[str, Text] = field(default_factory=dict)
    # track -> per output dimension: constexpr name, int, or "*"
    tiles: dict[str, tuple] = field(default_factory=dict)
    speed: Speed | None = None
    memory_growth: MemoryGrowth | None = None
    hints: tuple[Hint, ...] = ()
    hypotheses: tuple[Hypothesis, ...] = ()
    time_limit: TimeLimit = TimeLimit()

    @property
    def name(self) -> str:
        return stage_name(self.number)

    @property
    def case_count(self) -> int:
        """Its correctness cases, the hidden ones included."""
        return len(self.cases)

    def tested_by(self, case: Case) -> list[str]:
        """The claims a case tests, in the lesson's words."""
        return [self.claims[name] for name in case.claims if name in self.claims]


@dataclass(frozen=True)
class Course:
    path: Path
    title: str
    stages: tuple[Stage, ...]
    rules: SubmissionRules
    hidden_file: Path | None = None  # course.hidden.toml, when the instructor has one
    handout: str = ""  # where students clone the handout from ([course] handout)
    policy: Policy = Policy()  # the class's due date, late penalty, limits ([policy])

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def private_paths(self) -> list[Path]:
        """What no submission may see: the reference solutions and the hidden cases."""
        return [self.root / "solutions", self.root / HIDDEN_FILE]

    def module_path(self, stage: Stage, track: str, solutions: bool) -> Path:
        folder = "solutions" if solutions else "exercises"
        return self.root / folder / stage.modules[track]

    def named(self, selectors) -> list[Stage]:
        """The stages named (`stage3`, `3`, `softmax`), in course order; none or `all`: all."""
        return named(self.stages, selectors)

    def select(self, selector: str) -> Stage:
        """Find a stage by `stage3`, `3` or `softmax`."""
        return select(self.stages, selector)
