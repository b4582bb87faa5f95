"""Poisoned memory: how the grader sees elements a kernel never wrote, or wrote out of bounds.

While a submission runs, every fresh floating-point allocation (`torch.empty`,
`torch.empty_like`, ...) is filled with a NaN whose bit pattern arithmetic never produces
(grader.sandbox.host does it, as it watches the host code).
After the call, an output element that still holds that exact pattern was never stored to:
a grid that is too small, a mask that is too strict, a tile the kernel skipped.

Inputs and contiguous fresh allocations also get a poisoned guard region after their last
element. A kernel with a missing mask reads poison there instead of foreign memory (which
can crash Triton's interpreter) and any store past the end lands in the guard, where the
grader finds it. An input keeps its layout (strides, storage offset): a transposed or sliced
input reaches the kernel as such, with the rest of the storage it spans (a sliced view's
other columns) copied too.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode

# NaNs with a payload (quiet bit clear) that no float operation returns.
PATTERNS: dict[torch.dtype, tuple[torch.dtype, int]] = {
    torch.float32: (torch.int32, 0x7FBADBAD),
    torch.float16: (torch.int16, 0x7DAD),
    torch.bfloat16: (torch.int16, 0x7FAD),
    torch.float64: (torch.int64, 0x7FF4BADBADBADBAD),
}

FRESH = {torch.empty, torch.empty_like, torch.empty_strided, torch.Tensor.new_empty}

# Guard elements after a tensor: enough for the overhang of one tile in any stage's kernel.
GUARD_MIN = 1 << 14


def poison_(tensor: torch.Tensor) -> torch.Tensor:
    pattern = PATTERNS.get(tensor.dtype)
    if pattern is not None:
        int_dtype, bits = pattern
        tensor.view(int_dtype).fill_(bits)
    return tensor


def never_written(tensor: torch.Tensor) -> torch.Tensor | None:
    """Mask of elements still holding the poison, or None for dtypes that are not poisoned."""
    pattern = PATTERNS.get(tensor.dtype)
    if pattern is None:
        return None
    int_dtype, bits = pattern
    return tensor.view(int_dtype) == bits


# The bit an operation sets when it turns a signalling NaN (the poison) into a quiet one.
_QUIET = {torch.float32: 0x00400000, torch.float16: 0x0200, torch.bfloat16: 0x0040,
          torch.float64: 0x0008000000000000}


def computed_from_poison(tensor: torch.Tensor) -> torch.Tensor | None:
    """Mask of elements that hold the poison as arithmetic leaves it (quieted, either sign):
    a value computed from a poisoned element, such as a load past the end of an input. CPUs
    keep a NaN's payload through arithmetic; GPUs do not, so there it finds nothing."""
    pattern = PATTERNS.get(tensor.dtype)
    if pattern is None:
        return None
    int_dtype, bits = pattern
    magnitude = (1 << (8 * tensor.element_size() - 1)) - 1
    return (tensor.view(int_dtype) & magnitude) == (bits | _QUIET[tensor.dtype])


@dataclass
class Guarded:
    """A tensor that is the front of a larger poisoned buffer."""

    name: str
    tensor: torch.Tensor
    buffer: torch.Tensor

    def overrun(self) -> int:
        """How many guard elements past the tensor's end were written."""
        return int((~never_written(self.buffer[storage_span(self.tensor):])).sum())

    def describe(self) -> str:
        n = self.overrun()
        return (f"{n} of the elements just past the end of {self.name} "
                f"({_dtype(self.tensor)}, {self.tensor.numel()} elements) were written")


def storage_span(tensor: torch.Tensor) -> int:
    """How many elements of its storage `tensor` reaches over, from the storage's first
    element to its own last one (its numel when it is contiguous and starts the storage)."""
    if tensor.numel() == 0:
        return tensor.storage_offset()
    return tensor.storage_offset() + 1 + sum((size - 1) * stride
                                             for size, stride in zip(tensor.shape, tensor.stride()))


def guarded_copy(tensor: torch.Tensor, name: str, device=None) -> Guarded:
    """A copy of `tensor` on `device` (default: its own) with the same shape, strides and
    storage offset: a copy of the storage it spans (a sliced view's other columns too, as in
    the program it came from) followed by a poisoned guard region. A kernel that ignores the
    strides then reads the wrong elements, as it would on the view itself."""
    span = storage_span(tensor)
    device = tensor.device if device is None else device
    buffer = poison_(torch.empty(span + max(span, GUARD_MIN), dtype=tensor.dtype, device=device))
    buffer[:span].copy_(tensor.as_strided((span,), (1,), 0))  # the storage, from its start
    view = buffer.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())
    return Guarded(name, view, buffer)


def guarded_empty(shape, dtype, device, name) -> Guarded:
    numel = torch.Size(shape).numel()
    buffer = poison_(torch.empty(numel + max(numel, GUARD_MIN), dtype=dtype, device=device))
    return Guarded(name, buffer[:numel].view(shape), buffer)


def fresh(result: torch.Tensor, how: str) -> tuple[torch.Tensor, Guarded | None]:
    """What a fresh allocation becomes: poison, followed by a guard region where it can be."""
    if result.dtype not in PATTERNS or not result.is_contiguous():
        return poison_(result), None
    guarded = guarded_empty(result.shape, result.dtype, result.device,
                            f"a tensor the submission allocated with {how}")
    return guarded.tensor, guarded


class PoisonFreshAllocations(TorchFunctionMode):
    """Within this mode, uninitialised float tensors start out as poison, with a guard
    (for instructor scripts; while grading, grader.sandbox.host does this as it watches)."""

    def __init__(self):
        super().__init__()
        self.guarded: list[Guarded] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func not in FRESH or not isinstance(result, torch.Tensor):
            return result
        tensor, guarded = fresh(result, func.__name__)
        self.guarded += [guarded] if guarded else []
        return tensor


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")
