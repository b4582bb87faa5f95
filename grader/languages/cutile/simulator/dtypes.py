"""The dtypes and enums a kernel reads (cuda.tile's own where it is installed, stand-ins
otherwise), the torch dtypes the simulator computes in, cuTile's promotion and dtype names."""

from __future__ import annotations

import enum

import torch

from grader.languages.cutile.simulator.errors import SimulatorUnsupported

try:  # the course's cuTile extra; the simulator also runs without it (its own stand-ins)
    import cuda.tile as _cuda_tile
except ImportError:
    _cuda_tile = None

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


def torch_dtype(dtype) -> torch.dtype:
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


def dtype_of(data: torch.Tensor, tf32: bool = False):
    """The dtype a kernel reads for what the simulator holds in `data` (cuda.tile's)."""
    if tf32:
        return tfloat32
    name = _DTYPE_NAMES_BY_DTYPE.get(data.dtype)
    if name is None:
        raise SimulatorUnsupported(f"the cuTile simulator does not support dtype {data.dtype}")
    return _kernel_dtype(name)


_UNKNOWN = object()  # cuda.tile is not installed: its promotion table cannot be asked


def promoted(a: torch.dtype, b: torch.dtype):
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


def round_tf32(t: torch.Tensor) -> torch.Tensor:
    """Round fp32 to the nearest value with a 10-bit mantissa."""
    bits = t.contiguous().view(torch.int32)
    rounded = (bits + 0x1000) & ~0x1FFF
    return rounded.view(torch.float32)


def dtype_name(dtype) -> str:
    """cuTile's name of a dtype: a torch dtype the simulator computes in, or a kernel's."""
    if isinstance(dtype, torch.dtype):
        return _DTYPE_NAMES_BY_DTYPE.get(dtype, str(dtype).removeprefix("torch."))
    return getattr(dtype, "name", None) or str(dtype)
