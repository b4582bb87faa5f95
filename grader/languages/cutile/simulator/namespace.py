"""What `ct` is inside a simulated kernel: `namespace`, the cuda.tile API the simulator
implements (`API`), every function of it telling PyTorch's errors in cuTile's words, and any
other name refused as unsupported."""

from __future__ import annotations

import re
import types

from grader.languages.cutile.simulator import (arithmetic, blocks, construction, dtypes, memory,
                                               values)
from grader.languages.cutile.simulator.errors import SimulatorError, SimulatorUnsupported
from grader.languages.cutile.simulator.values import Tile, described

# The cuda.tile names a simulated kernel can use.
API = (
    "float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 bool_ tfloat32 "
    "PaddingMode RoundingMode Constant Tile bid num_blocks cdiv num_tiles load store gather "
    "scatter full zeros ones arange astype reshape permute transpose expand_dims broadcast_to "
    "exp exp2 log log2 sqrt rsqrt tanh sin cos floor ceil abs maximum minimum truediv where "
    "isnan sum max min mma matmul"
).split()
# The modules that define them.
_DEFINED_IN = (dtypes, values, blocks, memory, construction, arithmetic)


class _Namespace(types.ModuleType):
    """What `ct` means inside a simulated kernel; unknown names fail loudly."""

    def __getattr__(self, name: str):
        raise SimulatorUnsupported(
            f"ct.{name} is not supported by the cuTile simulator; run this kernel on a GPU "
            "(--backend cutile) or write it with the operations listed in "
            "grader/languages/cutile/simulator/namespace.py")


# Arguments a Triton habit puts into a cuTile call: cuTile has none of them.
_TRITON_HABITS = {"mask": "cuTile has no masks: a load pads the part of a tile past the "
                          "array's edge as padding_mode says, and a store drops it",
                  "other": "cuTile's loads say what the part of a tile past the edge reads as "
                           "with padding_mode (ct.PaddingMode.ZERO, NEG_INF, ...)"}


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
            given = ", ".join([*map(described, args),
                               *(f"{k}={described(v)}" for k, v in kwargs.items())])
            raise SimulatorError(f"{name} cannot be applied to {given}: check the tile shapes, "
                                 "axes and indices it is given") from None

    checked.__name__ = checked.__qualname__ = getattr(function, "__name__", name)
    checked.__doc__ = function.__doc__
    checked.__wrapped__ = function  # its signature, for whoever reads the call's arguments
    return checked


for _method in ("astype", "reshape", "permute", "transpose", "item", "__getitem__"):
    setattr(Tile, _method, _in_cutile_words(f"tile.{_method.strip('_')}", getattr(Tile, _method)))

namespace = _Namespace("cuda.tile (simulated)")
for _name in API:
    _value = next(getattr(m, _name) for m in _DEFINED_IN if hasattr(m, _name))
    if isinstance(_value, types.FunctionType):
        _value = _in_cutile_words(f"ct.{_name}", _value)
    setattr(namespace, _name, _value)
