"""The order in which the CPU backends run the programs of one launch.

On a GPU the programs of a launch run in no set order, and none waits for another. Triton's
interpreter and the cuTile simulator ran them one after another, in grid order, so a kernel
whose output depends on that order (a program reading, through an atomic, what the program
before it stored; the program that draws the last ticket storing the tail for everybody)
was right on the CPU every time, and wrong on a GPU. The race check (grader.replay.races)
sees programs that hand data over through plain loads and stores; the order is there for
what it does not see.

So each replayed case runs the programs of its launches in an order drawn from the case's
replay seed (`for_case`): in reverse grid order for an even seed, shuffled by
`random.Random(seed)` for an odd one. One seed always gives the same order, so `grade
--seed` reproduces a failure. Every program still runs exactly once: an order is a
permutation of the grid, position k of the run taking program `permutation[k]` of the grid
order. The replay sets the order for the length of a case (`case`, `in_case_order`); each
language's launch reads it (`current`): grader.languages.triton.program_order wraps the
interpreter's grid index, grader.languages.cutile.simulator.launching permutes its loop. Outside a replayed case (the
child's recorded call, the grid-order experiment of a failing case, grader.judge.stage)
programs run in grid order.

Which order catches a given kernel stays a matter of the draw: reversed catches a chain
from each program to the next, a shuffle most other dependences, neither every one on
every seed (a kernel right whenever one given program runs last fails 1 - 1/programs of the
shuffles).
"""

from __future__ import annotations

import functools
import random
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator


@dataclass(frozen=True)
class Order:
    """An order of a launch's programs: "grid", "reversed" or "shuffled" (by `seed`)."""

    kind: str
    seed: int = 0

    def permutation(self, count: int) -> list[int]:
        """The grid-order positions of `count` programs, in the order they run."""
        positions = list(range(count))
        if self.kind == "reversed":
            positions.reverse()
        elif self.kind == "shuffled":
            random.Random(self.seed).shuffle(positions)
        return positions

    def words(self, program: str = "program") -> str:
        """The order in words, for a failure's message (`program`: the track's word)."""
        return {"grid": f"grid order ({program} 0 first, then 1, 2, ...)",
                "reversed": f"reverse grid order (the last {program} first)",
                "shuffled": f"a shuffled order (drawn from the case's seed, {self.seed})",
                }[self.kind]


GRID = Order("grid")
_current = GRID  # the order the launches of this process use now


def for_case(seed: int) -> Order:
    """The order of a replayed case whose inputs come from `seed`."""
    return Order("reversed") if seed % 2 == 0 else Order("shuffled", seed)


def current() -> Order:
    return _current


@contextmanager
def case(seed: int, in_grid_order: bool = False) -> Iterator[Order]:
    """For the length of one replayed case: its launches run their programs in the case's
    order (in grid order where asked: the experiment that tells an order-dependent
    kernel)."""
    global _current
    saved, _current = _current, GRID if in_grid_order else for_case(seed)
    try:
        yield _current
    finally:
        _current = saved


def in_case_order(call: Callable) -> Callable:
    """A replay's `call(problem_id, params, dtype, seed, proposal)` whose launches run their
    programs in the order of the case drawn from `seed` (`in_grid_order`: in grid order)."""
    @functools.wraps(call)
    def ordered(worker, problem_id, params, dtype, seed, *args, in_grid_order=False, **kwargs):
        with case(seed, in_grid_order):
            return call(worker, problem_id, params, dtype, seed, *args, **kwargs)

    return ordered
