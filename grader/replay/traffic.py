"""Memory traffic of a replayed call: which elements each program read and wrote.

While the replay runs a proposal on the CPU, every load and store of every program is seen
here as a batch of addresses with a mask (grader.replay.watch hooks Triton's interpreter and
the cuTile simulator). Each batch is mapped back to the tensor it falls in (an input by its
name, the output, or a tensor the wrapper allocated) with numpy index arrays: nothing here
builds a Python object per element. At the end of each launch the batches become findings,
plain sentences at the kernel's line:

- a load outside its tensor (past its end, or between the rows of a view): on a GPU that
  reads memory that belongs to something else, even where the value is later discarded;
- stores of several programs to one element, one program's store another reads (races);
- programs that stored nothing, and output elements no program stored;
- input elements no program read (the addresses skip part of the input).

`Traffic.output_map` marks each output element (written, written by several programs, written
by a program that read out of bounds) for the picture of a failure; `Traffic.writers` names the
one program that wrote each element, so that the judge can hold what each program stored
against the tiles of the output (grader.judge.ownership).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from grader.replay.locate import Source
from grader.replay.races import Races
from grader.replay.regions import Region, spanned
from grader.tracks import Words

WRITTEN, SHARED, OOB_READER = 1, 2, 4  # bits of Traffic.output_map
NOBODY, SEVERAL = -1, -2  # entries of Traffic.writers besides a program's number
SHARED_ROWS = 4096  # elements stored by several programs whose programs are named, at most
SHOW = 3  # programs or elements named in one finding


@dataclass(frozen=True)
class TrafficFinding:
    """One fact about the traffic, for the student: `kind` is what checks key on."""

    # load_out_of_bounds, load_between_rows, store_out_of_bounds, store_to_input, race, overlap,
    # same_elements, idle, unread, never_read (grader.replay.watch: undetermined_edge)
    kind: str
    text: str
    line: int | None = None
    fails: bool = False  # a fault on a GPU whatever the output: the case fails on it

    def to_json(self) -> dict:
        return {"kind": self.kind, "text": self.text, "line": self.line, "fails": self.fails}


@dataclass
class _Access:
    """What the accesses of one line to one tensor did over a launch."""

    lanes: int = 0
    outside: int = 0  # lanes past the tensor's storage or in its guard
    hole: int = 0  # lanes inside the storage but on no element of the view
    first: tuple[int, int] | None = None  # (program, elements past the end) of the first outside


@dataclass
class Traffic:
    """The findings of one replayed call and the output's map."""

    findings: list[TrafficFinding] = field(default_factory=list)
    output_map: torch.Tensor | None = None  # uint8, the output's shape
    # int32, the output's shape: the program (numbered as in the launch's grid, x fastest)
    # that stored each element, NOBODY or SEVERAL; None where several launches stored to it
    writers: torch.Tensor | None = None
    # int32, a row per element several programs stored (SHARED_ROWS of them at most, spread
    # over the output): its flat index and the two lowest of those programs; None with
    # `writers`
    shared: torch.Tensor | None = None
    writer_launch: int | None = None  # which launch of the call those programs belong to
    stored_by: set[int] = field(default_factory=set)  # launches that stored to the output

    def to_json(self) -> list[dict]:
        return [f.to_json() for f in self.findings]

    def maps(self, shape: torch.Size) -> tuple[dict[str, torch.Tensor], int | None]:
        """The maps that fit an output of `shape`, by their names in a call's reply; the
        launch whose programs `writers` names."""
        found: dict[str, torch.Tensor] = {}
        if self.output_map is not None and self.output_map.shape == shape:
            found["traffic"] = self.output_map
        if self.writers is not None and self.writers.shape == shape:
            found["writers"], found["shared"] = self.writers, self.shared
        return found, self.writer_launch if "writers" in found else None


class LaunchWatch:
    """Accumulates the accesses of one launch; `close` turns them into findings."""

    def __init__(self, regions: list[Region], programs: int, source: Source, words: Words,
                 index: int = 0):
        self.regions = sorted(regions, key=lambda r: r.start)
        self.starts = np.array([r.start for r in self.regions], dtype=np.int64)
        self.ends = np.array([r.start + r.nbytes for r in self.regions], dtype=np.int64)
        self.programs, self.source, self.words = programs, source, words
        self.index = index  # the launch's place among the call's launches
        self.loads: dict[tuple[int | None, int], _Access] = {}
        self.stores: dict[tuple[int | None, int], _Access] = {}
        self.read = {i: np.zeros(r.numel, bool) for i, r in enumerate(self.regions)
                     if r.is_input and r.given}
        self.stored_any = np.zeros(programs, bool)
        self.out_writes: list[tuple[int, np.ndarray]] = []  # (program, flat output indices)
        self.oob_programs: set[int] = set()
        # (line, whether a store) -> lanes in no tensor at all
        self.unknown: dict[tuple[int | None, bool], int] = {}
        self.out_line: int | None = None  # the first line that stored to the output
        self.input_stores: dict[tuple[int | None, str], bool] = {}
        # line -> lanes its mask switched off: a line with any has a mask (a wrong one, where
        # its lanes still leave the tensor), not a missing one
        self.masked_off: dict[int | None, int] = {}
        self.races = Races()  # an element one program stores and another reads or overwrites

    def access(self, store: bool, addresses: np.ndarray, mask: np.ndarray, program: int,
               line: int | None, width: int | None = None) -> None:
        """One load or store of one program: byte addresses and the lanes it makes; a store
        once it is done (grader.replay.races reads what it left); `width`: the bytes a lane
        moves, where a pointer cast makes it more than the tensor's element (every element
        its bytes reach is accessed)."""
        active = addresses.reshape(-1).astype(np.int64)[np.broadcast_to(mask, addresses.shape)
                                                        .reshape(-1).astype(bool)]
        if store and active.size:
            self.stored_any[program] = True
        off = int(addresses.size - active.size)
        if off:
            self.masked_off[line] = self.masked_off.get(line, 0) + off
        if not active.size:
            return
        which = np.searchsorted(self.starts, active, side="right") - 1
        known = (which >= 0) & (active < self.ends[np.maximum(which, 0)])
        if not known.all():
            self.unknown[line, store] = self.unknown.get((line, store), 0) + int((~known).sum())
            active, which = active[known], which[known]
        for index in np.unique(which):
            self._region_access(store, int(index), active[which == index], program, line,
                                width)

    def _region_access(self, store: bool, index: int, addresses: np.ndarray, program: int,
                       line: int | None, width: int | None = None) -> None:
        region = self.regions[index]
        elements = spanned(addresses - region.start, region.itemsize, width)
        beyond = elements >= region.logical.size  # a wide lane's bytes past the storage
        flat = np.where(beyond, -1, region.logical[np.minimum(elements, region.logical.size - 1)])
        table = self.stores if store else self.loads
        access = table.setdefault((line, index), _Access())
        access.lanes += elements.size
        inside = flat >= 0
        last = region.last
        past = elements > last
        access.outside += int(past.sum())
        access.hole += int((~inside & ~past).sum())
        if past.any():
            self.oob_programs.add(program)
            if access.first is None:
                access.first = (program, int(elements[past].max() - last))
        if not region.is_input:
            self.races.access(store, index, region, elements[inside], flat[inside], program, line)
        if store and region.is_output:
            self.out_writes.append((program, flat[inside]))
            self.out_line = self.out_line or line
        elif store and region.is_input:
            self.input_stores[(line, region.name)] = True
        elif not store and index in self.read:
            self.read[index][flat[inside]] = True

    def close(self, traffic: Traffic, output: torch.Tensor | None) -> None:
        """This launch's findings added to `traffic`, and its stores to the output's map."""
        found = traffic.findings
        for (line, index), access in sorted(self.loads.items(), key=_order):
            found += self._load_findings(line, self.regions[index], access)
        for (line, index), access in sorted(self.stores.items(), key=_order):
            found += self._store_findings(line, self.regions[index], access)
        for (line, store), lanes in self.unknown.items():
            kind = "store_out_of_bounds" if store else "load_out_of_bounds"
            found.append(TrafficFinding(kind, f"{self.source.at(line)}: {lanes} accesses "
                                 "reach an address in no tensor the kernel was given: check how "
                                 "the pointers are computed", line, fails=True))
        for line, name in self.input_stores:
            found.append(TrafficFinding("store_to_input", f"{self.source.at(line)}: stores into the "
                                 f"input {name}: a kernel reads its inputs and writes only the "
                                 "output", line, fails=True))
        if race := self.races.first:  # grader.replay.races
            found.append(TrafficFinding("race", race.text(self.source, self.words), race.line,
                                 fails=True))
        found += self._idle()
        if output is not None:
            found += self._output(traffic, output)
        for index, read in self.read.items():
            if read.size and not read.all():
                found.append(self._unread(index, read))

    def _unread(self, index: int, read: np.ndarray) -> TrafficFinding:
        """Elements of an input no program read, at the line of the load that read the rest
        (where one line did: the addresses it computed are the ones that miss)."""
        missing = int((~read).sum())
        readers = sorted({line for line, i in self.loads if i == index and line is not None})
        where = (f"{self.source.at(readers[0])}, its only load: " if len(readers) == 1 else
                 f"its loads at lines {', '.join(map(str, readers[:SHOW]))}: " if readers else "")
        return TrafficFinding("never_read" if missing == read.size else "unread",
                       f"{where}{missing} of the {read.size} elements of "
                       f"{self.regions[index].name} were never read by any {self.words.program} "
                       f"(first: flat index {int(np.nonzero(~read)[0][0])}): the addresses do "
                       f"not cover the whole input (check the strides, the {self.words.offsets} "
                       "and where each loop over the input stops)",
                       readers[0] if len(readers) == 1 else None)

    def _load_findings(self, line, region: Region, access: _Access) -> list[TrafficFinding]:
        out = []
        if access.outside:
            program, past = access.first or (0, 0)
            out.append(TrafficFinding("load_out_of_bounds", f"{self.source.at(line)}: reads "
                               f"{_count(access.outside)} past the end of {region.name} "
                               f"({self.words.program} {self.words.name(program)} reaches "
                               f"{past} past its last element). On a GPU that reads memory that "
                               "belongs to something else, even where the value is later "
                               f"discarded: {self._fix(line, self.words.bound_load)}", line, fails=True))
        if access.hole:
            out.append(TrafficFinding("load_between_rows", f"{self.source.at(line)}: reads "
                               f"{access.hole} elements of the memory under {region.name} that "
                               "are not elements of it (the view skips them): the addresses "
                               "ignore the tensor's strides", line))
        return out

    def _fix(self, line, missing: str) -> str:
        """How to keep a load or store inside its tensor: `missing` (the track's words for a
        mask to add), unless the line has a mask that switched lanes off: then lanes it let
        through went past the end, and the watch cannot tell whether the mask is too loose
        or the addresses wrong (a stride, an offset): it names both."""
        if not self.masked_off.get(line):
            return missing
        return (f"this line has a mask ({self.masked_off[line]} lanes switched off), yet lanes "
                "it lets through reach past the end: either the mask does not hold each offset "
                "to the bound of its own dimension, or the addresses are not the tensor's (a "
                "stride or an offset of another tensor)")

    def _store_findings(self, line, region: Region, access: _Access) -> list[TrafficFinding]:
        if not access.outside:
            return []
        return [TrafficFinding("store_out_of_bounds", f"{self.source.at(line)}: writes "
                        f"{_count(access.outside)} past the end of {region.name}: "
                        f"{self._fix(line, self.words.bound_store)}", line, fails=True)]

    def _idle(self) -> list[TrafficFinding]:
        idle = np.nonzero(~self.stored_any)[0]
        if not idle.size or idle.size == self.programs:
            return []
        names = ", ".join(self.words.name(int(p)) for p in idle[:SHOW])
        more = f" and {idle.size - SHOW} more" if idle.size > SHOW else ""
        return [TrafficFinding("idle", f"{idle.size} of the {self.programs} {self.words.programs} "
                        f"stored nothing ({names}{more}): the grid is larger than the work, or "
                        f"their {self.words.bound_store_word} switches every lane off")]

    def _output(self, traffic: Traffic, output: torch.Tensor) -> list[TrafficFinding]:
        if not self.out_writes:
            return []
        numel = output.numel()
        programs = np.concatenate([np.full(f.size, p, np.int64) for p, f in self.out_writes])
        flat = np.concatenate([f for _, f in self.out_writes])
        pairs = np.unique(flat * self.programs + programs)
        writers = np.bincount(pairs // self.programs, minlength=numel)
        if traffic.output_map is None:
            traffic.output_map = torch.zeros(output.shape, dtype=torch.uint8)
        marks = traffic.output_map.view(-1).numpy()
        self._writers(traffic, output, writers, pairs)
        marks[writers > 0] |= WRITTEN
        marks[writers > 1] |= SHARED
        oob = [f for p, f in self.out_writes if p in self.oob_programs]
        if oob:
            marks[np.concatenate(oob)] |= OOB_READER
        return self._sharing(writers, pairs)

    def _writers(self, traffic: Traffic, output: torch.Tensor, writers: np.ndarray,
                 pairs: np.ndarray) -> None:
        """Who wrote each output element, while only this launch has stored to the output."""
        traffic.stored_by.add(self.index)
        if len(traffic.stored_by) > 1:
            traffic.writers, traffic.shared, traffic.writer_launch = None, None, None
            return
        who = np.full(writers.size, NOBODY, np.int32)
        who[writers > 1] = SEVERAL
        alone = pairs[writers[pairs // self.programs] == 1]
        who[alone // self.programs] = alone % self.programs
        # pairs are sorted (element, then program): an element's programs lie side by side,
        # the lowest first
        several = pairs[writers[pairs // self.programs] > 1]
        elements = several // self.programs
        first = np.nonzero(np.r_[True, elements[1:] != elements[:-1]])[0] \
            if several.size else np.zeros(0, np.int64)
        if first.size > SHARED_ROWS:  # spread over the output, so every part of it has some
            first = first[np.unique(np.linspace(0, first.size - 1, SHARED_ROWS).astype(np.int64))]
        rows = np.stack([elements[first], several[first] % self.programs,
                         several[first + 1] % self.programs], axis=1) if first.size else \
            np.zeros((0, 3), np.int64)
        traffic.writers = torch.from_numpy(who).view(output.shape)
        traffic.shared = torch.from_numpy(rows.astype(np.int32))
        traffic.writer_launch = self.index

    def _sharing(self, writers: np.ndarray, pairs: np.ndarray) -> list[TrafficFinding]:
        shared = np.nonzero(writers > 1)[0]
        if not shared.size:
            return []
        writing = np.unique(pairs % self.programs)
        if writing.size > 1 and (writers[writers > 0] == writing.size).all():
            return [TrafficFinding("same_elements", f"{self.source.at(self.out_line)}: all {writing.size}"
                            f" {self.words.programs} that stored to the output stored to the same "
                            f"{int((writers > 0).sum())} elements: the {self.words.offsets} do not "
                            f"change with {self.words.pid} as they must (each "
                            f"{self.words.program} owns a tile of its own)", self.out_line)]
        first = int(shared[0])
        who = pairs[pairs // self.programs == first] % self.programs
        names = " and ".join(self.words.name(int(p)) for p in who[:2])
        return [TrafficFinding("overlap", f"{self.source.at(self.out_line)}: {shared.size} output "
                        "elements were stored by more than one "
                        f"{self.words.program} (flat index {first} by {names}): on a GPU they "
                        "race, and which value stays is undefined; each element belongs to "
                        f"one {self.words.program}'s tile", self.out_line)]


def _count(n: int) -> str:
    return "1 element" if n == 1 else f"{n} elements"


def _order(item) -> tuple:
    (line, index), _ = item
    return (line or 0, index)
