"""Watching the replay's kernels on the CPU: every load and store, handed to grader.replay.traffic.

Triton's interpreter executes each program's memory operations through its builder's
`create_masked_load` / `create_masked_store` (plain loads, block pointers and descriptors
all end there); the cuTile simulator through `ct.load`, `ct.store`, `ct.gather` and
`ct.scatter`. For the length of one launch of the replay, and only then, those are wrapped:
the wrapper passes the addresses and the mask of the batch on, with the program that made
it and the line of the student's kernel it comes from (the nearest frame in the file).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from grader.replay.traffic import Finding, LaunchWatch, Region, Source, Traffic
from grader.tracks import TRACKS, wing


class Watch:
    """The traffic of one replayed call, launch by launch."""

    def __init__(self, path: Path, names: dict[str, str]):
        self.file = str(path)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        self.source = Source(tuple(text.splitlines()), path.name)
        self.names = names  # buffer ("input.0") -> the argument's name ("x")
        self.traffic = Traffic()

    def regions(self, buffers: dict[str, torch.Tensor], output: torch.Tensor | None,
                result_buffer: str | None, given: set[str] = frozenset()) -> list[Region]:
        """The tensors a launch may touch; `given`: the buffers it was handed (an input the
        wrapper copied first, say to float32, is read through its copy, not itself)."""
        found, seen = [], set()
        for key, tensor in buffers.items():
            storage = tensor.untyped_storage().data_ptr()
            if storage in seen or tensor.device.type != "cpu":
                continue
            seen.add(storage)
            if key == result_buffer and output is not None:
                found.append(Region.of(output, "the output", is_output=True))
            elif key in self.names:
                found.append(Region.of(tensor, f"`{self.names[key]}`", is_input=True,
                                       given=key in given))
            else:
                found.append(Region.of(tensor, "a tensor the wrapper allocated"))
        return found

    @contextmanager
    def launch(self, language: str, grid: tuple[int, ...], regions: list[Region],
               output: torch.Tensor | None, index: int = 0) -> Iterator[None]:
        """Watch launch number `index` of the call."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        programs = int(np.prod(grid))
        words = TRACKS[language].words_for(grid)
        launch = LaunchWatch(regions, programs, self.source, words, index)
        hooks = HOOKS[language]
        notes: dict[tuple, list] = {}
        with hooks(self, launch, grid, notes):
            yield
        launch.close(self.traffic, output)
        self.traffic.findings += [Finding(kind, text.format(count=count), line)
                                  for (kind, line, text), count in notes.items()]

    def line(self) -> int | None:
        """The line of the student's file the current memory operation comes from."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != self.file:
            frame = frame.f_back
        return None if frame is None else frame.f_lineno


def linear(index: tuple[int, ...], grid: tuple[int, ...]) -> int:
    """A program's number from its place in the grid (x fastest)."""
    x, y, z = (tuple(index) + (0, 0, 0))[:3]
    return x + grid[0] * (y + grid[1] * z)


UNDETERMINED_EDGE = ("{count} loads at {where} take a tile that hangs over the edge of {name} "
                     "with padding_mode UNDETERMINED (the default): the elements past the edge "
                     "are undefined, on a GPU anything; say what they read as with padding_mode")


@contextmanager
def _cutile_hooks(watch: Watch, launch: LaunchWatch, grid, notes) -> Iterator[None]:
    from grader.languages.cutile import simulator as sim
    from grader.languages.cutile.simulator import blocks

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
                inside &= np.broadcast_to(np.asarray(sim.tensor_of(mask)).astype(bool), inside.shape)
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
    span = array.storage_offset() + sum((n - 1) * s for n, s in zip(array.shape, array.stride())) + 1
    return torch.arange(span, dtype=torch.int64).as_strided(
        array.shape, array.stride(), array.storage_offset())


def _addresses(array: torch.Tensor, offsets: torch.Tensor) -> np.ndarray:
    base = array.untyped_storage().data_ptr()
    return (base + offsets.reshape(-1) * array.element_size()).numpy()


def _window_addresses(array, index, shape, order) -> np.ndarray:
    from grader.languages.cutile.simulator import memory

    offsets = _offsets(array)
    view, _, slices = memory.window(offsets, memory.tile_index(index), tuple(shape), order,
                                    "ct.load")
    return _addresses(array, view[slices])


def _index_addresses(array, indices) -> tuple[np.ndarray, np.ndarray]:
    from grader.languages.cutile.simulator import memory

    idx = memory.index_tensors(array, indices, "ct.gather")
    inside = memory.in_bounds(array, idx)
    clipped = [i.clamp(0, max(n - 1, 0)) for i, n in zip(idx, array.shape)]
    offsets = _offsets(array)[tuple(clipped)]
    return _addresses(array, offsets), inside.reshape(-1).numpy().copy()


def _note_edge(watch, launch, notes, array, index, shape, order, kwargs) -> None:
    from grader.languages.cutile import simulator as sim
    from grader.languages.cutile.simulator import memory

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


# Per track: the hooks that watch its loads and stores during one launch on the CPU.
HOOKS = {"triton": wing("triton").watch, "cutile": _cutile_hooks}
