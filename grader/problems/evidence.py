"""What a problem's `explain` is given, and the checks its causes must pass.

A hint that names a cause is only as good as the check behind it: the same failing cases can
come from different mistakes, so a cause is named only when the output itself confirms it
(a factor constant along each row, an error that a re-run with a changed scale reproduces,
the traffic of the kernels). Without one, `explain` says what was observed and guesses
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

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


def recomputed(key: str, text: str) -> "Cause":
    return Cause(key, text, RECOMPUTED)


Explain = Callable[[Evidence], list[Cause]]


def row_factor(ev: Evidence) -> float | None:
    """Whether every row of the output is the reference times one factor of its own (not 1):
    a normalisation missing or applied to the wrong sum. The median factor, or None."""
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
    return float(mean.squeeze(-1)[rows].median())


def observed(ev: Evidence) -> list[Cause]:
    """What the wrong elements look like, when no cause is confirmed: where they are."""
    bad = ev.bad
    if bad.dim() < 2 or not bad.any():
        return []
    rows = bad.reshape(-1, bad.shape[-1]).any(-1)
    cols = bad.reshape(-1, bad.shape[-1]).any(0)
    return [Cause("", f"observed (no single cause confirmed): {int(rows.sum())} of {rows.numel()} "
                      f"rows and {int(cols.sum())} of {cols.numel()} columns hold wrong elements")]
