"""cuTile's loads and stores on the CPU, for the replay's watch (grader.replay.watch).

The simulator executes a kernel's memory operations through `ct.load`, `ct.store`,
`ct.gather` and `ct.scatter`. For the length of one launch those are wrapped: the wrapper
passes the addresses and the mask of the tile on, with the block that made it and the line
of the student's kernel it comes from; a load of a tile that hangs over the edge of its
array with UNDETERMINED padding is noted for the student. An access with check_bounds=False
that reaches past the edge fails the case: cuTile then leaves the bounds to the kernel, and
on a GPU those lanes read or write whatever memory lies there (the simulator drops them, so
the output alone would not show it).
"""

from __future__ import annotations

import functools
import inspect
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import torch

from grader.languages.cutile import simulator as sim
from grader.languages.cutile.simulator import blocks, memory
from grader.replay.traffic import LaunchWatch
from grader.replay.watch import Note, Watch, linear

# Templates of grader.replay.watch.Note: {where} the line, {name} the array, {count} how often
UNDETERMINED_EDGE = ("{where}: takes a tile that hangs over the edge of {name} with padding_mode "
                     "UNDETERMINED, the default ({count}): the elements past the edge are "
                     "undefined, on a GPU anything; say what they read as with padding_mode")
# An access whose bounds the kernel told cuTile not to check, past the edge: a fault on a GPU
# (grader.replay.traffic.TrafficFinding.fails), under the kind of a Triton access without its mask.
UNCHECKED = {
    "load": ("load_out_of_bounds", "{where}: takes, with check_bounds=False, a tile that hangs "
             "over the edge of {name} ({count}): without the bounds check a GPU reads whatever "
             "memory lies past the edge, even where the value is later discarded; leave "
             "check_bounds at its default (True) where a tile can cross the edge, and say what "
             "the elements past it read as with padding_mode"),
    "store": ("store_out_of_bounds", "{where}: puts, with check_bounds=False, a tile over the "
              "edge of {name} ({count}): without the bounds check a GPU writes the elements past "
              "the edge into whatever memory lies there (the next rows, or past the end); leave "
              "check_bounds at its default (True) where a tile can cross the edge"),
    "gather": ("load_out_of_bounds", "{where}: reads, with check_bounds=False, indices outside "
               "{name} that the mask leaves on ({count}): without the bounds check a GPU reads "
               "whatever memory those indices reach; leave check_bounds at its default (True), "
               "or mask those lanes off"),
    "scatter": ("store_out_of_bounds", "{where}: writes, with check_bounds=False, to indices "
                "outside {name} that the mask leaves on ({count}): without the bounds check a "
                "GPU writes whatever memory those indices reach; leave check_bounds at its "
                "default (True), or mask those lanes off"),
}


@contextmanager
def hooks(watch: Watch, launch: LaunchWatch, grid, notes) -> Iterator[None]:
    space = sim.namespace
    saved = {name: getattr(space, name) for name in ("load", "store", "gather", "scatter")}

    def block() -> int:
        return linear(blocks.current, grid)

    # The kernel hands the simulator its arrays (grader.languages.cutile.simulator.Array); the
    # addresses are those of the tensors behind them, once the simulator has accepted the call.
    def tiled(store: bool):
        name = "store" if store else "load"

        def watched(array, index, *args, **kwargs):
            result = saved[name](array, index, *args, **kwargs)
            given = _arguments(saved[name], array, index, args, kwargs)
            tensor = sim.tensor_of(array)
            shape = result.shape if not store else _tile_shape(given.get("tile"))
            order = given.get("order", "C")
            addresses = _window_addresses(tensor, index, shape, order)
            launch.access(store, addresses, np.ones(addresses.shape, bool), block(), watch.line())
            if not given.get("check_bounds", True):
                if _over_the_edge(tensor, index, shape, order):
                    _note(watch, launch, notes, tensor, name)
            elif not store:
                _note_edge(watch, launch, notes, tensor, index, shape, order, given)
            return result
        return watched

    def scattered(store: bool):
        name = "scatter" if store else "gather"

        def watched(array, indices, *args, **kwargs):
            result = saved[name](array, indices, *args, **kwargs)
            given = _arguments(saved[name], array, indices, args, kwargs)
            tensor = sim.tensor_of(array)
            addresses, inside, shape = _index_addresses(tensor, indices)
            wanted = np.ones(inside.shape, bool)
            if given.get("mask") is not None:
                kept = np.asarray(sim.tensor_of(given["mask"])).astype(bool)
                wanted = np.broadcast_to(kept, shape).reshape(-1)
            launch.access(store, addresses, inside & wanted, block(), watch.line())
            if not given.get("check_bounds", True) and (wanted & ~inside).any():
                _note(watch, launch, notes, tensor, name)
            return result
        return watched

    space.load, space.store = tiled(False), tiled(True)
    space.gather, space.scatter = scattered(False), scattered(True)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(space, name, value)


def _arguments(function, *given) -> dict:
    """The arguments of a call of the simulator's `function`, by name, as it binds them:
    (array, index or indices, positional arguments, keyword arguments)."""
    array, where, args, kwargs = given
    try:
        return dict(_signature(function).bind(array, where, *args, **kwargs).arguments)
    except TypeError:  # the simulator refused the call already; nothing reaches here
        return dict(kwargs)


@functools.lru_cache(maxsize=None)
def _signature(function) -> inspect.Signature:
    return inspect.signature(function)  # read once: every load and store binds its call


def _tile_shape(tile) -> tuple[int, ...]:
    return tuple(getattr(tile, "shape", ()))


def _over_the_edge(array, index, shape, order) -> bool:
    view = array.permute(*memory.axis_order(order, array.dim(), "ct.load"))
    starts = [i * s for i, s in zip(memory.tile_index(index), shape)]
    return not all(st + s <= n for st, s, n in zip(starts, shape, view.shape))


def _note(watch, launch, notes, array, operation: str) -> None:
    """An access with check_bounds=False past the edge of `array`, counted at its line."""
    kind, template = UNCHECKED[operation]
    _count(notes, Note(kind, watch.line(), template, _name(launch, array), fails=True))


def _count(notes, note: Note) -> None:
    notes[note] = notes.get(note, 0) + 1


def _name(launch, array) -> str:
    return next((r.name for r in launch.regions
                 if r.start == array.untyped_storage().data_ptr()), "the array")


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


def _index_addresses(array, indices) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The address of each index (clipped into the array), whether it is in bounds, and the
    indices' shape (the flat lists' before flattening)."""
    idx = memory.index_tensors(array, indices, "ct.gather")
    inside = memory.in_bounds(array, idx)
    clipped = [i.clamp(0, max(n - 1, 0)) for i, n in zip(idx, array.shape)]
    offsets = _offsets(array)[tuple(clipped)]
    return _addresses(array, offsets), inside.reshape(-1).numpy().copy(), tuple(inside.shape)


def _note_edge(watch, launch, notes, array, index, shape, order, given) -> None:
    mode = given.get("padding_mode", sim.PaddingMode.UNDETERMINED)
    if getattr(mode, "name", str(mode)) != "UNDETERMINED" or \
            not _over_the_edge(array, index, shape, order):
        return
    _count(notes, Note("undetermined_edge", watch.line(), UNDETERMINED_EDGE, _name(launch, array)))
