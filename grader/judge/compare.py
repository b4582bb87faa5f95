"""Judging one output against the float32 reference, and explaining what went wrong.

A bare "not close" teaches nothing. The report says how wrong (max abs and rel error), how
much (how many elements), where (the first bad indices and the tiles they belong to), and
what kind of wrong: NaN or Inf where a number was expected, or elements never written.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import torch

from grader.course import Tolerance
from grader.judge import causes, experiments, ownership, picture, relation, tiles
from grader.problems.evidence import Cause, Evidence
from grader.quoting import quoted
from grader.results import Failure
from grader.replay.poison import computed_from_poison, never_written
from grader.sandbox.outcomes import Outcome
from grader.tracks import Track

SHOW_INDICES = 5
# A NaN's fix where no track is known (an output timed, not replayed, is judged alone).
NAN_FIX = "keep every load inside its input (a mask, or a padding value that changes nothing)"


@dataclass
class Verdict:
    passed: bool
    summary: str
    details: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    kind: Failure = Failure.WRONG_RESULT  # of a failure: all a hidden case reveals
    picture: dict[str, Any] | None = None  # the output drawn (grader.judge.picture.draw)

    @property
    def report(self) -> str:
        return "\n".join([self.summary, *self.details])


@dataclass(frozen=True)
class Expected:
    """What an output is judged against (the reference, the dtype and device it must have,
    the tolerance) and what explains a failure: the graded track (its words), the stage's
    tile layout on it, the problem's own explanations and the call's drawn inputs."""

    reference: torch.Tensor
    dtype: torch.dtype
    device: str
    tolerance: Tolerance
    track: Track | None = None
    tiles: Sequence | None = None
    explain: Callable[[Evidence], list[Cause]] | None = None
    call: Any = None
    # The stage's hypotheses (grader.course.Hypothesis), the problem's recomputes they name,
    # and the replay of a probe (grader.judge.experiments)
    hypotheses: Sequence = ()
    experiments: dict = field(default_factory=dict)
    probe: Callable[[dict], str | None] | None = None
    # the replay of the same inputs with the programs in grid order (grader.judge.experiments
    # order_dependent): the case's order in words where it passed
    grid_order: Callable[[], str | None] | None = None


def compare(outcome: Outcome, expected: Expected) -> Verdict:
    """The verdict on what a call returned (`outcome.output`), explained by what else the
    replay saw of it (its launches, the watch's traffic, who wrote each element)."""
    output, tolerance, device = outcome.output, expected.tolerance, expected.device
    launches, traffic, traffic_map = outcome.launches, outcome.traffic, outcome.traffic_map
    problem = _wrong_kind(output, expected.reference, expected.dtype, device)
    if problem:
        return Verdict(False, problem)

    poisoned = computed_from_poison(output)
    got, want, unwritten, err, bad = _mismatch(output, expected)
    n_bad, total = int(bad.sum()), got.numel()

    both_finite = torch.isfinite(got) & torch.isfinite(want)
    rel = err / want.abs().clamp_min(torch.finfo(torch.float32).tiny)
    nan = int((torch.isnan(got) & ~unwritten & ~torch.isnan(want)).sum())
    # Undefined masked lanes (Triton's without other=) matter only where they reached the
    # output, as NaN: elsewhere (a masked load whose lanes the store masks again) no finding.
    traffic = [f for f in traffic if f.get("kind") != "undefined_lanes" or nan]
    stats = {
        "mismatched": n_bad,
        "total": total,
        "max_abs_error": _max(err, both_finite),
        "max_rel_error": _max(rel, both_finite & (want.abs() > tolerance.atol)),
        "nan": nan,
        "inf": int((torch.isinf(got) & ~torch.isinf(want)).sum()),
        "never_written": int(unwritten.sum()),
        "from_poison": 0 if poisoned is None else int(poisoned.sum()),
        "finite": int(both_finite.sum()),
        "traffic": [f["kind"] for f in traffic],  # what the kernels' loads and stores showed
    }
    whole = _Whole.of(err, want, both_finite)
    stats["rms_rel_error"] = whole.share if whole else None
    if n_bad == 0 and whole and whole.size and whole.error > whole.allowed(tolerance):
        return _imprecise(stats, tolerance)
    if n_bad == 0:
        return Verdict(True, f"all {total} elements match", stats=stats)

    summary = (
        f"{n_bad} of {total} elements mismatch ({100 * n_bad / total:.3g}%); "
        f"tolerance atol={tolerance.atol:g}, rtol={tolerance.rtol:g}"
    )
    details = []
    if stats["max_abs_error"] is not None:
        over = ("over all elements" if stats["finite"] == total else
                f"over the {stats['finite']} of {total} elements where both are finite")
        details.append(f"max abs error {_fmt(stats['max_abs_error'])}, max rel error "
                       f"{_fmt(stats['max_rel_error'])} ({over})")
    if stats["never_written"] == total:
        details.append("no store reached any element: a missing store, or the grid or a store "
                       "mask that covers nothing")
    elif stats["never_written"]:
        first = _index(unwritten.nonzero()[0])
        details.append(
            f"{_elements(stats['never_written'], 'were')} never written (first at {first}): "
            "no store reached them; the grid or a store mask does not cover them"
        )
    if stats["nan"]:
        details.append(_nan_cause(stats, expected.track, traffic, traffic_map is not None))
    if stats["inf"]:
        details.append(f"{_elements(stats['inf'], 'are')} Inf where a finite number was expected")
    if traffic:  # found by the watch in the replay's process: quoted, one finding a line
        details += ["the kernels' traffic, as the watch saw it:",
                    *quoted("\n".join(f["text"] for f in traffic))]
    constants = {k: v for la in launches for k, v in la.constants.items() if type(v) is int}
    layout = expected.tiles
    # how the values are wrong, observed, before why (a cause, where one is confirmed)
    # (not of a speed trial's large output: its failure is said without it)
    relations = relation.describe(got, want, tolerance.atol, tolerance.rtol,
                                  tiles.extents(layout, bad, launches)) \
        if total <= relation.MAX_ELEMENTS else []
    details += relation.said(relations)
    stats["relation"] = relations[0].kind if relations else None
    ev = Evidence(got, want, expected.call, expected.dtype, tolerance.atol, tolerance.rtol,
                  constants, list(traffic), bool(relations))
    written = None if traffic_map is None else (traffic_map & 1) > 0
    words = expected.track.words if expected.track is not None else None
    found = experiments.order_dependent(expected.grid_order, words)
    found = found or causes.from_traffic(ev, written, tiles.block(layout, constants),
                                         [tuple(la.grid) for la in launches])
    found = found or experiments.confirmed(ev, expected.hypotheses, expected.experiments,
                                           expected.probe)
    found = found or (expected.explain(ev) if expected.explain is not None else [])
    for c in found:
        details += [f"cause: {c.text}", f"  confirmed: {c.experiment}"] if c.key else [c.text]
    stats["causes"] = [c.key for c in found if c.key]
    # each named cause's sentence, as the details say it (the class report counts them)
    stats["cause_texts"] = {c.key: c.text for c in found if c.key}
    # what confirmed each named cause, for the result record (and the corpus's test)
    stats["experiments"] = {c.key: c.experiment for c in found if c.key}
    details.append("first mismatches:")
    for idx in bad.nonzero()[:SHOW_INDICES]:
        i = tuple(idx.tolist())
        shown = "never written" if unwritten[i] else f"got {_fmt(got[i].item())}"
        details.append(f"  out{_index(idx)}: {shown}, expected {_fmt(want[i].item())}")
    details += tiles.report(bad, layout, launches)
    extents = tiles.extents(layout, bad, launches)
    writers, writer_launch = outcome.writers, outcome.writer_launch
    if extents and writers is not None and writer_launch is not None \
            and writer_launch < len(launches) and expected.track is not None:
        launch = launches[writer_launch]
        held = ownership.moved(got, want, bad, extents, lambda g, w: (g - w).abs()
                               <= tolerance.atol + tolerance.rtol * w.abs())
        details += ownership.report(writers, extents, expected.track.words_for(launch.grid), held)
    if extents:
        details += picture.shown(picture.tile_map(bad, unwritten, traffic_map, extents))
    seen = _seen(outcome, expected, (got, want, unwritten, bad))
    drawing = picture.draw(replace(seen, relation=relations[0].text if relations else None))
    return Verdict(False, summary, details, stats, picture=drawing)


@dataclass(frozen=True)
class _Whole:
    """The output as a whole: the root mean square of its error and of the reference, over
    the `n` elements where both are finite."""

    error: float
    size: float
    n: int

    @classmethod
    def of(cls, err: torch.Tensor, want: torch.Tensor, finite: torch.Tensor) -> "_Whole | None":
        n = int(finite.sum())
        if not n:
            return None
        if n < finite.numel():  # a copy of the finite elements only where some are not
            err, want = err[finite], want[finite]
        # float32 norms: PyTorch reduces in a tree, close enough for a share of rtol, and an
        # output of the speed trial's size needs no float64 copy on the GPU
        root = n ** 0.5
        return cls(float(torch.linalg.vector_norm(err)) / root,
                   float(torch.linalg.vector_norm(want)) / root, n)

    @property
    def share(self) -> float | None:
        """The error as a share of the output's size (None for an all-zero reference)."""
        return self.error / self.size if self.size else None

    def allowed(self, tolerance: Tolerance) -> float:
        """rtol of the output's size, and atol spread over its elements: atol / sqrt(n),
        whose sum of squares over the output is atol squared. A few elements near zero are
        then held to what atol allows each of them (the reference itself, PyTorch's float32,
        may be that far off there); an output of millions of elements, to rtol."""
        return tolerance.rtol * self.size + tolerance.atol / self.n ** 0.5


def _imprecise(stats: dict, tolerance: Tolerance) -> Verdict:
    """Every element within atol + rtol x |expected|, but the output as a whole further from
    the reference than rtol: where the output is small beside atol (attention over thousands
    of keys, softmax over long rows), the elementwise test alone would let through arithmetic
    in a narrower dtype than the stage asks. An honest kernel's error is a few roundings of
    its dtype, far below rtol."""
    share = stats["rms_rel_error"]
    return Verdict(False, f"every element is within the tolerance, but the error over the "
                          f"whole output is {share:.3g} of the output's size (root mean square), "
                          f"more than the rtol={tolerance.rtol:g} the stage allows (and its "
                          f"atol={tolerance.atol:g} spread over the output's elements)",
                   [f"max abs error {_fmt(stats['max_abs_error'])}; the output is less precise "
                    "than its dtype's arithmetic gives (a rounding of the output's dtype at each "
                    "step stays far below rtol)"], stats)


def drawn(outcome: Outcome, expected: Expected) -> dict | None:
    """The picture of an output whose case failed before its numbers were judged (a load or
    store outside its tensor): what it got right and wrong, and who stored where."""
    output = outcome.output
    if _wrong_kind(output, expected.reference, expected.dtype, expected.device):
        return None
    got, want, unwritten, _, bad = _mismatch(output, expected)
    return picture.draw(_seen(outcome, expected, (got, want, unwritten, bad)))


def _mismatch(output: torch.Tensor, expected: Expected) -> tuple[torch.Tensor, ...]:
    """got and want in float32, the elements never written, the error, the bad elements."""
    # Elementwise work stays on the output's device: GPU outputs can be large.
    unwritten = never_written(output)
    got = output.detach().to(torch.float32)
    want = expected.reference.detach().to(device=got.device, dtype=torch.float32)
    unwritten = torch.zeros_like(got, dtype=torch.bool) if unwritten is None else unwritten
    err = (got - want).abs()
    tolerance = expected.tolerance
    # `<=` is False for NaN, so a NaN never counts as a match, whatever the reference says.
    bad = ~(err <= tolerance.atol + tolerance.rtol * want.abs())
    return got, want, unwritten, err, bad


def _seen(outcome: Outcome, expected: Expected, judged: tuple) -> picture.Seen:
    """What the picture draws of one output: the judged elements, the replay's traffic and
    writers (the latter named in the words of the launch they belong to)."""
    got, want, unwritten, bad = (t.cpu() for t in judged)
    launches, words = outcome.launches, None
    launch = outcome.writer_launch
    if expected.track is not None and launch is not None and launch < len(launches):
        words = expected.track.words_for(launches[launch].grid)
    known = words is not None
    return picture.Seen(bad, unwritten, got, want, outcome.traffic_map,
                        outcome.writers if known else None,
                        tiles.extents(expected.tiles, bad, launches), words,
                        outcome.shared if known else None)


def _nan_cause(stats: dict, track: Track | None, traffic: Sequence[dict] = (),
               watched: bool = False) -> str:
    """Where NaNs come from: the grader's poison read past the end of an input (certain
    where the NaN still carries its payload); a load whose padding past the edge is
    undetermined (read as NaN on the CPU); where the traffic was watched and no load left
    its tensor, the arithmetic; else either. The fix in the track's words. Masked lanes
    without a value (Triton's other=) read as NaN on the CPU too: named where present."""
    fix = track.nan_fix if track is not None else NAN_FIX
    if stats["from_poison"]:
        return (f"{_elements(stats['from_poison'], 'are')} NaN computed from the grader's poison: "
                "a load read past the end of an input (each input is followed by NaNs); "
                f"{fix}")
    if watched and any(f.get("kind") == "undetermined_edge" for f in traffic):
        # the cuTile simulator reads an UNDETERMINED padding as NaN (grader.languages.cutile)
        return (f"{_elements(stats['nan'], 'are')} NaN where a number was expected, and a load "
                "took a tile over the edge of its array with padding_mode UNDETERMINED (the "
                "watch's finding below): the elements past the edge read as NaN here, on a GPU "
                f"as anything; {fix}")
    if watched and any(f.get("kind") == "undefined_lanes" for f in traffic):
        # Triton's masked lanes without other= read as NaN here (grader.languages.triton.watch)
        return (f"{_elements(stats['nan'], 'are')} NaN where a number was expected, and a load "
                "with a mask and no other= read NaN into the lanes its mask switches off (the "
                "watch's finding below), which Triton leaves undefined: give it other=")
    if watched and not any(f.get("kind") == "load_out_of_bounds" for f in traffic):
        return (f"{_elements(stats['nan'], 'are')} NaN where a number was expected, and no load "
                "read outside its tensor: the arithmetic made them (inf - inf, 0 / 0, 0 * inf, "
                "an exp that overflowed, a reduction over lanes that were all -inf)")
    return (f"{_elements(stats['nan'], 'are')} NaN where a number was expected: from a load past "
            f"the end of an input ({fix}), or from an overflow (exp of a large value, a "
            "division by zero)")


def _wrong_kind(output, expected, dtype, device) -> str | None:
    if not isinstance(output, torch.Tensor):
        return f"returned {type(output).__name__}, expected a torch.Tensor"
    if tuple(output.shape) != tuple(expected.shape):
        return f"returned shape {tuple(output.shape)}, expected {tuple(expected.shape)}"
    if output.dtype != dtype:
        return f"returned dtype {_dtype(output.dtype)}, expected {_dtype(dtype)} (the input dtype)"
    if output.device.type != torch.device(device).type:
        return f"returned a tensor on {output.device}, expected it on {device} like the inputs"
    return None


def _elements(n: int, verb: str) -> str:
    """'1 element was' / '3 elements were'."""
    singular = {"are": "is", "were": "was"}[verb]
    return f"1 element {singular}" if n == 1 else f"{n} elements {verb}"


def _max(values: torch.Tensor, where: torch.Tensor) -> float | None:
    picked = values[where]
    return float(picked.max()) if picked.numel() else None


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _index(idx: torch.Tensor) -> str:
    return "[" + ", ".join(str(i) for i in idx.tolist()) + "]"


def _dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
