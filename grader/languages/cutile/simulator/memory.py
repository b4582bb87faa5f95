"""Memory: `ct.load` and `ct.store` of tiles in an array's tile space (padding, poison, a
tile outside the space refused), `ct.num_tiles`, and `ct.gather` and `ct.scatter` of
elements by index."""

from __future__ import annotations

import builtins
import math

import torch

from grader.languages.cutile.simulator.blocks import cdiv
from grader.languages.cutile.simulator.dtypes import PaddingMode, dtype_name, promoted
from grader.languages.cutile.simulator.errors import SimulatorError
from grader.languages.cutile.simulator.values import (Array, Tile, array_tensor, as_tensor,
                                                      check_shape, data)

_POISON_INT = {torch.int32: -0x21524111, torch.int64: -0x21524111, torch.int16: -0x2152,
               torch.int8: -0x21}


def _padding_value(mode: PaddingMode, dtype: torch.dtype):
    if mode is PaddingMode.UNDETERMINED:
        return math.nan if dtype.is_floating_point else _POISON_INT.get(dtype, 0)
    return {PaddingMode.ZERO: 0.0, PaddingMode.NEG_ZERO: -0.0, PaddingMode.NAN: math.nan,
            PaddingMode.POS_INF: math.inf, PaddingMode.NEG_INF: -math.inf}[mode]


def _coerce_mode(mode):
    """Accept this module's PaddingMode or the real cuda.tile one (same member names)."""
    if isinstance(mode, PaddingMode):
        return mode
    return PaddingMode[getattr(mode, "name", str(mode)).split(".")[-1]]


def entries(value) -> tuple:
    """A tile index or shape as a tuple: cuTile takes a single int for a 1-D array too."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def axis_order(order, rank: int, what: str) -> tuple[int, ...]:
    """`order` as cuTile reads it: "C" (as is), "F" (reversed) or a permutation of the axes."""
    if order is None or order == "C":
        return tuple(range(rank))
    if order == "F":
        return tuple(range(rank - 1, -1, -1))
    if isinstance(order, str):
        raise SimulatorError(f"{what}: order: Expected 'C' or 'F', got '{order}'")
    axes = tuple(int(a) % rank if rank else int(a) for a in entries(order))
    if len(axes) != rank:
        raise SimulatorError(f"{what}: order: Expected tuple of length {rank}, got {len(axes)}")
    if sorted(axes) != list(range(rank)):
        raise SimulatorError(f"{what}: order: Axis order must be a permutation, got {tuple(order)}")
    return axes


def _tile_space(view: torch.Tensor, shape) -> tuple[int, ...]:
    return tuple(-(-n // s) for n, s in zip(view.shape, shape))


def num_tiles(array: Array, axis: int, shape, order="C") -> int:
    tensor = array_tensor(array, "ct.num_tiles")
    shape = tuple(int(s) for s in entries(shape))
    view = tensor.permute(*axis_order(order, tensor.dim(), "ct.num_tiles"))
    return cdiv(view.shape[axis], shape[axis])


def window(array: torch.Tensor, index, shape, order, what: str):
    """The (in-bounds part of the) tile window of `array`, in the tile's own axis order.

    A tile that lies entirely outside the array is undefined in cuTile (a GPU may read or
    write anything there): here it is an error that names the tile index and the tile
    space, the usual cause being tile indices in the wrong order or a grid too large."""
    if len(index) != array.dim():
        raise SimulatorError(f"{what}: Index size {len(index)} does not match the array rank "
                             f"{array.dim()} (one tile index per dimension of the array)")
    if len(shape) != array.dim():
        raise SimulatorError(f"{what}: Expected shape length to be {array.dim()}, got {len(shape)}")
    view = array.permute(*axis_order(order, array.dim(), what))
    starts = [i * s for i, s in zip(index, shape)]
    if any(st >= n or st + s <= 0 for st, s, n in zip(starts, shape, view.shape)):
        space = " x ".join(map(str, _tile_space(view, shape)))
        raise SimulatorError(
            f"{what}: tile index {tuple(index)} is outside the tile space of the array: an array "
            f"of shape {tuple(view.shape)} in tiles of shape {tuple(shape)} has {space} tiles, "
            "numbered from 0 along each dimension. A tile entirely outside the array is "
            "undefined in cuTile (padding_mode only fills the part of an edge tile past the "
            "edge): check which tile each block owns, and the order of the tile index's entries "
            "(or, where the index is the block's own, that the grid has no more blocks than "
            "the array has tiles)")
    slices = tuple(slice(builtins.max(st, 0), builtins.min(st + s, n))
                   for st, s, n in zip(starts, shape, view.shape))
    return view, starts, slices


def tile_index(index) -> tuple[int, ...]:
    return tuple(int(data(i)) for i in entries(index))


def load(array: Array, index, shape, padding_mode=PaddingMode.UNDETERMINED, order="C",
         check_bounds=True, latency=None, allow_tma=None, memory_order=None,
         memory_scope=None) -> Tile:
    array = array_tensor(array, "ct.load")
    shape = tuple(int(s) for s in entries(shape))
    index = tile_index(index)
    check_shape(shape, "ct.load")
    view, starts, slices = window(array, index, shape, order, "ct.load")
    # Without check_bounds, elements past the edge are undefined whatever the padding_mode.
    mode = _coerce_mode(padding_mode) if check_bounds else PaddingMode.UNDETERMINED
    tile = torch.full(shape, _padding_value(mode, array.dtype), dtype=array.dtype)
    target = tuple(slice(sl.start - st, sl.stop - st) for sl, st in zip(slices, starts))
    tile[target] = view[slices]
    return Tile(tile)


def store(array: Array, index, tile, order="C", check_bounds=True, latency=None,
          allow_tma=None, memory_order=None, memory_scope=None) -> None:
    array = array_tensor(array, "ct.store")
    if not isinstance(tile, Tile):
        raise SimulatorError("ct.store needs a tile (tile=...)")
    # cuTile converts a tile implicitly only to a dtype it promotes to (bfloat16 into a
    # float32 array, not float32 into a bfloat16 one).
    if promoted(tile._data.dtype, array.dtype) != array.dtype:
        raise SimulatorError(
            f"ct.store: Stored tile is incompatible with array's dtype: cannot implicitly cast "
            f"{dtype_name(tile._data.dtype)} to {dtype_name(array.dtype)}; convert it with "
            ".astype(...) first")
    shape = tile.shape
    index = tile_index(index)
    view, starts, slices = window(array, index, shape, order, "ct.store")
    source = tuple(slice(sl.start - st, sl.stop - st) for sl, st in zip(slices, starts))
    view[slices] = tile._data[source].to(array.dtype)  # out-of-bounds parts are dropped


def index_tensors(array: torch.Tensor, indices, what: str) -> list[torch.Tensor]:
    """One index tensor per dimension of `array`, broadcast to their common shape."""
    indices = indices if isinstance(indices, tuple) else (indices,)
    if len(indices) != array.dim():
        raise SimulatorError(f"{what}: the array has {array.dim()} dimensions, so the indices "
                             f"must be a tuple of {array.dim()} (got {len(indices)})")
    return list(torch.broadcast_tensors(*(as_tensor(i).long() for i in indices)))


def in_bounds(array: torch.Tensor, idx: list[torch.Tensor]) -> torch.Tensor:
    inside = torch.ones(idx[0].shape, dtype=torch.bool)
    for size, i in zip(array.shape, idx):
        inside &= (i >= 0) & (i < size)
    return inside


def gather(array: Array, indices, mask=None, padding_value=0, check_bounds=True,
           latency=None) -> Tile:
    """array[indices] where the indices (a tuple, one per dimension) are in bounds and the
    mask is set, else padding_value; without check_bounds an index out of bounds is
    undefined, and reads as poison here."""
    array = array_tensor(array, "ct.gather")
    idx = index_tensors(array, indices, "ct.gather")
    inside = in_bounds(array, idx)
    wanted = torch.ones_like(inside) if mask is None else \
        torch.broadcast_to(as_tensor(mask).bool(), inside.shape)
    out = torch.broadcast_to(as_tensor(padding_value).to(array.dtype), inside.shape).clone()
    if not check_bounds:
        out[wanted & ~inside] = _padding_value(PaddingMode.UNDETERMINED, array.dtype)
    take = wanted & inside
    out[take] = array[tuple(i[take] for i in idx)]
    return Tile(out)


def scatter(array: Array, indices, value, mask=None, check_bounds=True,
            latency=None) -> None:
    """array[indices] = value where the indices are in bounds and the mask is set (an index
    out of bounds without check_bounds is undefined: dropped here)."""
    array = array_tensor(array, "ct.scatter")
    idx = index_tensors(array, indices, "ct.scatter")
    take = in_bounds(array, idx)
    if mask is not None:
        take &= torch.broadcast_to(as_tensor(mask).bool(), take.shape)
    values = torch.broadcast_to(as_tensor(value).to(array.dtype), take.shape)
    array[tuple(i[take] for i in idx)] = values[take]
