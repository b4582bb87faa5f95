"""Races between the programs of one launch: an element one program stores and another reads.

On a GPU the programs of a launch run in no set order, and nothing in a tile language makes
one wait for another's stores (only atomics, which are not plain loads and stores): a value
one program reads where another stores is whatever the timing gives. On the CPU the
interpreter runs the programs one after another, in order, so a kernel that hands data from
program to program through memory (program p writing what program p + 1 reads) gets the
right output there, every time, and passed. Here each tensor a launch may write (the output,
a buffer the wrapper allocated; not the inputs, which no kernel may write) keeps, per
element, the program that first stored it and the one that read it; an element read by one
program and stored by another is a race, and the case fails on it (grader.replay.traffic).
Separate launches are ordered, so each launch starts afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NONE, SEVERAL = -1, -2  # entries of the tables besides a program's number


@dataclass(frozen=True)
class Race:
    """The first race seen in a launch."""

    line: int | None  # the line whose access met the other program's
    region: str  # the tensor, as the student reads it
    program: int  # the program whose access was the second
    other: int  # the program that stored (or read) the element first; SEVERAL: more than one
    element: int  # its flat index
    store: bool  # whether the second access was a store

    def text(self, source, words) -> str:
        """The finding, for the student: at its line of `source`, in the track's `words`."""
        at = source.at(self.line)
        verb, done = ("stores to", "read") if self.store else ("reads", "stored to")
        first = (f"{words.program} {words.name(self.other)}" if self.other != SEVERAL
                 else f"other {words.programs}")
        return (f"{at}: {words.program} {words.name(self.program)} {verb} an element of "
                f"{self.region} (flat index {self.element}) that {first} {done} in the same "
                f"launch. On a GPU the {words.programs} of a launch run in no set order and "
                f"none waits for another's stores, so what is read there is undefined (a race); "
                f"a {words.program} may read only what it stored itself, or what an earlier "
                "launch stored")


class Races:
    """The stores and loads of one launch to the tensors it may write, element by element."""

    def __init__(self):
        self.tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # region -> writer, reader
        self.first: Race | None = None

    def access(self, store: bool, index: int, region, flat: np.ndarray, program: int,
               line: int | None) -> None:
        """A load or store by `program` of the elements `flat` of region number `index`."""
        if index not in self.tables:
            self.tables[index] = (np.full(region.numel, NONE, np.int64),
                                  np.full(region.numel, NONE, np.int64))
        writer, reader = self.tables[index]
        if store:
            other = reader[flat]
            writer[flat] = np.where(writer[flat] == NONE, program, writer[flat])
        else:
            other = writer[flat]
            seen = reader[flat]
            reader[flat] = np.where((seen == NONE) | (seen == program), program, SEVERAL)
        clash = (other != NONE) & (other != program)
        if self.first is None and clash.any():
            at = int(np.nonzero(clash)[0][0])
            self.first = Race(line, region.name, program, int(other[at]), int(flat[at]), store)
