"""A cuTile simulator: runs `@ct.kernel` bodies on the CPU, block by block, on torch tensors.

cuTile has no interpreter, so without a recent NVIDIA GPU a student could not run a single
cuTile exercise. The simulator executes the kernel's Python body once per block of the grid,
with `ct` bound to `namespace`: the part of the `cuda.tile` API the course uses, implemented
on CPU tensors.

A body run as Python can use whatever the values it is handed let it reach, so it is handed
what a GPU kernel is, and nothing more:

- each tensor argument as an `Array`, which offers what cuTile's `ct.Array` does (`shape`,
  `dtype`, `ndim`, `strides`), and each tile as a `Tile`, which offers what `ct.Tile` does;
  the torch tensor behind either is private, so a body cannot call PyTorch on it
  (`out.copy_(x + y)`), as no GPU kernel could;
- where cuda.tile is installed, cuda.tile's own dtypes and enums (`ct.float32` is
  `cuda.tile.float32`, `x.dtype` and `tile.dtype` are cuda.tile dtypes, `ct.RoundingMode` is
  cuda.tile's), so every value a body reads is the one cuTile's compiler read when it
  checked the kernel: a constant `if` the compiler folded goes the same way here.

It follows cuTile's documented semantics, including what it leaves undefined:

- `ct.load` pads out-of-bounds elements as asked; UNDETERMINED padding reads as poison
  (NaN for floats, a large sentinel for integers), so a kernel that relies on it fails here
  the way it could on a GPU;
- `ct.store` drops out-of-bounds elements, and needs a tile of a dtype cuTile converts to
  the array's implicitly (the same, or one that promotes to it);
- a tile that lies entirely outside its array (undefined in cuTile) is an error that names
  the tile index and the tile space;
- tile dimensions must be powers of two;
- `ct.launch` checks its arguments as cuTile's does (a stream, a grid that is a tuple of at
  most three ints, a @ct.kernel, a tuple of kernel arguments), with cuTile's messages;
- `ct.mma` adds a @ b, computed in fp32, to an accumulator of fp32 (or fp16 for fp16
  inputs) and never converts its inputs; tf32 tiles are fp32 rounded to 10 mantissa bits;
- any other `ct.*` name raises an error saying the simulator does not support it, never a
  silent wrong answer.

Errors are about the student's kernel, in cuTile's words (tile indices, tile spaces, tile
shapes, padding_mode), never PyTorch's: the simulator runs on torch tensors, but what
PyTorch would say about them (a shape mismatch in an indexing assignment) describes the
simulator, not the kernel. The messages that mirror cuTile's own are taken from
cuda.tile's source (its type checker, and the argument checks of its `launch`).

Its modules, each a concern of the simulated `cuda.tile`:

    errors.py        SimulatorUnsupported, SimulatorError, SimulatorAttributeError
    dtypes.py        the dtypes and enums a kernel reads; the torch dtypes computed in, promotion
    values.py        Tile and Array, the torch tensor behind each private; operands, operators
    blocks.py        the grid of a launch: the block that runs now, ct.bid, num_blocks, cdiv
    memory.py        ct.load, store, gather, scatter, num_tiles: an array's tile space
    construction.py  ct.full, zeros, ones, arange; astype, reshape, permute and the like
    arithmetic.py    elementwise math, where, reductions, mma and matmul
    namespace.py     `namespace`, what `ct` is in a kernel: the API, in cuTile's words
    rebinding.py     a kernel's function with `ct` rebound and PyTorch refused
    launching.py     ct.launch's checks, the run block by block, and install

The package re-exports the simulated API and what the grader and its tests use; a kernel
reaches it only through `namespace`.
"""

from grader.languages.cutile.simulator.arithmetic import (
    abs, ceil, cos, exp, exp2, floor, isnan, log, log2, matmul, max, maximum, min, minimum, mma,
    rsqrt, sin, sqrt, sum, tanh, truediv, where)
from grader.languages.cutile.simulator.blocks import bid, cdiv, num_blocks
from grader.languages.cutile.simulator.construction import (
    arange, astype, broadcast_to, expand_dims, full, ones, permute, reshape, transpose, zeros)
from grader.languages.cutile.simulator.dtypes import (
    Constant, PaddingMode, RoundingMode, bfloat16, bool_, float16, float32, float64, int8, int16,
    int32, int64, tfloat32, uint8)
from grader.languages.cutile.simulator.errors import (
    SimulatorAttributeError, SimulatorError, SimulatorUnsupported)
from grader.languages.cutile.simulator.launching import (
    MAX_GRID_DIM, SimulatedStream, install, launch)
from grader.languages.cutile.simulator.memory import gather, load, num_tiles, scatter, store
from grader.languages.cutile.simulator.namespace import API, namespace
from grader.languages.cutile.simulator.values import Array, Tile, tensor_of
