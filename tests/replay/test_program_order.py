"""The order in which the CPU backends run a launch's programs (grader.replay.order): drawn
per case from its replay seed, a permutation of the grid, and what Triton's interpreter and
the cuTile simulator follow. (The attack files tests/attacks/triton/stage1_programs_chain_
through_atomics.py and stage1_last_ticket_stores_the_tail.py grade kernels right only in
grid order; the honest files and the references pass in any order.)"""

import pytest
import torch
import triton
import triton.language as tl

from grader.languages.triton.program_order import programs_in_case_order
from grader.replay import order


@pytest.mark.parametrize("count", [0, 1, 2, 7, 1000])
@pytest.mark.parametrize("chosen", [order.GRID, order.Order("reversed"), order.for_case(12345)])
def test_an_order_runs_every_program_exactly_once(chosen, count):
    assert sorted(chosen.permutation(count)) == list(range(count))


def test_an_even_seed_reverses_the_grid_and_an_odd_one_shuffles_it_reproducibly():
    assert order.for_case(10).permutation(5) == [4, 3, 2, 1, 0]
    shuffled = order.for_case(11).permutation(100)
    assert shuffled == order.for_case(11).permutation(100)  # --seed reproduces it
    assert shuffled != list(range(100)) and shuffled != list(range(100))[::-1]
    assert shuffled != order.for_case(13).permutation(100)
    assert "shuffled" in order.for_case(11).words() and "11" in order.for_case(11).words()


def test_a_case_sets_the_order_for_its_length_only():
    assert order.current() == order.GRID
    with order.case(11) as chosen:
        assert order.current() == chosen == order.for_case(11)
        with order.case(11, in_grid_order=True):  # the experiment of a failing case
            assert order.current() == order.GRID
    assert order.current() == order.GRID


@triton.jit
def _record_order(counter_ptr, seen_ptr):
    """Each program writes its number (x slowest, as the interpreter loops) at the place its
    ticket gives: `seen` is the order in which the programs ran."""
    ny, nz = tl.num_programs(1), tl.num_programs(2)
    me = (tl.program_id(0) * ny + tl.program_id(1)) * nz + tl.program_id(2)
    ticket = tl.atomic_add(counter_ptr, 1)
    tl.store(seen_ptr + ticket, me)


def _triton_order(grid: tuple[int, int, int], seed: int | None) -> list[int]:
    counter = torch.zeros(1, dtype=torch.int32)
    seen = torch.full((grid[0] * grid[1] * grid[2],), -1, dtype=torch.int32)
    with order.case(seed or 0, in_grid_order=seed is None), programs_in_case_order():
        _record_order[grid](counter, seen)
    return seen.tolist()


@pytest.mark.parametrize("grid", [(8, 1, 1), (3, 2, 2)])
@pytest.mark.parametrize("seed", [None, 10, 11])
def test_the_interpreter_runs_the_programs_in_the_cases_order(grid, seed):
    chosen = order.GRID if seed is None else order.for_case(seed)
    assert _triton_order(grid, seed) == chosen.permutation(grid[0] * grid[1] * grid[2])


def test_the_interpreters_builder_is_its_own_again_after_a_launch():
    from triton.runtime import interpreter

    _triton_order((4, 1, 1), 11)
    assert "set_grid_idx" not in vars(interpreter.interpreter_builder)
    assert _triton_order((4, 1, 1), None) == [0, 1, 2, 3]


ct = pytest.importorskip("cuda.tile")


@ct.kernel
def _touch(x, TILE: ct.Constant[int]):
    ct.bid(0)


@pytest.mark.parametrize("grid", [(8,), (3, 2, 2)])
@pytest.mark.parametrize("seed", [None, 10, 11])
def test_the_simulator_runs_the_blocks_in_the_cases_order(grid, seed, monkeypatch):
    from grader.languages.cutile import simulator as sim
    from grader.languages.cutile.simulator import blocks

    full = tuple(grid) + (1,) * (3 - len(grid))
    ran = []
    monkeypatch.setattr(sim.namespace, "bid", lambda axis: ran.append(blocks.current) or 0)
    with order.case(seed or 0, in_grid_order=seed is None) as chosen:
        sim.launch(sim.SimulatedStream(), grid, _touch, (torch.zeros(16), 16))
    # grid order in cuTile: x fastest
    positions = [x + full[0] * (y + full[1] * z) for x, y, z in ran]
    assert positions == chosen.permutation(full[0] * full[1] * full[2])
