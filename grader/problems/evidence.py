"""What a failing case shows (Evidence), the experiments that can confirm a cause from it,
and the causes they confirm.

A cause is only as good as the experiment behind it: the same failing cases can come from
different mistakes, so a cause is named only when an experiment confirms it (the output
matches the reference recomputed under the mistake, a factor constant along each row, the
traffic of the kernels). The course's hypotheses (course.toml) name a problem's experiments
and say each cause in the course's words; a problem's `explain` only says what was observed
where none holds, and guesses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch


@dataclass(frozen=True)
class Cause:
    """A confirmed cause (`key`: what course.toml's hints name in `when.cause`), or with an
    empty key, an observation."""

    key: str
    text: str
    # What confirmed it, in words (a recompute under the hypothesis the output matched, the
    # traffic the watch saw, a probe replay that passed): recorded with the case's result.
    experiment: str = ""


@dataclass
class Evidence:
    got: torch.Tensor  # the output, float32
    want: torch.Tensor  # the reference, float32
    call: Any = None  # the case's inputs (grader.problems.Call), on the CPU
    dtype: torch.dtype = torch.float32
    atol: float = 0.0
    rtol: float = 0.0
    constants: dict[str, int] = field(default_factory=dict)  # ints the launches were given
    traffic: list[dict] = field(default_factory=list)  # grader.replay.traffic findings
    # whether the judge already said how the values relate to the reference
    # (grader.judge.relation): where the wrong elements lie then adds nothing
    related: bool = False

    @property
    def bad(self) -> torch.Tensor:
        return ~((self.got - self.want).abs() <= self.atol + self.rtol * self.want.abs())

    def matches(self, hypothesis: torch.Tensor) -> bool:
        """The output is, within tolerance, what `hypothesis` computes (and the reference is
        not): the mistake it models is confirmed."""
        if hypothesis.shape != self.got.shape or not self.bad.any():
            return False
        close = (self.got - hypothesis).abs() <= self.atol + self.rtol * hypothesis.abs() + 1e-3 * \
            hypothesis.abs().clamp_min(1e-3)
        finite = torch.isfinite(self.got)
        # A NaN or infinity the hypothesis does not produce too is unexplained: an element
        # never stored (it holds the poison) refutes a hypothesis about the arithmetic.
        explained = bool((torch.isfinite(hypothesis) | ~finite).all() and
                         (~torch.isfinite(hypothesis) | finite).all())
        return explained and bool(close[finite].all()) and bool(finite.any())

    def found(self, kind: str) -> bool:
        return any(f.get("kind") == kind for f in self.traffic)

    def constant(self, *names: str) -> int | None:
        return next((self.constants[n] for n in names if isinstance(self.constants.get(n), int)),
                    None)


# The experiment behind a cause the output matched when recomputed under the mistake.
RECOMPUTED = ("the reference recomputed with this mistake matches your output (within the "
              "tolerance); the correct one does not")
# The experiment behind a cause shown by a pattern of the output's rows.
ROW_RATIO = "divided your output by the reference: each row's ratio is one constant, not 1"


@dataclass(frozen=True)
class EvidenceFinding:
    """What an experiment finds in a failing case: the output it predicts under a mistake
    (None: the experiment read the evidence itself, and it holds), the facts that the
    hypothesis's words name (`{tile}` in its `says`), and how it was confirmed, in words."""

    expected: torch.Tensor | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    how: str = RECOMPUTED

    def holds(self, ev: Evidence) -> bool:
        return self.expected is None or ev.matches(self.expected)


@dataclass(frozen=True)
class Experiment:
    """One of a problem's experiments (course.toml's hypotheses name it): `run(ev)` gives
    a predicted output, an EvidenceFinding, several of them tried in order, or None where the case
    cannot tell the mistake (its K fits one tile, it is not causal, ...); `facts` are the
    names its findings fill in a hypothesis's words (checked when the course loads)."""

    run: Callable[[Evidence], Any]
    facts: tuple[str, ...] = ()

    def findings(self, ev: Evidence) -> Iterable[EvidenceFinding]:
        """Its findings in order (a generator's are computed as they are tried)."""
        found = self.run(ev)
        if found is None:
            return ()
        if isinstance(found, torch.Tensor):
            return (EvidenceFinding(found),)
        return (found,) if isinstance(found, EvidenceFinding) else found


def experiment(value: Experiment | Callable[[Evidence], Any]) -> Experiment:
    """A problem's experiment as declared: an Experiment, or a recompute alone."""
    return value if isinstance(value, Experiment) else Experiment(value)


Explain = Callable[[Evidence], list[Cause]]


def across_tiles(ev: Evidence, size: int, names: tuple[str, ...], what: str) -> EvidenceFinding | None:
    """The experiment behind a probe that replays the kernel on one tile where the case has
    several (a size within one tile of the launch's constant `names`, course.toml's
    `probe = { N = { launch = [...], minus = 1 } }`): it holds where the case's `size` spans
    several tiles and the fault is one that a shorter size could hide only by taking away
    tiles. Not where an element is NaN or infinite (an overflow, or a value never stored,
    shrinks with the size), nor where most elements are right (rounding that grows with
    the size), nor where a row holds only zeros (`observed` says so). The probe then says
    whether the loop across the tiles carries the fault, and nothing finer."""
    tile = ev.constant(*names)
    if ev.call is None or not tile or size <= tile or not torch.isfinite(ev.got).all():
        return None
    if 2 * int(ev.bad.sum()) < ev.bad.numel():
        return None
    got = ev.got.reshape(-1, ev.got.shape[-1])
    if bool(((got == 0).all(-1) & ev.bad.reshape(got.shape).any(-1)).any()):
        return None
    tiles = -(-size // tile)
    return EvidenceFinding(facts={"tile": tile, "tiles": tiles},
                   how=f"this case's {what} spans {tiles} tiles of {tile}, and most of its "
                       "elements are wrong")


def first_only(ev: Evidence, dims: int) -> EvidenceFinding | None:
    """Only the output's first index along its leading `dims` dimensions holds numbers, and
    they are right; the rest hold none (never written), while the watch saw programs that
    stored nothing (its `idle` finding): the programs that stored all worked on the first."""
    lead = ev.want.shape[:dims]
    if ev.call is None or not ev.found("idle") or int(torch.tensor(lead).prod()) < 2:
        return None
    expected = torch.full_like(ev.want, torch.nan)
    first = (0,) * dims
    expected[first] = ev.want[first]
    return EvidenceFinding(expected, {"others": int(torch.tensor(lead).prod()) - 1},
                   "the output's first slice matches the reference and no other holds a "
                   "number (never written), while some programs stored nothing (the watch)")


def row_factor(ev: Evidence) -> float | None:
    """Whether every row of the output is the reference times one factor of its own (not 1,
    not 0): a normalisation missing or applied to the wrong sum. The median factor, or None.
    A row of zeros is no row scaled: `observed` says it holds only zeros."""
    got, want = ev.got.reshape(-1, ev.got.shape[-1]), ev.want.reshape(-1, ev.want.shape[-1])
    if not torch.isfinite(got).all() or got.shape[-1] < 2:
        return None
    sure = want.abs() > 10 * max(ev.atol, 1e-6)
    ratio = torch.where(sure, got / torch.where(sure, want, torch.ones_like(want)), torch.nan)
    mean = ratio.nanmean(dim=-1, keepdim=True)
    spread = (ratio - mean).abs().nan_to_num(0).amax(dim=-1)
    rows = sure.sum(-1) >= 2
    if not rows.any() or not bool((spread[rows] <= 1e-3 * mean.squeeze(-1)[rows].abs()).all()):
        return None
    if bool(((mean.squeeze(-1)[rows] - 1).abs() < 1e-3).any()):
        return None  # some rows right: not a normalisation every row misses
    if bool((mean.squeeze(-1)[rows].abs() < 1e-6).any()):
        return None  # rows of zeros: nothing says what made them (observed names them)
    return float(mean.squeeze(-1)[rows].median())


def observed(ev: Evidence) -> list[Cause]:
    """What the wrong elements look like, when no cause is confirmed: where they are."""
    bad = ev.bad
    # a case of a few elements says nothing by where they lie ("1 of 1 rows")
    if bad.dim() < 2 or not bad.any() or bad.numel() < 4 or ev.related:
        return []
    rows = bad.reshape(-1, bad.shape[-1]).any(-1)
    cols = bad.reshape(-1, bad.shape[-1]).any(0)
    zeros = rows & (ev.got.reshape(-1, bad.shape[-1]) == 0).all(-1)
    also = f"; {int(zeros.sum())} of those rows hold only zeros" if zeros.any() else ""
    return [Cause("", f"observed (no single cause confirmed): {int(rows.sum())} of {rows.numel()} "
                      f"rows and {int(cols.sum())} of {cols.numel()} columns hold wrong "
                      f"elements{also}")]
