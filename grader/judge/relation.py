"""How a wrong output relates to the reference, said as observed facts before any cause.

A beginner whose loads and stores are all right has a formula wrong, and the shape of the
error is the best clue to which part: every element twice the right one (a factor left out),
each row off by a factor of its own (a normalisation), a constant added, a sign flipped, the
rows in another order, the first tile right and the rest wrong (state carried from one tile
to the next). `describe` tries these relations in turn, from the whole output down to its
rows, columns and tiles, and says the first that holds within the stage's tolerance:
"within the tolerance, your output is <relation> of the expected one". Where none holds,
where the wrong elements lie and where the error grows is said instead. Every sentence is a
fact about this output; none names a cause (the hypotheses of grader.judge.experiments do,
where an experiment confirms one).

A relation needs several elements to mean anything: a 1 x 1 case fits "x 2" and "+ 0.4"
alike, so an output of fewer than MIN_ELEMENTS elements shows none (the scorecard leads
with the smallest case that shows one: grader.results.StageResult.failures_shown).
"""

from __future__ import annotations

from dataclasses import dataclass
import torch

MIN_ELEMENTS = 4
# The largest output described: a correctness case's is far smaller; a relation over a speed
# trial's hundreds of MB would cost seconds of medians for a failure already explained.
MAX_ELEMENTS = 1 << 21
# Rows (or columns) compared against every other for a permutation: the comparison costs
# rows^2 x columns, and a case's output is small on the CPU.
MAX_PERMUTED = 1024
# Factors said by name as well as by value: a constant the formulas of the course hold.
NAMED_FACTORS = {2.0: "2", 0.5: "1/2", 1.4426950408889634: "log2(e)",
                 0.6931471805599453: "ln 2", 1.4142135623730951: "sqrt(2)",
                 0.7071067811865476: "1/sqrt(2)"}
# How far the error must grow along an axis, first against last, to be said to grow.
GROWTH = 4.0


@dataclass(frozen=True)
class Relation:
    """One observed relation (`kind`: a word the result records, `text`: the sentence)."""

    kind: str
    text: str


@dataclass(frozen=True)
class _Output:
    """The output and the reference as rows x columns (the last dimension across), the
    stage's tolerance, and the tile's extent down and across (None: no tiles known)."""

    got: torch.Tensor
    want: torch.Tensor
    atol: float
    rtol: float
    tile: tuple[int | None, int | None]

    def fits(self, predicted: torch.Tensor) -> bool:
        """The output is `predicted` within the stage's tolerance (and a rounding more)."""
        if predicted.shape != self.got.shape or not bool(torch.isfinite(predicted).all()):
            return False
        slack = self.atol + (self.rtol + 1e-6) * predicted.abs()
        return bool(((self.got - predicted).abs() <= slack).all())

    def wrong(self, predicted: torch.Tensor) -> bool:
        """`predicted` is not the reference itself: a relation that predicts the right
        answer for the elements it fits says nothing of the wrong ones."""
        return not bool(((predicted - self.want).abs() <= self.atol + self.rtol *
                         self.want.abs()).all())


def describe(got: torch.Tensor, want: torch.Tensor, atol: float, rtol: float,
             extents: list[int] | None = None) -> list[Relation]:
    """The relation of a wrong output to the reference, and where its error lies, as
    facts; nothing where the output is too small or not finite (NaN is said elsewhere)."""
    if got.shape != want.shape or got.numel() < MIN_ELEMENTS:
        return []
    got, want = got.detach().float().cpu(), want.detach().float().cpu()
    if not bool(torch.isfinite(got).all() and torch.isfinite(want).all()):
        return []
    cols = got.shape[-1] if got.dim() else 1
    tile = (extents[-2] if extents and len(extents) >= 2 else None,
            extents[-1] if extents else None)
    out = _Output(got.reshape(-1, cols), want.reshape(-1, cols), atol, rtol, tile)
    for relation in (_constant, _whole, _transposed, _permuted, _by_part):
        found = relation(out)
        if found is not None:
            return [found]
    return [r for r in (_first_tile_right(out), _growing(out)) if r is not None]


def said(relations: list[Relation]) -> list[str]:
    return [f"how the values are wrong: {r.text}" for r in relations]  # the report's lines


# --- the whole output --------------------------------------------------------------------

def _constant(out: _Output) -> Relation | None:
    """Every element holds one value (a scalar stored everywhere, or a reduction's)."""
    value = out.got.reshape(-1)[0]
    # (an expected output of one value itself is a factor's or an offset's to say)
    if bool((out.got == value).all()) and not bool((out.want == out.want.reshape(-1)[0]).all()):
        return Relation("constant", f"every element holds the same value, {_num(value)}, "
                                    "whatever the expected one")
    return None


def _whole(out: _Output) -> Relation | None:
    """A sign flip, one factor, one offset, or a line a x expected + b over every element."""
    want = out.want
    if out.fits(-want) and out.wrong(-want):
        return Relation("sign", "every element is the expected one with its sign flipped "
                                "(got = -expected)")
    factor = _factor(out.got.reshape(-1), want.reshape(-1), out.atol)
    factor = None if factor is None else _simplest(out, factor, lambda c: c * want)
    if factor is not None and out.wrong(factor * want):
        return Relation("factor", f"every element is {_times(factor)} the expected one")
    offset = _simplest(out, float((out.got - want).median()), lambda c: want + c)
    if offset is not None and out.wrong(want + offset):
        return Relation("offset", f"every element is the expected one {_plus(offset)}")
    line = _line(out.got.reshape(-1), want.reshape(-1))
    if line is not None:
        a, b = line
        if out.fits(a * want + b) and out.wrong(a * want + b):
            return Relation("linear", f"every element is {_times(a)} the expected one "
                                      f"{_plus(b)}")
    if out.fits(want.abs()) and out.wrong(want.abs()):
        return Relation("abs", "every element is the expected one's absolute value")
    return None


def _transposed(out: _Output) -> Relation | None:
    """The reference's transpose: square, element [i, j] holds [j, i]; else its elements in
    column-major order (a transpose's memory read row by row)."""
    rows, cols = out.want.shape
    if rows < 2 or cols < 2:
        return None
    if rows == cols and out.fits(out.want.T) and out.wrong(out.want.T):
        return Relation("transposed", "it is the expected output transposed: element [i, j] "
                                      "holds the expected [j, i]")
    flat = out.want.T.reshape(rows, cols)
    if rows != cols and out.fits(flat) and out.wrong(flat):
        return Relation("column_major", "it holds the expected elements in column-major "
                                        f"order: the {rows} x {cols} expected output's columns, "
                                        "one after another, laid out row by row")
    return None


def _permuted(out: _Output) -> Relation | None:
    """Rows (or columns) of the reference, in another order or repeated."""
    for axis, name in ((0, "row"), (1, "column")):
        got, want = (out.got, out.want) if axis == 0 else (out.got.T, out.want.T)
        n, members = got.shape
        # one element a row: a few could match other elements by chance, hundreds cannot
        if n < 2 or (members < 2 and n < 8) or n > MAX_PERMUTED or n * n * members > 1 << 26:
            continue
        gap = torch.cdist(got, want, p=float("inf"))
        source = gap.argmin(dim=1)
        predicted = want[source]
        whole = predicted if axis == 0 else predicted.T
        if bool((source == torch.arange(n)).all()) or not out.fits(whole) or \
                not out.wrong(whole):
            continue
        return Relation(f"{name}s_moved", _moved(source.tolist(), name))
    return None


def _moved(source: list[int], name: str) -> str:
    """Which of the reference's rows (columns) each one holds, in words."""
    if len(set(source)) == 1:
        return f"every {name} holds the expected {name} {source[0]}"
    n = len(source)
    shifts = {s - i for i, s in enumerate(source)}
    if len(shifts) == 1:
        shift = shifts.pop()
        return f"{name} i holds the expected {name} i {'+' if shift > 0 else '-'} {abs(shift)}"
    turned = {(s - i) % n for i, s in enumerate(source)}
    if len(turned) == 1:  # a shift that wraps around: the last rows come back at the start
        shift = turned.pop()
        shift = shift - n if shift > n // 2 else shift
        return (f"{name} i holds the expected {name} i {'+' if shift > 0 else '-'} "
                f"{abs(shift)}, counted round from the last {name} to the first ({name} 0 "
                f"holds {source[0]})")
    pairs = ", ".join(f"{i} holds {s}" for i, s in enumerate(source) if i != s)
    shown = pairs if len(pairs) <= 120 else pairs[:120].rsplit(",", 1)[0] + ", ..."
    return f"each {name} holds an expected {name}, not its own ({name} {shown})"


# --- by row, by column, by tile ----------------------------------------------------------

def _by_part(out: _Output) -> Relation | None:
    """A factor (or offset) of each row's own, each column's, or each tile's."""
    rows, cols = out.want.shape
    tile_rows, tile_cols = out.tile
    parts = [("row", (1, cols)), ("column", (rows, 1))]
    if tile_rows or tile_cols:
        parts.append(("tile", (tile_rows or rows, tile_cols or cols)))
    for part, block in parts:
        if block == (rows, cols):
            continue  # one part: the whole output's relations were tried already
        for found in (_part_factor, _part_offset):
            relation = found(out, part, block)
            if relation is not None:
                return relation
    return None


def _groups(values: torch.Tensor, block: tuple[int, int]) -> torch.Tensor:
    """(parts, elements of a part): `values` cut into blocks of rows x columns, NaN past the
    edge (a ratio or a difference; NaN is left out of the medians)."""
    rows, cols = values.shape
    down, across = block
    n_down, n_across = -(-rows // down), -(-cols // across)
    padded = torch.nn.functional.pad(values, (0, n_across * across - cols,
                                              0, n_down * down - rows), value=float("nan"))
    return padded.reshape(n_down, down, n_across, across).permute(0, 2, 1, 3) \
        .reshape(n_down * n_across, down * across)


def _spread(per_part: torch.Tensor, block: tuple[int, int], shape) -> torch.Tensor:
    """A value per part, back at every element of the part."""
    rows, cols = shape
    down, across = block
    n_across = -(-cols // across)
    index = (torch.arange(rows)[:, None] // down * n_across
             + torch.arange(cols)[None, :] // across)
    return per_part[index]


def _part_factor(out: _Output, part: str, block: tuple[int, int]) -> Relation | None:
    sure = out.want.abs() > 10 * max(out.atol, 1e-6)
    ratio = torch.where(sure, out.got / torch.where(sure, out.want, torch.ones(())),
                        torch.tensor(float("nan")))
    grouped = _groups(ratio, block)
    factors = grouped.nanmedian(dim=1).values
    # a part of one element fits any factor: a part's factor needs two elements to mean one
    known = (~torch.isnan(grouped)).sum(dim=1) >= 2
    if int(known.sum()) < 2:
        return None
    fill = factors[known].median()
    predicted = _spread(torch.where(known, factors, fill), block, out.want.shape) * out.want
    if float(factors[known].max() - factors[known].min()) <= 1e-3 * float(fill.abs()) or \
            not out.fits(predicted) or not out.wrong(predicted):
        return None  # one factor for all is the whole output's, said there
    low, high = float(factors[known].min()), float(factors[known].max())
    first = "" if not bool(known[0]) else f"; {part} 0: {_num(float(factors[0]))}"
    return Relation(f"{part}_factor", f"each {part} is the expected one times a factor of its "
                                      f"own (from {_num(low)} to {_num(high)}{first})")


def _part_offset(out: _Output, part: str, block: tuple[int, int]) -> Relation | None:
    grouped = _groups(out.got - out.want, block)
    if int((~torch.isnan(grouped)).sum(dim=1).min()) < 2:
        return None  # a part of one element fits any offset
    offsets = grouped.nanmedian(dim=1).values
    predicted = out.want + _spread(offsets, block, out.want.shape)
    if float(offsets.max() - offsets.min()) <= out.atol or not out.fits(predicted) or \
            not out.wrong(predicted):
        return None
    return Relation(f"{part}_offset", f"each {part} is the expected one plus an offset of its "
                                      f"own (from {_num(float(offsets.min()))} to "
                                      f"{_num(float(offsets.max()))})")


# --- where the error lies ----------------------------------------------------------------

def _first_tile_right(out: _Output) -> Relation | None:
    """The first tile along a row (or down a column) right, the wrong elements all past it:
    what a loop that carries something wrong from one tile to the next gives."""
    bad = ~((out.got - out.want).abs() <= out.atol + out.rtol * out.want.abs())
    rows, cols = bad.shape
    for extent, size, name, across in ((out.tile[1], cols, "columns", True),
                                       (out.tile[0], rows, "rows", False)):
        if not extent or extent >= size:
            continue
        first = bad[:, :extent] if across else bad[:extent]
        if bool(first.any()) or not bool(bad.any()):
            continue
        where = "along each row" if across else "down each column"
        return Relation(f"past_first_tile_{name}",
                        f"the first {extent} {name} (the first tile {where}) are right; every "
                        f"wrong element lies past them")
    return None


def _growing(out: _Output) -> Relation | None:
    """The error growing along the row (or down the column): state carried and compounding."""
    error = (out.got - out.want).abs()
    for dim, name, where in ((0, "column", "along each row"), (1, "row", "down each column")):
        per = error.mean(dim=dim)  # the mean error of each column (dim 0), each row (dim 1)
        if per.numel() < 4:
            continue
        quarters = [float(q.mean()) for q in per.tensor_split(4)]
        start, end = quarters[0], quarters[-1]
        rising = all(a < b for a, b in zip(quarters, quarters[1:]))
        if end > GROWTH * max(start, out.atol) and rising:
            return Relation(f"grows_{name}s", f"the error grows {where}: a mean of "
                                              f"{_num(start)} over the first quarter of the "
                                              f"{name}s, {_num(end)} over the last")
    return None


# --- numbers -----------------------------------------------------------------------------

def _factor(got: torch.Tensor, want: torch.Tensor, atol: float) -> float | None:
    """The median ratio got / expected over the elements large enough for a ratio."""
    sure = want.abs() > 10 * max(atol, 1e-6)
    if int(sure.sum()) < 1:
        return None
    factor = float((got[sure] / want[sure]).median())
    return factor if factor != 0 else None


def _line(got: torch.Tensor, want: torch.Tensor) -> tuple[float, float] | None:
    """The least-squares a, b of got = a x expected + b (None where expected is one value)."""
    centred = want - want.mean()
    spread = float((centred * centred).sum())
    if spread == 0:
        return None
    a = float((centred * (got - got.mean())).sum()) / spread
    return a, float(got.mean()) - a * float(want.mean())


def _simplest(out: _Output, value: float, predict) -> float | None:
    """The simplest number near `value` whose prediction the output fits: a constant of the
    course's formulas, then `value` to 3 significant digits, then `value` itself (a bfloat16
    output twice the right one has a median ratio of 1.995, and is 2 x within tolerance)."""
    near = [c for c in NAMED_FACTORS if abs(value - c) <= 0.02 * c]
    for candidate in (*near, float(f"{value:.3g}"), value):
        if out.fits(predict(candidate)):
            return candidate
    return None


def _times(factor: float) -> str:
    named = next((name for value, name in NAMED_FACTORS.items()
                  if abs(factor - value) <= 1e-3 * value), None)
    return f"{_num(factor)} x" if named is None or named == _num(factor) else \
        f"{_num(factor)} ({named}) x"


def _plus(offset: float) -> str:
    return f"{'+' if offset >= 0 else '-'} {_num(abs(offset))}"


def _num(value) -> str:
    return f"{float(value):.4g}"

