"""The values a kernel body holds: tiles (`Tile`, with cuTile's operators and methods) and
arrays (`Array`, a tensor argument of the launch), the torch tensor behind each private; the
operands of elementwise operations, checked as cuTile checks them."""

from __future__ import annotations

import math

import torch

from grader.languages.cutile.simulator.dtypes import (dtype_name, dtype_of, promoted, round_tf32,
                                                      tfloat32, torch_dtype)
from grader.languages.cutile.simulator.errors import SimulatorAttributeError, SimulatorError

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


def data(x):
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
        return dtype_of(self._data, self._tf32)

    @property
    def ndim(self) -> int:
        return self._data.dim()

    def astype(self, dtype) -> "Tile":
        if dtype is tfloat32:
            if self._data.dtype != torch.float32:
                raise SimulatorError("astype(tfloat32) needs a float32 tile")
            return Tile(round_tf32(self._data), tf32=True)
        return Tile(self._data.to(torch_dtype(dtype)))

    def reshape(self, shape) -> "Tile":
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        check_shape(shape, "reshape")
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
        return dtype_of(self._tensor)

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
        return f"Array(shape={self.shape}, dtype={dtype_name(self._tensor.dtype)})"


def tensor_of(value):
    """The torch tensor behind a simulator array or tile, anything else as it is: for the
    grader's own hooks (grader.replay.watch) and tests. A kernel's `ct` is `namespace`,
    which does not hold it, and a kernel reads no private attribute."""
    if isinstance(value, Array):
        return value._tensor
    return data(value)


def array_tensor(value, what: str) -> torch.Tensor:
    """The tensor behind the array argument of `what` (ct.load, ...), refused with cuTile's
    words when the kernel gave it something else (a tile, a number)."""
    if not isinstance(value, Array):
        raise SimulatorError(f"{what}: Expected an array, but given value is "
                             f"{described(value)} (an array is a tensor argument of the kernel)")
    return value._tensor


def described(value) -> str:
    if isinstance(value, Tile):
        return f"a tile of shape {value.shape} and dtype {dtype_name(value._data.dtype)}"
    if isinstance(value, (Array, torch.Tensor)):
        tensor = tensor_of(value)
        return f"an array of shape {tuple(tensor.shape)} and dtype {dtype_name(tensor.dtype)}"
    return repr(value)


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
            and promoted(ta.dtype, tb.dtype) is None:
        raise SimulatorError(f"Implicit promotion of {dtype_name(ta.dtype)} and {dtype_name(tb.dtype)} is "
                             "not supported. Please perform an explict cast instead (.astype)")
    return ta, tb


def _operand(x):
    """A tile's tensor, or a number as it is; an array is no operand (it must be loaded)."""
    if isinstance(x, Array):
        raise SimulatorError(f"{described(x)} was given where a tile is expected: load a "
                             "tile from it first (ct.load or ct.gather)")
    return data(x)


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


def as_tensor(x) -> torch.Tensor:
    """A tile or a number as a tensor (an array is refused: it must be loaded first)."""
    x = _operand(x)
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)


def check_shape(shape, what: str, name: str = "shape") -> None:
    """Tile dimensions are positive powers of two (cuTile's words, then why)."""
    for i, size in enumerate(shape):
        if size < 1:
            raise SimulatorError(f"{what}: Dimension #{i} of {name} {tuple(shape)} is not positive")
        if size & (size - 1):
            raise SimulatorError(f"{what}: Dimension #{i} of {name} {tuple(shape)} is not a power "
                                 "of two (tile dimensions must be powers of two)")
