"""Poisoned allocations: how the grader sees output elements that a kernel never wrote.

While a submission runs, every fresh floating-point allocation (`torch.empty`,
`torch.empty_like`, ...) is filled with a NaN whose bit pattern arithmetic never produces.
After the call, an output element that still holds that exact pattern was never stored to:
a grid that is too small, a mask that is too strict, a tile the kernel skipped.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

# NaNs with a payload (quiet bit clear) that no float operation returns.
_PATTERNS: dict[torch.dtype, tuple[torch.dtype, int]] = {
    torch.float32: (torch.int32, 0x7FBADBAD),
    torch.float16: (torch.int16, 0x7DAD),
    torch.bfloat16: (torch.int16, 0x7FAD),
    torch.float64: (torch.int64, 0x7FF4BADBADBADBAD),
}

_FRESH = {torch.empty, torch.empty_like, torch.empty_strided, torch.Tensor.new_empty}


def poison_(tensor: torch.Tensor) -> torch.Tensor:
    pattern = _PATTERNS.get(tensor.dtype)
    if pattern is not None:
        int_dtype, bits = pattern
        tensor.view(int_dtype).fill_(bits)
    return tensor


def never_written(tensor: torch.Tensor) -> torch.Tensor | None:
    """Mask of elements still holding the poison, or None for dtypes that are not poisoned."""
    pattern = _PATTERNS.get(tensor.dtype)
    if pattern is None:
        return None
    int_dtype, bits = pattern
    return tensor.view(int_dtype) == bits


class PoisonFreshAllocations(TorchFunctionMode):
    """Within this mode, uninitialised float tensors start out as poison."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func in _FRESH and isinstance(result, torch.Tensor):
            poison_(result)
        return result
