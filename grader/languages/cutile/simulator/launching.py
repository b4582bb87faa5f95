"""A launch: `ct.launch`'s checks of its arguments (cuTile's messages), the kernel run on the
CPU block after block, and `install`, which makes `ct.launch` the simulator's in a process."""

from __future__ import annotations

import itertools
import types

import torch

from grader.languages.cutile.simulator import blocks
from grader.languages.cutile.simulator.errors import SimulatorError
from grader.languages.cutile.simulator.rebinding import kernel_function, rebind
from grader.languages.cutile.simulator.values import Array
from grader.replay import order

# A grid dimension is at most 2^24 - 1 blocks in cuTile.
MAX_GRID_DIM = 0xFFFFFF


def _launch_grid(grid) -> tuple[int, int, int]:
    """The grid as cuTile's launch reads it, refused with its messages: a tuple (not an int,
    not a list) of at most three Python ints, each below 2^24; missing dimensions are 1."""
    if not isinstance(grid, tuple):
        raise TypeError("Grid must be a tuple (e.g. (blocks,) for a 1-D grid), got "
                        f"{type(grid).__name__}")
    if len(grid) > 3:
        raise ValueError(f"Grid dimensions must be at most 3, got length {len(grid)}")
    for i, size in enumerate(grid):
        if not isinstance(size, int):  # numpy and torch integers too, as in cuTile
            raise TypeError(f"an integer is required: Grid[{i}] is a {type(size).__name__}")
        if size < 0:
            raise OverflowError(f"can't convert negative value to unsigned int: Grid[{i}] is {size}")
        if size > MAX_GRID_DIM:
            raise ValueError(f"Grid[{i}] exceeds 24-bit limit: max={MAX_GRID_DIM}, got={size}. "
                             "Use multiple kernel launches for larger workloads.")
        if size == 0:
            # Not cuTile's check but CUDA's: a launch has at least one block per dimension.
            raise ValueError(f"Failed to launch cuTile kernel: Grid[{i}] is 0, and a grid needs "
                             "at least one block along each dimension")
    return tuple(int(g) for g in grid + (1,) * (3 - len(grid)))


def _check_launch(kernel, kernel_args) -> None:
    """ct.launch's checks of the kernel and its arguments, in cuTile's words."""
    if not _is_tile_kernel(kernel):
        raise TypeError("launch expects a tile kernel as the third argument, got "
                        f"{type(kernel).__name__} (decorate the kernel with @ct.kernel)")
    if not isinstance(kernel_args, tuple):
        raise TypeError("launch expects a tuple as the fourth argument, got "
                        f"{type(kernel_args).__name__}")


def _is_tile_kernel(kernel) -> bool:
    """A @ct.kernel (cuda.tile's TileDispatcher); without cuda.tile, any Python function."""
    try:
        from cuda.tile._cext import TileDispatcher
    except ImportError:
        return isinstance(getattr(kernel, "__wrapped__", kernel), types.FunctionType)
    return isinstance(kernel, TileDispatcher)


def launch(stream, grid, kernel, kernel_args, /, *, programmatic_dependent_launch=False) -> None:
    """Run `kernel` over `grid` on the CPU, one block after another (in the replayed case's
    order), after the argument checks of cuTile's own launch."""
    # In cuTile's order: the stream, the grid, the kernel, its arguments.
    if stream is None:
        raise TypeError("Stream is required, got None")
    grid = _launch_grid(grid)
    _check_launch(kernel, kernel_args)
    body = rebind(kernel_function(kernel))
    args = tuple(_kernel_argument(a) for a in kernel_args)
    saved = blocks.current, blocks.grid
    blocks.grid = grid
    # The simulator's own torch operations are the "GPU" here: the grader's watch for
    # PyTorch doing a stage's work (a dispatch mode) must not see them.
    from torch.utils._python_dispatch import _disable_current_modes

    try:
        with _disable_current_modes():
            for x, y, z in _in_case_order(grid):
                blocks.current = (x, y, z)
                body(*args)
    finally:
        blocks.current, blocks.grid = saved


def _in_case_order(grid: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """Every block of `grid` once, (x, y, z), in the replayed case's order (grader.replay.order):
    a permutation of grid order (x fastest), in which the simulator ran them before. A GPU
    runs them in any order, so a kernel right only in grid order fails here too."""
    in_grid_order = [(x, y, z) for z, y, x in itertools.product(
        range(grid[2]), range(grid[1]), range(grid[0]))]
    return [in_grid_order[k] for k in order.current().permutation(len(in_grid_order))]


def _kernel_argument(value):
    """A launch argument as the kernel body receives it: each tensor as an Array (a tuple or
    list of them too), so that no torch tensor reaches the body; anything else as it is,
    the very value cuTile's compiler was given."""
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise SimulatorError("the cuTile simulator runs on CPU tensors")
        return Array(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_kernel_argument(v) for v in value)
    return value


class SimulatedStream:
    """What torch.cuda.current_stream() returns in a simulating process: a stream to pass to
    ct.launch, which (as cuTile's) refuses None."""

    def __repr__(self) -> str:
        return "SimulatedStream()"


def install() -> None:
    """Make `ct.launch` run kernels in the simulator in this process (a grading child)."""
    import cuda.tile as ct

    ct.launch = launch
    stream = SimulatedStream()
    torch.cuda.current_stream = lambda *a, **k: stream
