"""cuTile's loads and stores on the CPU, for the replay's watch (grader.replay.watch).

The simulator executes a kernel's memory operations through `ct.load`, `ct.store`,
`ct.gather` and `ct.scatter`. For the length of one launch those are wrapped: the wrapper
passes the addresses and the mask of the tile on, with the block that made it and the line
of the student's kernel it comes from; a load of a tile that hangs over the edge of its
array with UNDETERMINED padding is noted for the student.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import torch

from grader.languages.cutile import simulator as sim
from grader.languages.cutile.simulator import blocks, memory
from grader.replay.traffic import LaunchWatch
from grader.replay.watch import Watch, linear

UNDETERMINED_EDGE = ("{count} loads at {where} take a tile that hangs over the edge of {name} "
                     "with padding_mode UNDETERMINED (the default): the elements past the edge "
                     "are undefined, on a GPU anything; say what they read as with padding_mode")


@contextmanager
def hooks(watch: Watch, launch: LaunchWatch, grid, notes) -> Iterator[None]:
    space = sim.namespace
    saved = {name: getattr(space, name) for name in ("load", "store", "gather", "scatter")}

    def block() -> int:
        return linear(blocks.current, grid)

    # The kernel hands the simulator its arrays (grader.languages.cutile.simulator.Array); the
    # addresses are those of the tensors behind them, once the simulator has accepted the call.
    def tiled(store: bool):
        def watched(array, index, *args, **kwargs):
            result = saved["store" if store else "load"](array, index, *args, **kwargs)
            tensor = sim.tensor_of(array)
            shape = (result.shape if not store else
                     _tile_shape(args[0] if args else kwargs.get("tile")))
            order = kwargs.get("order", "C")
            addresses = _window_addresses(tensor, index, shape, order)
            launch.access(store, addresses, np.ones(addresses.shape, bool), block(), watch.line())
            if not store:
                _note_edge(watch, launch, notes, tensor, index, shape, order, kwargs)
            return result
        return watched

    def scattered(store: bool):
        def watched(array, indices, *args, **kwargs):
            result = saved["scatter" if store else "gather"](array, indices, *args, **kwargs)
            addresses, inside = _index_addresses(sim.tensor_of(array), indices)
            mask = kwargs.get("mask", args[1] if store and len(args) > 1 else
                              args[0] if not store and args else None)
            if mask is not None:
                kept = np.asarray(sim.tensor_of(mask)).astype(bool)
                inside &= np.broadcast_to(kept, inside.shape)
            launch.access(store, addresses, inside, block(), watch.line())
            return result
        return watched

    space.load, space.store = tiled(False), tiled(True)
    space.gather, space.scatter = scattered(False), scattered(True)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(space, name, value)


def _tile_shape(tile) -> tuple[int, ...]:
    return tuple(getattr(tile, "shape", ()))


def _offsets(array: torch.Tensor) -> torch.Tensor:
    """Each element's offset in its storage, in the array's shape."""
    last = sum((n - 1) * s for n, s in zip(array.shape, array.stride()))
    span = array.storage_offset() + last + 1
    return torch.arange(span, dtype=torch.int64).as_strided(
        array.shape, array.stride(), array.storage_offset())


def _addresses(array: torch.Tensor, offsets: torch.Tensor) -> np.ndarray:
    base = array.untyped_storage().data_ptr()
    return (base + offsets.reshape(-1) * array.element_size()).numpy()


def _window_addresses(array, index, shape, order) -> np.ndarray:
    offsets = _offsets(array)
    view, _, slices = memory.window(offsets, memory.tile_index(index), tuple(shape), order,
                                    "ct.load")
    return _addresses(array, view[slices])


def _index_addresses(array, indices) -> tuple[np.ndarray, np.ndarray]:
    idx = memory.index_tensors(array, indices, "ct.gather")
    inside = memory.in_bounds(array, idx)
    clipped = [i.clamp(0, max(n - 1, 0)) for i, n in zip(idx, array.shape)]
    offsets = _offsets(array)[tuple(clipped)]
    return _addresses(array, offsets), inside.reshape(-1).numpy().copy()


def _note_edge(watch, launch, notes, array, index, shape, order, kwargs) -> None:
    from grader.languages.cutile import simulator as sim
    mode = kwargs.get("padding_mode", sim.PaddingMode.UNDETERMINED)
    if getattr(mode, "name", str(mode)) != "UNDETERMINED" or not kwargs.get("check_bounds", True):
        return
    view = array.permute(*memory.axis_order(order, array.dim(), "ct.load"))
    starts = [i * s for i, s in zip(memory.tile_index(index), shape)]
    if all(st + s <= n for st, s, n in zip(starts, shape, view.shape)):
        return
    line = watch.line()
    name = next((r.name for r in launch.regions
                 if r.start == array.untyped_storage().data_ptr()), "the array")
    key = ("undetermined_edge", line,
           UNDETERMINED_EDGE.replace("{where}", watch.source.at(line)).replace("{name}", name))
    notes[key] = notes.get(key, 0) + 1
