"""A failure as a picture: the output's tiles, each marked by what happened to it.

    .  every element right          X  some element wrong
    _  some element never written   2  some element written by two programs
    R  written by a program that read out of bounds

The terminal gets a compact character map (at most MAX_ROWS x MAX_COLS marks: larger grids
merge neighbouring tiles, the worst mark winning); `grade --picture DIR` writes the same map
as a page (grader.report.picture_html).
"""

from __future__ import annotations

import torch

from grader.replay.traffic import OOB_READER, SHARED

MAX_ROWS, MAX_COLS = 12, 64
MARKS = ".X_2R"  # in order of precedence
LEGEND = ". right  X wrong  _ never written  2 written twice  R read out of bounds"


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
