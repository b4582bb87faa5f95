"""Arithmetic on tiles: elementwise math, `ct.where`, reductions (fp32 accumulation for 16-bit
floats), and `ct.mma` and `ct.matmul` with cuTile's dtype rules."""

from __future__ import annotations

import builtins

import torch

from grader.languages.cutile.simulator.dtypes import dtype_name
from grader.languages.cutile.simulator.errors import SimulatorError
from grader.languages.cutile.simulator.values import Tile, as_tensor
from grader.problems.matmul import mma_accumulated


def _unary(op):
    def apply(x, rounding_mode=None, flush_to_zero=None):
        value = as_tensor(x)
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
    return Tile(as_tensor(x).abs()) if isinstance(x, Tile) else builtins.abs(x)


def _pairwise(op, python_op):
    def apply(a, b):
        if not isinstance(a, Tile) and not isinstance(b, Tile):
            return python_op(a, b)  # plain numbers stay numbers, as in cuTile's host-side math
        return Tile(op(as_tensor(a), as_tensor(b)))

    return apply


maximum = _pairwise(torch.maximum, builtins.max)
minimum = _pairwise(torch.minimum, builtins.min)


def truediv(x, y, rounding_mode=None, flush_to_zero=False):
    """x / y; the GPU's approximate rounding is within the course's tolerances, so exact here."""
    return x / y


def where(condition, x, y) -> Tile:
    cond = as_tensor(condition).bool()
    xs, ys = as_tensor(x), as_tensor(y)
    dtype = xs.dtype if isinstance(x, Tile) else ys.dtype if isinstance(y, Tile) else torch.float32
    return Tile(torch.where(cond, xs.to(dtype), ys.to(dtype)))


def isnan(x) -> Tile:
    return Tile(torch.isnan(as_tensor(x)))


def _reduce(op):
    def apply(x, axis=None, keepdims: bool = False):
        value = as_tensor(x)
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
    """acc + a @ b with cuTile's dtype rules: no input conversion, fp32 math, a float16
    accumulator rounded every MMA_K of K as a GPU's instructions round it."""
    for name, t in (("a", a), ("b", b), ("acc", acc)):
        if not isinstance(t, Tile):
            raise SimulatorError(f"ct.mma: {name} must be a tile")
    a_dtype, b_dtype = dtype_name(a.dtype), dtype_name(b.dtype)
    if a_dtype != b_dtype:
        raise SimulatorError(f"ct.mma: a is {a_dtype} and b is {b_dtype}; convert them to one "
                             "dtype first (ct.mma never converts its inputs)")
    accepted = _MMA_ACCUMULATORS.get(a_dtype)
    acc_dtype = dtype_name(acc._data.dtype)
    if accepted is None or acc_dtype not in accepted:
        raise SimulatorError(f"ct.mma: {a_dtype} inputs need an accumulator of "
                             f"{' or '.join(accepted or ())}, not {acc_dtype}")
    shape = _matmul_shape(a.shape, b.shape)
    if acc.shape != shape:
        raise SimulatorError(f"ct.mma: Expect acc shape to be {shape}, got {acc.shape}")
    return Tile(mma_accumulated(a._data, b._data, acc._data))


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
    """a @ b in the inputs' dtype, accumulated as cuTile's ct.matmul accumulates it: in
    float16 for float16 inputs (rounded every MMA_K), in float32 otherwise (tf32 tiles hold
    float32 data: their product is float32 too)."""
    shape = _matmul_shape(a.shape, b.shape)
    dtype = a._data.dtype
    acc = torch.zeros(shape, dtype=torch.float16 if dtype == torch.float16 else torch.float32)
    return Tile(mma_accumulated(a._data, b._data, acc).to(dtype))
