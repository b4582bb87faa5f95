"""The buffers a proposal's steps work on: views by reference, arguments, host steps.

A proposal (grader.replay.proposal) names tensors as references into buffers (an input, or
an allocation an earlier step made); every process that runs or builds a proposal turns
them into tensors the same way, here.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.replay.proposal import Copy, DType, Fill, ProposalError, Ref
from grader.tracks import TRACKS, wing


def argument(value: Any, buffers: dict[str, torch.Tensor]) -> Any:
    """A launch argument of a proposal as the kernel gets it."""
    if isinstance(value, Ref):
        return view(buffers, value)
    if isinstance(value, DType):
        return dtype_of(value)
    if isinstance(value, tuple):
        return tuple(argument(v, buffers) for v in value)
    return value


def dtype_of(value: DType) -> Any:
    if value.kind == "torch" and isinstance(getattr(torch, value.name, None), torch.dtype):
        return getattr(torch, value.name)
    found = wing(value.kind).reader.dtype(value.name) if value.kind in TRACKS else None
    if found is not None:
        return found
    raise ProposalError(f"`{value.name}` is not a dtype")


def host_step(step, buffers: dict[str, torch.Tensor]) -> None:
    """A fill or a copy, the host steps a proposal may hold between launches."""
    if isinstance(step, Fill):
        view(buffers, step.target).fill_(step.value)
    elif isinstance(step, Copy):
        view(buffers, step.target).copy_(view(buffers, step.source))


def view(buffers: dict[str, torch.Tensor], ref: Ref) -> torch.Tensor:
    base = buffers[ref.buffer]
    if (ref.offset == 0 and ref.shape == tuple(base.shape) and ref.stride == base.stride()
            and ref.dtype == str(base.dtype).removeprefix("torch.")):
        return base  # the whole buffer: the common case, and the cheapest in the timed loop
    start = base.storage_offset() * base.element_size() + ref.offset
    if start % ref.itemsize:
        raise ProposalError(f"a {ref.dtype} view of {ref.buffer} starts between two elements")
    found = torch.empty(0, dtype=getattr(torch, ref.dtype), device=base.device)
    return found.set_(base.untyped_storage(), start // ref.itemsize, ref.shape, ref.stride)
