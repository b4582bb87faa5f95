"""A failure as a picture: the output, each element (or block of them) marked by what
happened to it.

    .  every element right          X  some element wrong
    _  some element never written   2  some element written by more than one program
    R  written by a program that read or wrote out of bounds

The terminal gets a compact character map, one mark per tile (at most MAX_ROWS x MAX_COLS
marks: larger grids merge neighbouring tiles, the worst mark winning): `tile_map`.

`grade --picture DIR` draws the output itself (`draw`, rendered by grader.report.picture_html):
one cell per element where the output is small, else one cell per block of elements (the
worst mark inside it, its counts kept), at the output's own shape: a 45 x 301 matrix is 45
rows; a vector is wrapped into rows whose length fits its tiles. Each cell keeps which
program stored it and, one cell per element, the value got and the one expected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from grader.replay.traffic import NOBODY, OOB_READER, SEVERAL, SHARED
from grader.tracks import Words

MAX_ROWS, MAX_COLS = 12, 64
MARKS = ".X_2R"  # in order of precedence
LEGEND = (". right  X wrong  _ never written  2 written by several programs  "
          "R by a program that read or wrote out of bounds")
# The page's grid: at most this many cells down and across (a cell per element below both).
DRAW_ROWS, DRAW_COLS = 64, 128
EMPTY = " "  # a cell past the last element of a wrapped vector
ABSENT = -3  # in the writers' grid: no element there
SHOW_WRITERS = 3  # programs named per cell
SCALE_TOP = 5  # the error scale's last step: as large as the output itself, or more


def tile_map(bad: torch.Tensor, unwritten: torch.Tensor, traffic: torch.Tensor | None,
             extents: list[int]) -> list[str]:
    """Rows of marks, one per tile (or group of tiles), the output seen as 2-D: its last tiled
    dimension across, every other one down."""
    level = bad.to(torch.uint8)
    level = torch.maximum(level, unwritten.to(torch.uint8) * 2)
    if traffic is not None:
        level = torch.maximum(level, ((traffic & SHARED) > 0).to(torch.uint8) * 3)
        level = torch.maximum(level, ((traffic & OOB_READER) > 0).to(torch.uint8) * 4)
    tiles = _pool(level, extents)
    grid = tiles.reshape(-1, tiles.shape[-1]) if tiles.dim() else tiles.reshape(1, 1)
    grid = _shrink(grid, MAX_ROWS, 0)
    grid = _shrink(grid, MAX_COLS, 1)
    return ["".join(MARKS[int(v)] for v in row) for row in grid]


def _pool(level: torch.Tensor, extents: list[int]) -> torch.Tensor:
    """The worst mark of each tile."""
    for dim, size in enumerate(extents):
        n = level.shape[dim]
        count = -(-n // max(size, 1))
        pad = count * size - n
        if pad:
            shape = list(level.shape)
            shape[dim] = pad
            level = torch.cat([level, torch.zeros(shape, dtype=level.dtype)], dim)
        shape = list(level.shape)
        level = level.reshape(shape[:dim] + [count, size] + shape[dim + 1:]).amax(dim + 1)
    return level


def _shrink(grid: torch.Tensor, limit: int, dim: int) -> torch.Tensor:
    n = grid.shape[dim]
    if n <= limit:
        return grid
    group = -(-n // limit)
    return _pool(grid, [1] * dim + [group] + [1] * (1 - dim))


def shown(rows: list[str]) -> list[str]:
    """The map as detail lines under a failing case."""
    if not rows or all(set(r) <= {"."} for r in rows):
        return []
    return ["the output by tile (" + LEGEND + "):", *(f"  {r}" for r in rows)]


@dataclass(frozen=True)
class Seen:
    """What the judge knows of each output element: wrong, never written, the traffic's bits
    (grader.replay.traffic.Traffic.output_map) and who stored it (its writers); the values
    got and expected; the stage's tile extents and the track's words for the launch whose
    programs the writers number (None where unknown)."""

    bad: torch.Tensor
    unwritten: torch.Tensor
    got: torch.Tensor
    want: torch.Tensor
    traffic: torch.Tensor | None = None
    writers: torch.Tensor | None = None
    extents: list[int] | None = None
    words: Words | None = None
    # rows of (flat index, program, program): elements several programs stored (Traffic.shared)
    shared: torch.Tensor | None = None
    relation: str | None = None  # how the values are wrong (grader.judge.relation)


@dataclass(frozen=True)
class _Layout:
    """The output laid out as a grid of `rows` x `cols` elements (row-major over the flat
    index), cut into cells of `cell` elements."""

    rows: int
    cols: int
    cell: tuple[int, int]

    @property
    def grid(self) -> tuple[int, int]:
        return -(-self.rows // self.cell[0]), -(-self.cols // self.cell[1])

    def cells(self, flat: torch.Tensor, fill) -> torch.Tensor:
        """(cell rows, h, cell columns, w): each cell's elements, `fill` where there is
        none; one copy at most (an output on a GPU may be large)."""
        (h, w), (n_rows, n_cols) = self.cell, self.grid
        missing = self.rows * self.cols - flat.numel()
        if missing:
            flat = torch.cat([flat, flat.new_full((missing,), fill)])
        grid = flat.view(self.rows, self.cols)
        if n_rows * h > self.rows or n_cols * w > self.cols:
            grid = F.pad(grid, (0, n_cols * w - self.cols, 0, n_rows * h - self.rows), value=fill)
        return grid.view(n_rows, h, n_cols, w)

    def blocks(self, flat: torch.Tensor, fill) -> torch.Tensor:
        """(cells, elements per cell): each cell's elements, `fill` where there is none."""
        (h, w), (n_rows, n_cols) = self.cell, self.grid
        return self.cells(flat, fill).permute(0, 2, 1, 3).reshape(n_rows * n_cols, h * w)


def draw(seen: Seen) -> dict:
    """The output's picture as plain data (the record `grade --picture` renders): its shape,
    the layout, one mark per cell, tile edges, per-cell counts of each kind, the programs
    that stored each cell and, at one element per cell, the values."""
    layout = _layout(list(seen.bad.shape), seen.extents)
    present = layout.cells(torch.ones(seen.bad.numel(), dtype=torch.uint8), 0).amax((1, 3))
    level = torch.zeros_like(present)
    counts = []
    for value, kind in enumerate(_kinds(seen), start=1):
        if not bool(kind.any()):  # most kinds are absent from most failures: no pass over it
            counts.append(torch.zeros(present.numel(), dtype=torch.int64))
            continue
        cells = layout.cells(kind.reshape(-1).to(torch.uint8), 0)
        level = torch.maximum(level, cells.amax((1, 3)) * value)
        counts.append(cells.sum((1, 3), dtype=torch.int64).reshape(-1))
    marks = "".join(MARKS[int(v)] if p else EMPTY
                    for v, p in zip(level.reshape(-1).tolist(), present.reshape(-1).tolist()))
    table = torch.stack(counts, 1).tolist()
    record = {
        "shape": list(seen.bad.shape), "cols": layout.cols, "cell": list(layout.cell),
        "grid": list(layout.grid), "tile": seen.extents, "marks": marks,
        "edges": _edges(seen, layout),
        # [wrong, never written, written more than once, by an out-of-bounds program] of a cell
        # that is not all right
        "counts": {str(i): table[i] for i, m in enumerate(marks) if m not in (".", EMPTY)},
        "word": seen.words.program if seen.words else "program",
        "nobody": NOBODY, "several": SEVERAL,  # writers besides a program's number
        "writers": None, "names": None, "values": None, "shared": None,
        "scale": _scale(seen, layout), "relation": seen.relation,
    }
    if seen.writers is not None and seen.writers.shape == seen.bad.shape:
        record["writers"], record["names"] = _writers(seen, layout)
        if seen.shared is not None:
            record["shared"] = _shared(seen, layout, record["names"])
    if layout.cell == (1, 1):
        record["values"] = _values(seen, layout)
    return record


def _scale(seen: Seen, layout: _Layout) -> str:
    """Per cell, how far its worst wrong element is from the expected value, against the
    output's size (the root mean square of the expected output), as a digit: 0 no wrong
    element, 1 under 0.1% of it, 2 under 1%, 3 under 10%, 4 under 100%, SCALE_TOP beyond
    (NaN and Inf included); a never-written element counts as none. The page shades the
    wrong cells by it: the error's size, not only wrong or right (a rounding slip is pale,
    a wrong formula dark)."""
    size = float(seen.want.float().pow(2).mean().sqrt()) if seen.want.numel() else 0.0
    share = ((seen.got - seen.want).abs() / max(size, torch.finfo(torch.float32).tiny)) \
        .nan_to_num(float("inf"))
    share = torch.where(seen.unwritten | ~seen.bad, torch.full_like(share, -1.0), share)
    worst = layout.cells(share.reshape(-1), -1.0).amax((1, 3)).reshape(-1)
    steps = torch.bucketize(worst, torch.tensor([1e-3, 1e-2, 1e-1, 1.0]), right=True) + 1
    digits = torch.where(worst < 0, torch.zeros_like(steps), steps.clamp(max=SCALE_TOP))
    return "".join(map(str, digits.tolist()))


def _kinds(seen: Seen) -> list[torch.Tensor]:
    """Each element's kinds, in the order of MARKS after the right one."""
    none = torch.zeros_like(seen.bad)
    shared = oob = none
    if seen.traffic is not None and seen.traffic.shape == seen.bad.shape:
        shared = (seen.traffic & SHARED) > 0
        oob = (seen.traffic & OOB_READER) > 0
    return [seen.bad & ~seen.unwritten, seen.unwritten, shared, oob]


def _layout(shape: list[int], extents: list[int] | None) -> _Layout:
    """Rows and columns as the output has them (its last dimension across, the others down);
    a vector wrapped into rows that hold whole tiles, or a whole number of rows per tile."""
    numel = max(1, int(np.prod(shape)) if shape else 1)
    if len(shape) >= 2:
        cols = max(1, shape[-1])
        tile_rows, tile_cols = (extents[-2], extents[-1]) if extents else (None, None)
    else:
        tile = extents[0] if extents else None
        cols = _wrap(numel, tile)
        if not tile or cols == numel or cols % tile == 0:
            tile_rows, tile_cols = None, tile
        else:  # the tile spans whole rows
            tile_rows, tile_cols = tile // cols, None
    rows = -(-numel // cols)
    return _Layout(rows, cols, (_cell(rows, tile_rows, DRAW_ROWS),
                                _cell(cols, tile_cols, DRAW_COLS)))


def _wrap(numel: int, tile: int | None) -> int:
    """Elements per row of a drawn vector: all of it where it fits, else whole tiles per row,
    else a divisor of the tile (a tile then spans whole rows)."""
    if numel <= DRAW_COLS:
        return numel
    if not tile:
        return DRAW_COLS
    if tile <= DRAW_COLS:
        return tile * (DRAW_COLS // tile)
    return max(d for d in range(1, DRAW_COLS + 1) if tile % d == 0)


def _cell(n: int, tile: int | None, limit: int) -> int:
    """Elements per cell along one axis: the fewest that fit `n` into `limit` cells, taken
    from the tile's divisors and multiples so that tile edges fall on cell edges."""
    if tile:
        sizes = [d for d in range(1, tile + 1) if tile % d == 0]
        sizes += [tile * k for k in range(2, -(-n // tile) + 2)]
    else:
        sizes = range(1, n + 1)
    return next((s for s in sizes if -(-n // s) <= limit), max(n, 1))


def _edges(seen: Seen, layout: _Layout) -> str:
    """Per cell, 1 where a tile begins at its left, 2 at its top (3: both): the tiles drawn
    as outlines. A cell's tile is its first element's (computed for those elements only: an
    output on a GPU may be large)."""
    shape = tuple(seen.bad.shape)
    if not seen.extents or len(seen.extents) != len(shape) or not seen.bad.numel():
        return ""
    (h, w), (n_rows, n_cols) = layout.cell, layout.grid
    first = (np.arange(n_rows)[:, None] * h * layout.cols + np.arange(n_cols)[None, :] * w)
    inside = first < seen.bad.numel()
    index = np.unravel_index(np.where(inside, first, 0), shape)
    extents = [max(e, 1) for e in seen.extents]
    counts = [-(-s // e) for s, e in zip(shape, extents)]
    tile = np.ravel_multi_index(tuple(i // e for i, e in zip(index, extents)), counts)
    tile = np.where(inside, tile, -1)
    left = np.zeros(tile.shape, dtype=bool)
    top = np.zeros(tile.shape, dtype=bool)
    left[:, 1:] = (tile[:, 1:] != tile[:, :-1]) & inside[:, 1:] & inside[:, :-1]
    top[1:] = (tile[1:] != tile[:-1]) & inside[1:] & inside[:-1]
    return "".join(map(str, (left.astype(int) + 2 * top.astype(int)).reshape(-1).tolist()))


def _writers(seen: Seen, layout: _Layout) -> tuple[list[list[int]], dict[str, str]]:
    """Per cell, [how many programs stored it, the first SHOW_WRITERS of them] (NOBODY and
    SEVERAL as the traffic numbers them); and each program's name as the track gives it."""
    block = layout.blocks(seen.writers.reshape(-1).to(torch.int64), ABSENT).numpy()
    ordered = np.sort(block, axis=1)
    fresh = np.ones_like(ordered, dtype=bool)
    fresh[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    fresh &= ordered != ABSENT
    cells, named = [], set()
    for row, keep in zip(ordered, fresh):
        distinct = row[keep]
        # several programs of one cell: the ones that stored alone, before NOBODY / SEVERAL
        distinct = np.concatenate([distinct[distinct >= 0], distinct[distinct < 0][::-1]])
        shown = [int(p) for p in distinct[:SHOW_WRITERS]]
        named.update(p for p in shown if p >= 0)
        cells.append([int(distinct.size), *shown])
    name = seen.words.name if seen.words else str
    return cells, {str(p): name(p) for p in sorted(named)}


def _shared(seen: Seen, layout: _Layout, names: dict[str, str]) -> dict[str, list[int]]:
    """Per cell holding elements that several programs stored: the first SHOW_WRITERS of
    those programs (each element's two lowest), their names added to `names`."""
    (h, w), (_, n_cols) = layout.cell, layout.grid
    found: dict[int, set[int]] = {}
    for flat, first, second in seen.shared.tolist():
        row, col = divmod(flat, layout.cols)
        found.setdefault(row // h * n_cols + col // w, set()).update((first, second))
    name = seen.words.name if seen.words else str
    shown = {}
    for cell, programs in found.items():
        shown[str(cell)] = sorted(programs)[:SHOW_WRITERS]
        names.update({str(p): name(p) for p in shown[str(cell)]})
    return shown


def _values(seen: Seen, layout: _Layout) -> list[list[str] | None]:
    """Per element: [got, expected] as text (got is None where it was never written)."""
    got, want = seen.got.reshape(-1).tolist(), seen.want.reshape(-1).tolist()
    unwritten = seen.unwritten.reshape(-1).tolist()
    values: list[list[str] | None] = [
        [None if u else _number(g), _number(w)] for g, w, u in zip(got, want, unwritten)]
    return values + [None] * (layout.rows * layout.cols - len(values))


def _number(value: float) -> str:
    return f"{value:.6g}"
