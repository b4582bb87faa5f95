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
"""

from __future__ import annotations

import builtins
import enum
import itertools
import math
import re
import types

import torch

try:  # the course's cuTile extra; the simulator also runs without it (its own stand-ins)
    import cuda.tile as _cuda_tile
except ImportError:
    _cuda_tile = None

# --- dtypes -------------------------------------------------------------------------------
#
# Every launch the simulator runs was first checked by cuTile's own front end, which folds
# a constant `if` at compile time: a kernel that reads a value (a dtype, `x.dtype`,
# `f"{ct.float32}"`, an enum member's value) must read the very value the compiler read, or
# a branch the compiler dropped could run here. So where cuda.tile is installed, the dtypes
# and enums a kernel sees are cuda.tile's own objects; the simulator computes in the torch
# dtypes of the same names.

# cuda.tile's dtype names (DType.name) for the torch dtypes the simulator computes in.
_DTYPE_NAMES: dict[str, torch.dtype] = {
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
    "float64": torch.float64, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "bool_": torch.bool}
_DTYPE_NAMES_BY_DTYPE = {v: k for k, v in _DTYPE_NAMES.items()}


class _TF32:
    """ct.tfloat32 without cuda.tile: fp32 storage with a 10-bit mantissa (what tensor
    cores read)."""

    name = "tfloat32"

    def __repr__(self) -> str:
        return "tfloat32"


def _kernel_dtype(name: str):
    """The dtype object a kernel reads for `name`: cuda.tile's, else torch's."""
    return _DTYPE_NAMES[name] if _cuda_tile is None else getattr(_cuda_tile, name)


float16, bfloat16 = _kernel_dtype("float16"), _kernel_dtype("bfloat16")
float32, float64 = _kernel_dtype("float32"), _kernel_dtype("float64")
int8, int16, int32, int64 = map(_kernel_dtype, ("int8", "int16", "int32", "int64"))
uint8, bool_ = _kernel_dtype("uint8"), _kernel_dtype("bool_")
tfloat32 = _TF32() if _cuda_tile is None else _cuda_tile.tfloat32


class _PaddingMode(enum.Enum):
    """ct.PaddingMode without cuda.tile (cuda.tile's members and values)."""

    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


class _RoundingMode(enum.Enum):
    """ct.RoundingMode without cuda.tile (cuda.tile's members and values)."""

    RN = "nearest_even"
    RZ = "zero"
    RM = "negative_inf"
    RP = "positive_inf"
    RA = "nearest_away"
    FULL = "full"
    APPROX = "approx"
    RZI = "nearest_int_to_zero"


class _Constant:
    """ct.Constant[int] without cuda.tile, in annotations of kernels defined against the
    simulator."""

    def __class_getitem__(cls, item):
        return item


PaddingMode = getattr(_cuda_tile, "PaddingMode", _PaddingMode)
RoundingMode = getattr(_cuda_tile, "RoundingMode", _RoundingMode)
Constant = getattr(_cuda_tile, "Constant", _Constant)


class SimulatorUnsupported(NotImplementedError):
    """The kernel used a part of cuda.tile that the simulator does not implement."""


class SimulatorError(ValueError):
    """The kernel did something cuTile rejects (a tile size that is not a power of two...)."""


class SimulatorAttributeError(SimulatorError, AttributeError):
    """The kernel read an attribute that cuTile's arrays or tiles do not have."""


def _torch_dtype(dtype) -> torch.dtype:
    """The torch dtype the simulator computes in for a dtype a kernel names (cuda.tile's, a
    torch dtype, a numpy dtype or scalar type such as np.float32)."""
    if dtype is tfloat32:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
    found = {**_DTYPE_NAMES, "bool": torch.bool, "tfloat32": torch.float32}.get(name.split(".")[-1])
    if found is None:
        raise SimulatorUnsupported(f"the cuTile simulator does not support dtype {dtype!r}")
    return found


def _dtype_of(data: torch.Tensor, tf32: bool = False):
    """The dtype a kernel reads for what the simulator holds in `data` (cuda.tile's)."""
    if tf32:
        return tfloat32
    name = _DTYPE_NAMES_BY_DTYPE.get(data.dtype)
    if name is None:
        raise SimulatorUnsupported(f"the cuTile simulator does not support dtype {data.dtype}")
    return _kernel_dtype(name)


_UNKNOWN = object()  # cuda.tile is not installed: its promotion table cannot be asked


def _promoted(a: torch.dtype, b: torch.dtype):
    """The dtype cuTile promotes a and b to, None where it refuses to (bfloat16 and float16),
    from cuda.tile's own table; _UNKNOWN without cuda.tile or for a dtype it does not name."""
    if a == b:
        return a
    try:
        import cuda.tile as ct
        from cuda.tile._cext import _promote_dtypes
    except ImportError:
        return _UNKNOWN
    if a not in _DTYPE_NAMES_BY_DTYPE or b not in _DTYPE_NAMES_BY_DTYPE:
        return _UNKNOWN
    found = _promote_dtypes(getattr(ct, _DTYPE_NAMES_BY_DTYPE[a]), getattr(ct, _DTYPE_NAMES_BY_DTYPE[b]))
    return None if found is None else _DTYPE_NAMES.get(found.name, _UNKNOWN)


def _round_tf32(t: torch.Tensor) -> torch.Tensor:
    """Round fp32 to the nearest value with a 10-bit mantissa."""
    bits = t.contiguous().view(torch.int32)
    rounded = (bits + 0x1000) & ~0x1FFF
    return rounded.view(torch.float32)


# --- tiles and arrays -----------------------------------------------------------------------
#
# A kernel body runs here as Python, so whatever a tile or an array lets it reach, it can
# use. Each offers a kernel only what cuTile's own Tile and Array offer (and the simulator
# supports); the torch tensor behind it is private: no PyTorch runs inside a kernel, as
# none could on a GPU.

_TILE_OFFERS = ("a tile offers shape, dtype, ndim, astype, reshape, permute, transpose and "
                "item, and is computed with operators and ct.* functions")
_ARRAY_OFFERS = ("an array offers shape, dtype, ndim and strides, and is read with ct.load or "
                 "ct.gather and written with ct.store or ct.scatter")


def _no_attribute(what: str, name: str, offers: str) -> SimulatorAttributeError:
    return SimulatorAttributeError(
        f"a cuTile {what} has no attribute `{name}`: {offers}. A kernel cannot call PyTorch "
        f"on its arrays or tiles (on a GPU there is no tensor in a kernel, only memory it "
        "loads and stores)")


def _data(x):
    return x._data if isinstance(x, Tile) else x


class Tile:
    """An immutable tile: a CPU tensor (private) with cuTile's operators and methods."""

    __slots__ = ("_data", "_tf32")

    def __init__(self, data: torch.Tensor, tf32: bool = False):
        self._data = data
        self._tf32 = tf32

    def __getattr__(self, name: str):
        raise _no_attribute("tile", name, _TILE_OFFERS)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def dtype(self):
        return _dtype_of(self._data, self._tf32)

    @property
    def ndim(self) -> int:
        return self._data.dim()

    def astype(self, dtype) -> "Tile":
        if dtype is tfloat32:
            if self._data.dtype != torch.float32:
                raise SimulatorError("astype(tfloat32) needs a float32 tile")
            return Tile(_round_tf32(self._data), tf32=True)
        return Tile(self._data.to(_torch_dtype(dtype)))

    def reshape(self, shape) -> "Tile":
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        _check_shape(shape, "reshape")
        if math.prod(shape) != self._data.numel():
            raise SimulatorError(f"reshape: a tile of shape {self.shape} ({self._data.numel()} "
                                 f"elements) cannot be reshaped to {shape} ({math.prod(shape)})")
        return Tile(self._data.reshape(shape), self._tf32)

    def permute(self, dims) -> "Tile":
        return Tile(self._data.permute(*dims), self._tf32)

    def transpose(self, dim0: int = -2, dim1: int = -1) -> "Tile":
        return Tile(self._data.transpose(dim0, dim1), self._tf32)

    def item(self) -> "Tile":
        """cuTile's tile.item(): a one-element tile as a scalar tile, reshape(())."""
        if self._data.numel() != 1:
            raise SimulatorError(f"item: a tile of shape {self.shape} has {self._data.numel()} "
                                 "elements; item() takes a tile of one element")
        return Tile(self._data.reshape(()), self._tf32)

    def __getitem__(self, index) -> "Tile":
        return Tile(self._data[index], self._tf32)

    def __repr__(self) -> str:
        return f"Tile(shape={self.shape}, dtype={self.dtype})"

    def __bool__(self):
        raise SimulatorError("a tile has no truth value: use ct.where, or reduce it first")

    def __index__(self):
        if self._data.numel() == 1:
            return int(self._data.item())
        raise SimulatorError("only a one-element tile can be used as an index")

    def __int__(self):
        return self.__index__()

    def __float__(self):
        return float(self._data.item())


class Array:
    """A kernel's array argument (a tensor of the launch): what cuTile's ct.Array offers a
    kernel and the simulator supports, with the tensor behind it private."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor: torch.Tensor):
        self._tensor = tensor

    def __getattr__(self, name: str):
        raise _no_attribute("array", name, _ARRAY_OFFERS)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._tensor.shape)

    @property
    def dtype(self):
        return _dtype_of(self._tensor)

    @property
    def ndim(self) -> int:
        return self._tensor.dim()

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(self._tensor.stride())  # in elements, as cuTile counts them

    # cuTile's words for what a GPU kernel cannot do with an array
    def __getitem__(self, index):
        raise SimulatorError("Arrays are not directly subscriptable. Use load() or gather() "
                             "instead.")

    def __setitem__(self, index, value):
        raise SimulatorError("Arrays do not support item assignment. Use store() or scatter() "
                             "instead.")

    def __repr__(self) -> str:
        return f"Array(shape={self.shape}, dtype={_dtype_name(self._tensor.dtype)})"


def tensor_of(value):
    """The torch tensor behind a simulator array or tile, anything else as it is: for the
    grader's own hooks (grader.replay.watch) and tests. A kernel's `ct` is `namespace`,
    which does not hold it, and a kernel reads no private attribute."""
    if isinstance(value, Array):
        return value._tensor
    return _data(value)


def _array(value, what: str) -> torch.Tensor:
    """The tensor behind the array argument of `what` (ct.load, ...), refused with cuTile's
    words when the kernel gave it something else (a tile, a number)."""
    if not isinstance(value, Array):
        raise SimulatorError(f"{what}: Expected an array, but given value is "
                             f"{_described(value)} (an array is a tensor argument of the kernel)")
    return value._tensor


def _broadcast_shape(a, b) -> tuple[int, ...]:
    """The shape two operands broadcast to, or cuTile's error (as its BroadcastError says)."""
    shape_a, shape_b = tuple(getattr(a, "shape", ())), tuple(getattr(b, "shape", ()))
    try:
        return tuple(torch.broadcast_shapes(shape_a, shape_b))
    except RuntimeError:
        raise SimulatorError(f"Shapes are not broadcastable: {shape_a}, {shape_b}") from None


def _operands(a, b):
    """Two operands of an elementwise operation as tensors, checked as cuTile checks them:
    broadcastable shapes, and dtypes that promote (bfloat16 and float16 do not)."""
    ta, tb = _operand(a), _operand(b)
    _broadcast_shape(ta, tb)
    if isinstance(ta, torch.Tensor) and isinstance(tb, torch.Tensor) \
            and _promoted(ta.dtype, tb.dtype) is None:
        raise SimulatorError(f"Implicit promotion of {_dtype_name(ta.dtype)} and {_dtype_name(tb.dtype)} is "
                             "not supported. Please perform an explict cast instead (.astype)")
    return ta, tb


def _operand(x):
    """A tile's tensor, or a number as it is; an array is no operand (it must be loaded)."""
    if isinstance(x, Array):
        raise SimulatorError(f"{_described(x)} was given where a tile is expected: load a "
                             "tile from it first (ct.load or ct.gather)")
    return _data(x)


def _binary(op):
    def method(self, other):
        return Tile(op(*_operands(self, other)))

    def reflected(self, other):
        return Tile(op(*_operands(other, self)))

    return method, reflected


for _name, _op in {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "truediv": torch.true_divide,
    "floordiv": torch.floor_divide, "mod": torch.remainder, "pow": torch.pow,
    "and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor,
    "lshift": torch.bitwise_left_shift, "rshift": torch.bitwise_right_shift,
}.items():
    _forward, _reverse = _binary(_op)
    setattr(Tile, f"__{_name}__", _forward)
    setattr(Tile, f"__r{_name}__", _reverse)

for _name, _op in {"lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
                   "eq": torch.eq, "ne": torch.ne}.items():
    setattr(Tile, f"__{_name}__", _binary(_op)[0])

Tile.__neg__ = lambda self: Tile(-self._data)
Tile.__invert__ = lambda self: Tile(~self._data)
Tile.__abs__ = lambda self: Tile(self._data.abs())
Tile.__hash__ = None


def _as_tensor(x) -> torch.Tensor:
    """A tile or a number as a tensor (an array is refused: it must be loaded first)."""
    x = _operand(x)
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)


def _check_shape(shape, what: str, name: str = "shape") -> None:
    """Tile dimensions are positive powers of two (cuTile's words, then why)."""
    for i, size in enumerate(shape):
        if size < 1:
            raise SimulatorError(f"{what}: Dimension #{i} of {name} {tuple(shape)} is not positive")
        if size & (size - 1):
            raise SimulatorError(f"{what}: Dimension #{i} of {name} {tuple(shape)} is not a power "
                                 "of two (tile dimensions must be powers of two)")


def _dtype_name(dtype) -> str:
    """cuTile's name of a dtype: a torch dtype the simulator computes in, or a kernel's."""
    if isinstance(dtype, torch.dtype):
        return _DTYPE_NAMES_BY_DTYPE.get(dtype, str(dtype).removeprefix("torch."))
    return getattr(dtype, "name", None) or str(dtype)


# --- the grid -----------------------------------------------------------------------------

_block: tuple[int, int, int] = (0, 0, 0)
_grid: tuple[int, int, int] = (1, 1, 1)


def bid(axis: int) -> int:
    return _block[axis]


def num_blocks(axis: int) -> int:
    return _grid[axis]


def cdiv(a, b):
    result = -(-_data(a) // _data(b))
    return Tile(result) if isinstance(result, torch.Tensor) else result  # never a bare tensor


def num_tiles(array: Array, axis: int, shape, order="C") -> int:
    tensor = _array(array, "ct.num_tiles")
    shape = tuple(int(s) for s in _entries(shape))
    view = tensor.permute(*_axis_order(order, tensor.dim(), "ct.num_tiles"))
    return cdiv(view.shape[axis], shape[axis])


# --- memory -------------------------------------------------------------------------------

_POISON_INT = {torch.int32: -0x21524111, torch.int64: -0x21524111, torch.int16: -0x2152,
               torch.int8: -0x21}


def _padding_value(mode: PaddingMode, dtype: torch.dtype):
    if mode is PaddingMode.UNDETERMINED:
        return math.nan if dtype.is_floating_point else _POISON_INT.get(dtype, 0)
    return {PaddingMode.ZERO: 0.0, PaddingMode.NEG_ZERO: -0.0, PaddingMode.NAN: math.nan,
            PaddingMode.POS_INF: math.inf, PaddingMode.NEG_INF: -math.inf}[mode]


def _coerce_mode(mode):
    """Accept this module's PaddingMode or the real cuda.tile one (same member names)."""
    if isinstance(mode, PaddingMode):
        return mode
    return PaddingMode[getattr(mode, "name", str(mode)).split(".")[-1]]


def _entries(value) -> tuple:
    """A tile index or shape as a tuple: cuTile takes a single int for a 1-D array too."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _axis_order(order, rank: int, what: str) -> tuple[int, ...]:
    """`order` as cuTile reads it: "C" (as is), "F" (reversed) or a permutation of the axes."""
    if order is None or order == "C":
        return tuple(range(rank))
    if order == "F":
        return tuple(range(rank - 1, -1, -1))
    if isinstance(order, str):
        raise SimulatorError(f"{what}: order: Expected 'C' or 'F', got '{order}'")
    axes = tuple(int(a) % rank if rank else int(a) for a in _entries(order))
    if len(axes) != rank:
        raise SimulatorError(f"{what}: order: Expected tuple of length {rank}, got {len(axes)}")
    if sorted(axes) != list(range(rank)):
        raise SimulatorError(f"{what}: order: Axis order must be a permutation, got {tuple(order)}")
    return axes


def _tile_space(view: torch.Tensor, shape) -> tuple[int, ...]:
    return tuple(-(-n // s) for n, s in zip(view.shape, shape))


def _window(array: torch.Tensor, index, shape, order, what: str):
    """The (in-bounds part of the) tile window of `array`, in the tile's own axis order.

    A tile that lies entirely outside the array is undefined in cuTile (a GPU may read or
    write anything there): here it is an error that names the tile index and the tile
    space, the usual cause being tile indices in the wrong order or a grid too large."""
    if len(index) != array.dim():
        raise SimulatorError(f"{what}: Index size {len(index)} does not match the array rank "
                             f"{array.dim()} (one tile index per dimension of the array)")
    if len(shape) != array.dim():
        raise SimulatorError(f"{what}: Expected shape length to be {array.dim()}, got {len(shape)}")
    view = array.permute(*_axis_order(order, array.dim(), what))
    starts = [i * s for i, s in zip(index, shape)]
    if any(st >= n or st + s <= 0 for st, s, n in zip(starts, shape, view.shape)):
        space = " x ".join(map(str, _tile_space(view, shape)))
        raise SimulatorError(
            f"{what}: tile index {tuple(index)} is outside the tile space of the array: an array "
            f"of shape {tuple(view.shape)} in tiles of shape {tuple(shape)} has {space} tiles, "
            "numbered from 0 along each dimension. A tile entirely outside the array is "
            "undefined in cuTile (padding_mode only fills the part of an edge tile past the "
            "edge): check which tile each block owns, and the order of the tile index's entries")
    slices = tuple(slice(builtins.max(st, 0), builtins.min(st + s, n))
                   for st, s, n in zip(starts, shape, view.shape))
    return view, starts, slices


def _tile_index(index) -> tuple[int, ...]:
    return tuple(int(_data(i)) for i in _entries(index))


def load(array: Array, index, shape, padding_mode=PaddingMode.UNDETERMINED, order="C",
         check_bounds=True, latency=None, allow_tma=None, memory_order=None,
         memory_scope=None) -> Tile:
    array = _array(array, "ct.load")
    shape = tuple(int(s) for s in _entries(shape))
    index = _tile_index(index)
    _check_shape(shape, "ct.load")
    view, starts, slices = _window(array, index, shape, order, "ct.load")
    # Without check_bounds, elements past the edge are undefined whatever the padding_mode.
    mode = _coerce_mode(padding_mode) if check_bounds else PaddingMode.UNDETERMINED
    tile = torch.full(shape, _padding_value(mode, array.dtype), dtype=array.dtype)
    target = tuple(slice(sl.start - st, sl.stop - st) for sl, st in zip(slices, starts))
    tile[target] = view[slices]
    return Tile(tile)


def store(array: Array, index, tile, order="C", check_bounds=True, latency=None,
          allow_tma=None, memory_order=None, memory_scope=None) -> None:
    array = _array(array, "ct.store")
    if not isinstance(tile, Tile):
        raise SimulatorError("ct.store needs a tile (tile=...)")
    # cuTile converts a tile implicitly only to a dtype it promotes to (bfloat16 into a
    # float32 array, not float32 into a bfloat16 one).
    if _promoted(tile._data.dtype, array.dtype) != array.dtype:
        raise SimulatorError(
            f"ct.store: Stored tile is incompatible with array's dtype: cannot implicitly cast "
            f"{_dtype_name(tile._data.dtype)} to {_dtype_name(array.dtype)}; convert it with "
            ".astype(...) first")
    shape = tile.shape
    index = _tile_index(index)
    view, starts, slices = _window(array, index, shape, order, "ct.store")
    source = tuple(slice(sl.start - st, sl.stop - st) for sl, st in zip(slices, starts))
    view[slices] = tile._data[source].to(array.dtype)  # out-of-bounds parts are dropped


def _indices(array: torch.Tensor, indices, what: str) -> list[torch.Tensor]:
    """One index tensor per dimension of `array`, broadcast to their common shape."""
    indices = indices if isinstance(indices, tuple) else (indices,)
    if len(indices) != array.dim():
        raise SimulatorError(f"{what}: the array has {array.dim()} dimensions, so the indices "
                             f"must be a tuple of {array.dim()} (got {len(indices)})")
    return list(torch.broadcast_tensors(*(_as_tensor(i).long() for i in indices)))


def _in_bounds(array: torch.Tensor, idx: list[torch.Tensor]) -> torch.Tensor:
    inside = torch.ones(idx[0].shape, dtype=torch.bool)
    for size, i in zip(array.shape, idx):
        inside &= (i >= 0) & (i < size)
    return inside


def gather(array: Array, indices, mask=None, padding_value=0, check_bounds=True,
           latency=None) -> Tile:
    """array[indices] where the indices (a tuple, one per dimension) are in bounds and the
    mask is set, else padding_value; without check_bounds an index out of bounds is
    undefined, and reads as poison here."""
    array = _array(array, "ct.gather")
    idx = _indices(array, indices, "ct.gather")
    inside = _in_bounds(array, idx)
    wanted = torch.ones_like(inside) if mask is None else \
        torch.broadcast_to(_as_tensor(mask).bool(), inside.shape)
    out = torch.broadcast_to(_as_tensor(padding_value).to(array.dtype), inside.shape).clone()
    if not check_bounds:
        out[wanted & ~inside] = _padding_value(PaddingMode.UNDETERMINED, array.dtype)
    take = wanted & inside
    out[take] = array[tuple(i[take] for i in idx)]
    return Tile(out)


def scatter(array: Array, indices, value, mask=None, check_bounds=True,
            latency=None) -> None:
    """array[indices] = value where the indices are in bounds and the mask is set (an index
    out of bounds without check_bounds is undefined: dropped here)."""
    array = _array(array, "ct.scatter")
    idx = _indices(array, indices, "ct.scatter")
    take = _in_bounds(array, idx)
    if mask is not None:
        take &= torch.broadcast_to(_as_tensor(mask).bool(), take.shape)
    values = torch.broadcast_to(_as_tensor(value).to(array.dtype), take.shape)
    array[tuple(i[take] for i in idx)] = values[take]


# --- construction ---------------------------------------------------------------------------


def full(shape, fill_value, dtype) -> Tile:
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    _check_shape(shape, "ct.full")
    return Tile(torch.full(shape, _data(fill_value), dtype=_torch_dtype(dtype)))


def zeros(shape, dtype) -> Tile:
    return full(shape, 0, dtype)


def ones(shape, dtype) -> Tile:
    return full(shape, 1, dtype)


def arange(size: int, dtype=int32) -> Tile:
    _check_shape((size,), "ct.arange")
    return Tile(torch.arange(size, dtype=_torch_dtype(dtype)))


def astype(x, dtype) -> Tile:
    return Tile(_as_tensor(x)).astype(dtype)


def reshape(x, shape) -> Tile:
    return Tile(_as_tensor(x)).reshape(shape)


def permute(x, dims) -> Tile:
    return Tile(_as_tensor(x)).permute(dims)


def transpose(x, dim0: int = -2, dim1: int = -1) -> Tile:
    return Tile(_as_tensor(x)).transpose(dim0, dim1)


def expand_dims(x, axis: int) -> Tile:
    return Tile(_as_tensor(x).unsqueeze(axis))


def broadcast_to(x, shape) -> Tile:
    return Tile(torch.broadcast_to(_as_tensor(x), tuple(shape)))


# --- arithmetic -----------------------------------------------------------------------------


def _unary(op):
    def apply(x, rounding_mode=None, flush_to_zero=None):
        value = _as_tensor(x)
        result = op(value if value.is_floating_point() else value.float())
        return Tile(result) if isinstance(x, Tile) or result.dim() else result.item()

    return apply


exp = _unary(torch.exp)
exp2 = _unary(torch.exp2)
log = _unary(torch.log)
log2 = _unary(torch.log2)
sqrt = _unary(torch.sqrt)
rsqrt = _unary(torch.rsqrt)
tanh = _unary(torch.tanh)
sin = _unary(torch.sin)
cos = _unary(torch.cos)
floor = _unary(torch.floor)
ceil = _unary(torch.ceil)


def abs(x):  # noqa: A001 - cuTile's name
    return Tile(_as_tensor(x).abs()) if isinstance(x, Tile) else builtins.abs(x)


def _pairwise(op, python_op):
    def apply(a, b):
        if not isinstance(a, Tile) and not isinstance(b, Tile):
            return python_op(a, b)  # plain numbers stay numbers, as in cuTile's host-side math
        return Tile(op(_as_tensor(a), _as_tensor(b)))

    return apply


maximum = _pairwise(torch.maximum, builtins.max)
minimum = _pairwise(torch.minimum, builtins.min)


def truediv(x, y, rounding_mode=None, flush_to_zero=False):
    """x / y; the GPU's approximate rounding is within the course's tolerances, so exact here."""
    return x / y


def where(condition, x, y) -> Tile:
    cond = _as_tensor(condition).bool()
    xs, ys = _as_tensor(x), _as_tensor(y)
    dtype = xs.dtype if isinstance(x, Tile) else ys.dtype if isinstance(y, Tile) else torch.float32
    return Tile(torch.where(cond, xs.to(dtype), ys.to(dtype)))


def isnan(x) -> Tile:
    return Tile(torch.isnan(_as_tensor(x)))


def _reduce(op):
    def apply(x, axis=None, keepdims: bool = False):
        value = _as_tensor(x)
        if axis is None:
            result = op(value.reshape(-1), 0)
            return Tile(result.reshape((1,) * value.dim()) if keepdims else result)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        result = value
        for a in sorted((_axis(a, value.dim()) for a in axes), reverse=True):
            result = op(result, a, keepdim=keepdims)
        return Tile(result)

    return apply


def _axis(axis: int, rank: int) -> int:
    """A reduction axis, counted from the end when negative, as cuTile normalizes it."""
    if not -rank <= axis < rank:
        raise SimulatorError(f"Axis {axis} is out of range for rank {rank}: the tile has "
                             f"{rank} dimension{'s' if rank != 1 else ''}")
    return axis % rank


def _sum(t, dim, keepdim=False):
    # 16-bit float tiles accumulate in fp32, as on the GPU, and keep their dtype.
    wide = t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
    return torch.sum(wide, dim, keepdim=keepdim).to(t.dtype)


sum = _reduce(_sum)  # noqa: A001 - cuTile's name
max = _reduce(lambda t, dim, keepdim=False: torch.amax(t, dim, keepdim=keepdim))  # noqa: A001
min = _reduce(lambda t, dim, keepdim=False: torch.amin(t, dim, keepdim=keepdim))  # noqa: A001


# The accumulators ct.mma takes for each dtype of its inputs, by cuTile's names.
_MMA_ACCUMULATORS = {"float16": ("float16", "float32"), "bfloat16": ("float32",),
                     "tfloat32": ("float32",), "float32": ("float32",)}


def mma(a, b, acc) -> Tile:
    """acc + a @ b with cuTile's dtype rules: no input conversion, fp32 math."""
    for name, t in (("a", a), ("b", b), ("acc", acc)):
        if not isinstance(t, Tile):
            raise SimulatorError(f"ct.mma: {name} must be a tile")
    a_dtype, b_dtype = _dtype_name(a.dtype), _dtype_name(b.dtype)
    if a_dtype != b_dtype:
        raise SimulatorError(f"ct.mma: a is {a_dtype} and b is {b_dtype}; convert them to one "
                             "dtype first (ct.mma never converts its inputs)")
    accepted = _MMA_ACCUMULATORS.get(a_dtype)
    acc_dtype = _dtype_name(acc._data.dtype)
    if accepted is None or acc_dtype not in accepted:
        raise SimulatorError(f"ct.mma: {a_dtype} inputs need an accumulator of "
                             f"{' or '.join(accepted or ())}, not {acc_dtype}")
    shape = _matmul_shape(a.shape, b.shape)
    if acc.shape != shape:
        raise SimulatorError(f"ct.mma: Expect acc shape to be {shape}, got {acc.shape}")
    product = torch.matmul(a._data.float(), b._data.float())
    return Tile((acc._data.float() + product).to(acc._data.dtype))


def _matmul_shape(a: tuple, b: tuple) -> tuple[int, ...]:
    """The shape of a @ b for 2-D (or batched) tiles, or cuTile's error."""
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise SimulatorError(f"Incompatible shapes for matrix mul on tiles: {a}, {b}. The inner "
                             "dimensions must agree: (M, K) @ (K, N)")
    try:
        batch = tuple(torch.broadcast_shapes(a[:-2], b[:-2]))
    except RuntimeError:
        raise SimulatorError(f"Incompatible shapes for matrix mul on tiles: {a}, {b}.") from None
    return batch + (a[-2], b[-1])


def matmul(a, b) -> Tile:
    _matmul_shape(a.shape, b.shape)
    # tf32 tiles hold float32 data: their product is float32 too
    return Tile(torch.matmul(a._data.float(), b._data.float()).to(a._data.dtype))


# --- kernels and launches -------------------------------------------------------------------


# The cuda.tile names a simulated kernel can use.
_API = (
    "float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 bool_ tfloat32 "
    "PaddingMode RoundingMode Constant Tile bid num_blocks cdiv num_tiles load store gather "
    "scatter full zeros ones arange astype reshape permute transpose expand_dims broadcast_to "
    "exp exp2 log log2 sqrt rsqrt tanh sin cos floor ceil abs maximum minimum truediv where "
    "isnan sum max min mma matmul"
).split()


class _Namespace(types.ModuleType):
    """What `ct` means inside a simulated kernel; unknown names fail loudly."""

    def __getattr__(self, name: str):
        raise SimulatorUnsupported(
            f"ct.{name} is not supported by the cuTile simulator; run this kernel on a GPU "
            "(--backend cutile) or write it with the operations listed in grader/cutile_sim.py")


# Arguments a Triton habit puts into a cuTile call: cuTile has none of them.
_TRITON_HABITS = {"mask": "cuTile has no masks: a load pads the part of a tile past the "
                          "array's edge as padding_mode says, and a store drops it",
                  "other": "cuTile's loads say what the part of a tile past the edge reads as "
                           "with padding_mode (ct.PaddingMode.ZERO, NEG_INF, ...)"}


def _described(value) -> str:
    if isinstance(value, Tile):
        return f"a tile of shape {value.shape} and dtype {_dtype_name(value._data.dtype)}"
    if isinstance(value, (Array, torch.Tensor)):
        tensor = tensor_of(value)
        return f"an array of shape {tuple(tensor.shape)} and dtype {_dtype_name(tensor.dtype)}"
    return repr(value)


def _in_cutile_words(name: str, function):
    """`function` with PyTorch's errors told as a mistake in the kernel's use of `name`.

    The simulator computes with torch, so a kernel's mistake (an axis a tile does not have,
    an index past a tile's end) would surface as PyTorch's message about the simulator's
    tensors; the student reads which operation, on which tiles, was not possible."""
    def checked(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except TypeError as exc:
            unexpected = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
            if unexpected is None:
                raise
            word = unexpected.group(1)
            why = _TRITON_HABITS.get(word, "check the name against the cuda.tile documentation")
            raise SimulatorError(f"{name} has no argument `{word}`: {why}") from None
        except (RuntimeError, IndexError) as exc:  # PyTorch's, never the simulator's own
            if isinstance(exc, SimulatorError):
                raise
            given = ", ".join([*map(_described, args),
                               *(f"{k}={_described(v)}" for k, v in kwargs.items())])
            raise SimulatorError(f"{name} cannot be applied to {given}: check the tile shapes, "
                                 "axes and indices it is given") from None

    checked.__name__ = checked.__qualname__ = getattr(function, "__name__", name)
    checked.__doc__ = function.__doc__
    return checked


for _method in ("astype", "reshape", "permute", "transpose", "item", "__getitem__"):
    setattr(Tile, _method, _in_cutile_words(f"tile.{_method.strip('_')}", getattr(Tile, _method)))

namespace = _Namespace("cuda.tile (simulated)")
for _name in _API:
    _value = globals()[_name]
    if isinstance(_value, types.FunctionType):
        _value = _in_cutile_words(f"ct.{_name}", _value)
    setattr(namespace, _name, _value)


def _kernel_function(kernel):
    function = getattr(getattr(kernel, "_annotated_function", None), "pyfunc", None)
    if function is None:
        function = getattr(kernel, "__wrapped__", kernel)
    if not isinstance(function, types.FunctionType):
        raise SimulatorError(f"{kernel!r} is not a @ct.kernel function")
    return function


def _elementwise(builtin, pairwise):
    """Python's max or min in a kernel: elementwise on tiles, as in cuTile."""
    def choose(*values, **options):
        if len(values) > 1 and any(isinstance(v, Tile) for v in values):
            out = values[0]
            for v in values[1:]:
                out = pairwise(out, v)
            return out
        return builtin(*values, **options)

    return choose


def _is_torch(module_name: str) -> bool:
    return module_name == "torch" or module_name.startswith("torch.")


# Operations a student reaches for in PyTorch that cuTile writes as Python operators.
_OPERATORS = {"add": "+", "sub": "-", "subtract": "-", "mul": "*", "multiply": "*",
              "div": "/", "divide": "/", "true_divide": "/", "neg": "unary -"}


class _TorchInKernel(types.ModuleType):
    """What a name bound to torch (or torch.nn.functional, ...) means inside a simulated
    kernel. A GPU kernel cannot call PyTorch: cuTile rejects it when it compiles, but on the
    simulator the call would reach real PyTorch and fail with a puzzling TypeError about
    Tiles. Calling one says so; dtypes, classes and other values pass through."""

    def __init__(self, module: types.ModuleType, name: str):
        super().__init__(module.__name__)
        self._module, self._name = module, name

    def __getattr__(self, attribute: str):
        value = getattr(self._module, attribute)
        if isinstance(value, types.ModuleType) and _is_torch(value.__name__):
            return _TorchInKernel(value, f"{self._name}.{attribute}")
        if not callable(value) or isinstance(value, (type, torch.dtype)):
            return value  # torch.float32, torch.Tensor in an isinstance: no PyTorch runs
        return _refuse(f"{self._name}.{attribute}", attribute)


def _refuse(called: str, attribute: str):
    def call(*args, **kwargs):
        raise SimulatorError(f"{called} was called inside a @ct.kernel: PyTorch does not run "
                             f"inside a kernel; {_instead(attribute)}")

    return call


def _instead(attribute: str) -> str:
    """The cuTile way to write a PyTorch operation, where there is an obvious one."""
    if attribute in _API and attribute[0].islower():
        return f"use ct.{attribute} on tiles"
    if attribute in _OPERATORS:
        return f"use the operator {_OPERATORS[attribute]} on tiles"
    return "use ct.* operations on tiles (ct.load, ct.store, ct.exp, ct.sum, ...)"


def _rebind(function: types.FunctionType) -> types.FunctionType:
    """The kernel's function, with every global that is the cuda.tile module replaced (and
    every PyTorch module guarded: a kernel cannot call PyTorch).

    Helper functions of the kernel's module (tile code a kernel calls) are rebound into
    the same scope, so that their `ct.` calls are simulated too."""
    module_globals = function.__globals__
    scope = {"max": _elementwise(builtins.max, maximum), "min": _elementwise(builtins.min, minimum),
             **module_globals}
    for name, value in module_globals.items():
        if isinstance(value, types.ModuleType) and value.__name__ == "cuda.tile":
            scope[name] = namespace
        elif isinstance(value, types.ModuleType) and _is_torch(value.__name__):
            scope[name] = _TorchInKernel(value, name)
        elif isinstance(value, types.FunctionType) and value.__globals__ is module_globals:
            scope[name] = _clone(value, scope)
    return _clone(function, scope)


def _clone(function: types.FunctionType, scope: dict) -> types.FunctionType:
    return types.FunctionType(function.__code__, scope, function.__name__,
                              function.__defaults__, function.__closure__)


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
    """Run `kernel` over `grid` on the CPU, one block after another, after the argument
    checks of cuTile's own launch."""
    global _block, _grid
    # In cuTile's order: the stream, the grid, the kernel, its arguments.
    if stream is None:
        raise TypeError("Stream is required, got None")
    grid = _launch_grid(grid)
    _check_launch(kernel, kernel_args)
    body = _rebind(_kernel_function(kernel))
    args = tuple(_kernel_argument(a) for a in kernel_args)
    saved = _block, _grid
    _grid = grid
    # The simulator's own torch operations are the "GPU" here: the grader's watch for
    # PyTorch doing a stage's work (a dispatch mode) must not see them.
    from torch.utils._python_dispatch import _disable_current_modes

    try:
        with _disable_current_modes():
            for z, y, x in itertools.product(range(grid[2]), range(grid[1]), range(grid[0])):
                _block = (x, y, z)
                body(*args)
    finally:
        _block, _grid = saved


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
