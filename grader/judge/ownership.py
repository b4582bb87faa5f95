"""What each program stored, held against the tiles of the output.

A tiled kernel gives every program a tile of its own: the output is cut into tiles of the
stage's tile shape (course.toml `tiles`, as launched), and each program stores the whole of
one, and nothing outside it. The replay knows which program stored each output element
(grader.replay.traffic.Traffic.writers); this module says, of a failing case, where the stores
departed from that: a program that stored into several tiles, or only part of one, a tile
that several programs shared, tiles that nobody stored. Which tile a program *should* own is
the kernel's choice (a matmul may walk its tiles in groups), so nothing here names one: it
reports what was stored, in the output's coordinates. Where every program stored one whole
tile of its own, it says so, and whether a wrong tile holds the right values of another
(`moved`: a program that stored its right answer at another program's tile index).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from grader.replay.traffic import NOBODY, SEVERAL
from grader.tracks import Words

SHOW = 3  # programs or tiles named in one line
LIST = 8  # programs in the listing of who stored which tile
MOVED_TILES = 4096  # tiles at most held against each other for `moved`
MOVED_TRIES = 16  # tiles whose first element matches, held whole against one wrong tile


@dataclass(frozen=True)
class Moved:
    """Of the tiles with a wrong element, those that hold, within tolerance, the right
    values of another tile of the same shape: (tile, the tile whose values it holds)."""

    pairs: list[tuple[int, int]]
    wrong: int  # tiles with a wrong element


def moved(got: torch.Tensor, want: torch.Tensor, bad: torch.Tensor, extents: list[int],
          close) -> Moved | None:
    """Which wrong tiles hold another tile's right values; `close(got, want)` is the case's
    tolerance, element by element. None where there are too many tiles to hold together."""
    place = _Place(tuple(got.shape), extents)
    if place.n_tiles > MOVED_TILES or got.shape != want.shape:
        return None
    boxes = [place.slices(t) for t in range(place.n_tiles)]
    wrong = [t for t in range(place.n_tiles) if bool(bad[boxes[t]].any())]
    # each tile's first element: only the tiles whose first matches are held whole
    corner = tuple(torch.tensor([b[d].start for b in boxes]) for d in range(got.dim()))
    firsts, got_firsts = want[corner], got[corner]
    pairs = []
    for t in wrong:
        mine = got[boxes[t]]
        maybe = torch.nonzero(close(got_firsts[t].expand_as(firsts), firsts))[:, 0].tolist()
        for u in maybe[:MOVED_TRIES]:
            theirs = want[boxes[u]]
            if u != t and theirs.shape == mine.shape and bool(close(mine, theirs).all()):
                pairs.append((t, u))
                break
    return Moved(pairs, len(wrong))


def report(writers: torch.Tensor, extents: list[int], words: Words,
           held: Moved | None = None) -> list[str]:
    """Lines for a failing case's details; none when no program stored anything. `held`:
    what `moved` found of the values, said where every program stored a tile whole."""
    who = writers.reshape(-1).to(torch.int64)
    if not bool((who != NOBODY).any()):
        return []
    stores = _Stores(who, _Place(tuple(writers.shape), extents), words)
    lines = stores.spread() + stores.partial() + stores.shared() + stores.untouched()
    size, tiles = " x ".join(map(str, extents)), _count_tiles(stores.place.n_tiles)
    if not lines:
        return [f"every tile was stored whole by one {words.program}, and no {words.program} "
                f"stored outside its tile ({tiles} of {size})" + _held(held, stores.place)]
    lines.append(stores.listing())
    return [f"what each {words.program} stored, against the output's tiles ({size} elements per "
            f"tile, {tiles}):", *(f"  {line}" for line in lines)]


class _Stores:
    """Which program stored into which tile, and how much of it."""

    def __init__(self, who: torch.Tensor, place: "_Place", words: Words):
        self.who, self.place, self.words = who, place, words
        self.tile_of = place.tile_ids().reshape(-1)
        n_tiles = place.n_tiles
        self.size = torch.bincount(self.tile_of, minlength=n_tiles)  # edges clipped
        mine = who >= 0
        pairs, self.stored = torch.unique(who[mine] * n_tiles + self.tile_of[mine],
                                          return_counts=True)
        self.program, self.tile = pairs // n_tiles, pairs % n_tiles  # one entry per pair
        self.tiles_of = torch.bincount(self.program)  # per program
        self.writers_of = torch.bincount(self.tile, minlength=n_tiles)  # per tile
        self.is_shared = self.writers_of > 1
        self.is_shared[self.tile_of[who == SEVERAL]] = True

    def spread(self) -> list[str]:
        """Programs that stored into more than one tile."""
        programs = torch.unique(self.program)
        spread = programs[self.tiles_of[programs] > 1]
        lines = [f"{self.words.program} {self.words.name(p)} stored into "
                 f"{int(self.tiles_of[p])} tiles ({self._tiles(self.tile[self.program == p])}), "
                 f"out[{self.place.box(self.who == p)}] in all" for p in spread[:SHOW].tolist()]
        return lines + _more(spread.numel(), self.words.programs, "stored into more than one tile")

    def partial(self) -> list[str]:
        """Programs that stored into one tile only, but not the whole of it."""
        part = (self.tiles_of[self.program] == 1) & (self.stored < self.size[self.tile])
        # where programs stored the same elements, the map counts each program's own only
        stored = "alone stored" if bool((self.who == SEVERAL).any()) else "stored"
        lines = [f"{self.words.program} {self.words.name(p)} {stored} {n} of the "
                 f"{int(self.size[t])} elements of tile {self.place.name(t)} "
                 f"(out[{self.place.ranges(t)}]): out[{self.place.box(self.who == p)}]"
                 for p, t, n in zip(self.program[part][:SHOW].tolist(),
                                    self.tile[part][:SHOW].tolist(),
                                    self.stored[part][:SHOW].tolist())]
        return lines + _more(int(part.sum()), self.words.programs, "stored part of one tile")

    def shared(self) -> list[str]:
        """Tiles that more than one program stored into."""
        lines = []
        for t in torch.nonzero(self.is_shared)[:SHOW, 0].tolist():
            names = self.program[self.tile == t].tolist()
            by = (f" ({self.words.programs} {' and '.join(map(self.words.name, names[:2]))})"
                  if len(names) > 1 else "")
            lines.append(f"tile {self.place.name(t)} (out[{self.place.ranges(t)}]) was stored "
                         f"by more than one {self.words.program}{by}")
        return lines + _more(int(self.is_shared.sum()), "tiles",
                             f"stored by more than one {self.words.program}")

    def untouched(self) -> list[str]:
        """Tiles no program stored into."""
        untouched = (self.writers_of == 0) & ~self.is_shared
        if not bool(untouched.any()):
            return []
        first, count = int(torch.nonzero(untouched)[0, 0]), int(untouched.sum())
        return [f"{count} of the {self.place.n_tiles} tiles {'was' if count == 1 else 'were'} "
                f"stored by no {self.words.program} (first: tile {self.place.name(first)}, "
                f"out[{self.place.ranges(first)}])"]

    def listing(self) -> str:
        """The first programs of the grid and the tiles they stored, in order."""
        total = math.prod(list(self.words.grid))
        # where programs stored the same elements, the map knows none of them by name
        empty = "nothing alone" if bool((self.who == SEVERAL).any()) else "nothing"
        shown = [f"{self.words.name(p)} -> "
                 f"{self._tiles(self.tile[self.program == p], ' + ') or empty}"
                 for p in range(min(total, LIST))]
        return (f"{self.words.program} -> tile stored, in grid order: " + ", ".join(shown)
                + (", ..." if total > LIST else ""))

    def _tiles(self, tiles: torch.Tensor, sep: str = ", ") -> str:
        named = sep.join(self.place.name(t) for t in tiles[:SHOW].tolist())
        return named + (f" and {tiles.numel() - SHOW} more" if tiles.numel() > SHOW else "")


class _Place:
    """Tiles named by their index along each dimension, and as ranges of the output."""

    def __init__(self, shape: tuple[int, ...], extents: list[int]):
        self.shape, self.extents = shape, extents
        self.counts = [-(-n // e) for n, e in zip(shape, extents)]  # tiles along each dim
        self.n_tiles = math.prod(self.counts)

    def tile_ids(self) -> torch.Tensor:
        """Each element's tile, numbered with the last dimension fastest."""
        ids = torch.zeros(self.shape, dtype=torch.int64)
        for dim, (n, e) in enumerate(zip(self.shape, self.extents)):
            along = torch.arange(n) // e
            ids = ids * self.counts[dim] + along.view([-1 if d == dim else 1
                                                       for d in range(len(self.shape))])
        return ids

    def slices(self, tile: int) -> tuple[slice, ...]:
        return tuple(slice(i * e, min((i + 1) * e, n))
                     for i, e, n in zip(self.index(tile), self.extents, self.shape))

    def index(self, tile: int) -> list[int]:
        index = []
        for count in reversed(self.counts):
            index.append(tile % count)
            tile //= count
        return index[::-1]

    def name(self, tile: int) -> str:
        return str(tuple(self.index(tile)))

    def ranges(self, tile: int) -> str:
        return ", ".join(self._range(d, i * e, min((i + 1) * e, n))
                         for d, (i, e, n) in enumerate(zip(self.index(tile), self.extents,
                                                           self.shape)))

    def box(self, where: torch.Tensor) -> str:
        """The smallest block of the output holding every element of `where` (flat)."""
        at = torch.nonzero(where.reshape(self.shape))
        low, high = at.min(0).values.tolist(), at.max(0).values.tolist()
        return ", ".join(self._range(d, lo, hi + 1) for d, (lo, hi) in enumerate(zip(low, high)))

    def _range(self, dim: int, start: int, stop: int) -> str:
        if start == 0 and stop == self.shape[dim] and self.shape[dim] > 1:
            return ":"
        return str(start) if stop == start + 1 else f"{start}:{stop}"


def _held(held: Moved | None, place: "_Place") -> str:
    """Which tile's values the wrong tiles hold, as the end of the sentence on whole tiles."""
    if held is None:
        return ""
    if not held.pairs:
        return ("; no wrong tile holds the right values of another: the wrong values come "
                "from what was loaded or computed")
    named = ", ".join(f"{place.name(t)} holds those of {place.name(u)}"
                      for t, u in held.pairs[:SHOW])
    more = f" and {len(held.pairs) - SHOW} more" if len(held.pairs) > SHOW else ""
    if len(held.pairs) == held.wrong:
        return (f"; yet every wrong tile holds the right values of another tile ({named}{more}): "
                "the values are right, and each is stored at another tile's place (check the "
                "tile index the store uses)")
    return (f"; {len(held.pairs)} of the {held.wrong} wrong tiles hold the right values of "
            f"another tile ({named}{more})")


def _more(count: int, what: str, did: str) -> list[str]:
    return [f"... {count - SHOW} more {what} {did}"] if count > SHOW else []


def _count_tiles(count: int) -> str:
    return "1 tile" if count == 1 else f"{count} tiles"
