"""The grid of a launch: the block that runs now (`ct.bid`), the grid's size
(`ct.num_blocks`), and `ct.cdiv`."""

from __future__ import annotations

import torch

from grader.languages.cutile.simulator.values import Tile, data

# The block that runs now and the grid of its launch: launch (launching.py) sets them for
# each block in turn.
current: tuple[int, int, int] = (0, 0, 0)
grid: tuple[int, int, int] = (1, 1, 1)


def bid(axis: int) -> int:
    return current[axis]


def num_blocks(axis: int) -> int:
    return grid[axis]


def cdiv(a, b):
    result = -(-data(a) // data(b))
    return Tile(result) if isinstance(result, torch.Tensor) else result  # never a bare tensor
