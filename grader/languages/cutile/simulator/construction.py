"""Tiles made by a kernel (`ct.full`, `zeros`, `ones`, `arange`) and the shape and dtype
operations on them (`astype`, `reshape`, `permute`, `transpose`, `expand_dims`,
`broadcast_to`)."""

from __future__ import annotations

import torch

from grader.languages.cutile.simulator.dtypes import int32, torch_dtype
from grader.languages.cutile.simulator.values import Tile, as_tensor, check_shape, data


def full(shape, fill_value, dtype) -> Tile:
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    check_shape(shape, "ct.full")
    return Tile(torch.full(shape, data(fill_value), dtype=torch_dtype(dtype)))


def zeros(shape, dtype) -> Tile:
    return full(shape, 0, dtype)


def ones(shape, dtype) -> Tile:
    return full(shape, 1, dtype)


def arange(size: int, dtype=int32) -> Tile:
    check_shape((size,), "ct.arange")
    return Tile(torch.arange(size, dtype=torch_dtype(dtype)))


def astype(x, dtype) -> Tile:
    return Tile(as_tensor(x)).astype(dtype)


def reshape(x, shape) -> Tile:
    return Tile(as_tensor(x)).reshape(shape)


def permute(x, dims) -> Tile:
    return Tile(as_tensor(x)).permute(dims)


def transpose(x, dim0: int = -2, dim1: int = -1) -> Tile:
    return Tile(as_tensor(x)).transpose(dim0, dim1)


def expand_dims(x, axis: int) -> Tile:
    return Tile(as_tensor(x).unsqueeze(axis))


def broadcast_to(x, shape) -> Tile:
    return Tile(torch.broadcast_to(as_tensor(x), tuple(shape)))
