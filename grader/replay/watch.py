"""Watching the replay's kernels on the CPU: every load and store, handed to grader.replay.traffic.

The CPU backends (Triton's interpreter, the cuTile simulator) run each memory operation of
a kernel in Python. For the length of one launch of the replay, and only then, the
language's CPU runner part wraps them (grader.tracks.contract.CpuRunner.watch): the wrapper passes the addresses and
the mask of the batch on, with the program that made it and the line of the student's
kernel it comes from (the nearest frame in the file, `Watch.line`).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, NamedTuple

import numpy as np
import torch

from grader.replay.locate import Source
from grader.replay.regions import Region
from grader.replay.traffic import TrafficFinding, LaunchWatch, Traffic
from grader.tracks import TRACKS, wing


class Note(NamedTuple):
    """A finding a language's hooks count over a launch (grader.tracks.contract.CpuRunner.watch): its words
    are `template` with {where} (the line, quoted), {name} (the tensor) and {count} ("once",
    "N times") filled in; the student's line is a value there, never part of the template."""

    kind: str
    line: int | None
    template: str
    name: str
    fails: bool = False  # a fault on a GPU whatever the output (grader.replay.traffic.TrafficFinding)


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
        notes: dict[Note, int] = {}  # what the wing noted -> how many accesses made it
        with wing(language).cpu.watch(self, launch, grid, notes):
            yield
        launch.close(self.traffic, output)
        self.traffic.findings += [
            TrafficFinding(note.kind, note.template.format(where=self.source.at(note.line),
                                                    name=note.name, count=_times(count)),
                    note.line, note.fails)
            for note, count in notes.items()]

    def line(self) -> int | None:
        """The line of the student's file the current memory operation comes from."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != self.file:
            frame = frame.f_back
        return None if frame is None else frame.f_lineno


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def linear(index: tuple[int, ...], grid: tuple[int, ...]) -> int:
    """A program's number from its place in the grid (x fastest)."""
    x, y, z = (tuple(index) + (0, 0, 0))[:3]
    return x + grid[0] * (y + grid[1] * z)
