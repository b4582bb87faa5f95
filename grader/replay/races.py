"""Races between the programs of one launch: an element one program stores and another reads,
or that two programs store different values to.

On a GPU the programs of a launch run in no set order, and nothing in a tile language makes
one wait for another's stores (only atomics, which are not plain loads and stores): a value
one program reads where another stores is whatever the timing gives, and so is which of two
values stored to one element stays. On the CPU the interpreter runs the programs one after
another (in an order drawn for the case, grader.replay.order), so a kernel that hands data
from program to program through memory (program p writing what program p + 1 reads), or
that clears the next program's tile before its owner stores it, may get the right output
there, and pass. Here each tensor a
launch may write (the output, a buffer the wrapper allocated; not the inputs, which no
kernel may write) keeps, per element, the program that first stored it, the value its
stores left, and the program that read it; an element read by one program and stored by
another, or stored by two with different values, is a race, and the case fails on it
(grader.replay.traffic). Two programs storing the same value race harmlessly: whichever
stays, the element is the same (grader.replay.traffic notes the waste). Separate launches
are ordered, so each launch starts afresh.

The value is read from memory after the store, as the bits the tensor holds (so a NaN
equals itself): the watch is told of a store once it is done.
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
    overwrite: bool = False  # a store of another value over the other program's store

    def text(self, source, words) -> str:
        """The finding, for the student: at its line of `source`, in the track's `words`."""
        at = source.at(self.line)
        if self.overwrite:
            return (f"{at}: {words.program} {words.name(self.program)} stores to an element of "
                    f"{self.region} (flat index {self.element}) that {words.program} "
                    f"{words.name(self.other)} stored a different value to in the same launch. "
                    f"On a GPU the {words.programs} of a launch run in no set order, so which "
                    f"of the two values stays is undefined (a race); each element belongs to "
                    f"one {words.program}'s tile, and only that {words.program} stores to it")
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
        # region -> writer, reader, and the bits the writer's stores left (grader.replay.traffic
        # Region.memory)
        self.tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.first: Race | None = None

    def access(self, store: bool, index: int, region, elements: np.ndarray, flat: np.ndarray,
               program: int, line: int | None) -> None:
        """A load or store by `program` of the storage `elements` of region number `index`,
        the tensor's elements `flat`; a store is told once it is done."""
        if index not in self.tables:
            self.tables[index] = (np.full(region.numel, NONE, np.int64),
                                  np.full(region.numel, NONE, np.int64),
                                  np.zeros(region.numel, region.memory.dtype))
        writer, reader, value = self.tables[index]
        if store:
            self._overwrites(region, writer, value, elements, flat, program, line)
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

    def _overwrites(self, region, writer: np.ndarray, value: np.ndarray, elements: np.ndarray,
                    flat: np.ndarray, program: int, line: int | None) -> None:
        """A store done: the bits it left, held against another program's store there."""
        now = region.memory[elements]
        first = writer[flat]
        mine = (first == NONE) | (first == program)
        clash = ~mine & (value[flat] != now)
        if self.first is None and clash.any():
            at = int(np.nonzero(clash)[0][0])
            self.first = Race(line, region.name, program, int(first[at]), int(flat[at]), True,
                              overwrite=True)
        value[flat[mine]] = now[mine]  # another's store of the same value changes nothing
