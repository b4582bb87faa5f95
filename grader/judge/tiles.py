"""The output cut into the stage's tiles: how many elements a tile holds along each
dimension (the stage's tile layout in course.toml, with the launch's constants), and where
the bad elements of a failing case lie, tile by tile."""

from __future__ import annotations

import torch

from grader.course import WHOLE_DIM

SHOW_TILES = 4


def extents(spec, bad: torch.Tensor, launches) -> list[int] | None:
    """Elements per tile along each output dimension, from the stage's tile layout, each
    bounded as the report and the picture group by."""
    found = _layout(spec, bad, launches)
    if not isinstance(found, list):
        return None
    return [bounded(e, n) for e, n in zip(found, bad.shape)]


def _layout(spec, bad: torch.Tensor, launches) -> list[int] | str | None:
    """The tile layout's extents as launched (None: no layout; a sentence: why none)."""
    if not spec:
        return None
    if len(spec) != bad.dim():
        return f"(tile layout in course.toml has {len(spec)} dims, the output {bad.dim()})"
    found = []
    for dim, entry in enumerate(spec):
        value = bad.shape[dim] if entry == WHOLE_DIM else entry if isinstance(entry, int) else \
            next((la.constants[entry] for la in reversed(launches) if entry in la.constants), None)
        if not isinstance(value, int) or value < 1:
            return f"(tiles not shown: no kernel launch passed {entry})"
        found.append(value)
    return found


def bounded(extent: int, n: int) -> int:
    """A tile extent as the report and the picture group by: one beyond the smallest power
    of two that covers its dimension groups as that power does (one tile). A launch
    constant can be any integer its language takes, 2**64 - 1 included: the picture padded
    the output to it, and looked for its divisors one by one."""
    return min(extent, 1 << max(n - 1, 0).bit_length())


def block(spec, constants: dict) -> int | None:
    """The tile size of a 1-D output, as launched."""
    if spec and len(spec) == 1 and isinstance(spec[0], str):
        return constants.get(spec[0])
    return None


def report(bad: torch.Tensor, spec, launches) -> list[str]:
    """Group bad elements by the tile (program) that owns them."""
    extents = _layout(spec, bad, launches)
    if not isinstance(extents, list):
        return [extents] if extents else []
    size = torch.tensor([bounded(e, s) for e, s in zip(extents, bad.shape)],
                        device=bad.device)
    tile_ids = bad.nonzero() // size
    tiles, counts = torch.unique(tile_ids, dim=0, return_counts=True)
    n_tiles = [-(-s // e) for s, e in zip(bad.shape, extents)]
    names = " x ".join(str(e) if isinstance(n, int) or n == WHOLE_DIM else f"{n}={e}"
                       for n, e in zip(spec, extents))
    total_tiles = 1
    for n in n_tiles:
        total_tiles *= n
    lines = [f"bad elements lie in {len(tiles)} of {total_tiles} tiles ({names} per tile):"]
    tiles, counts = tiles.cpu(), counts.cpu()
    order = counts.argsort(descending=True)[:SHOW_TILES]
    for t in order:
        tile = tiles[t].tolist()
        ranges = ", ".join(
            ":" if spec[d] == WHOLE_DIM
            else str(i * e) if e == 1
            else f"{i * e}:{min((i + 1) * e, bad.shape[d])}"
            for d, (i, e) in enumerate(zip(tile, extents))
        )
        last = [d for d, (i, n) in enumerate(zip(tile, n_tiles))
                if i == n - 1 and n > 1 and isinstance(spec[d], str) and spec[d] != WHOLE_DIM]
        note = " (the last tile along dim " + ", ".join(map(str, last)) + ")" if last else ""
        lines.append(f"  tile {tuple(tile)}: out[{ranges}], {int(counts[t])} bad{note}")
    if len(tiles) > SHOW_TILES:
        lines.append(f"  ... and {len(tiles) - SHOW_TILES} more tiles")
    return lines
