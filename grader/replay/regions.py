"""The tensors a replayed launch may address, as the watch of its loads and stores sees them
(grader.replay.traffic): each one's storage, which element of the tensor each storage
element is, and the bits it holds; and the elements a lane of a load or store reaches."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # an element's size -> its bits


@dataclass
class Region:
    """A tensor the kernels may address: its storage (with the poisoned guard after it)."""

    name: str  # as the student reads it: "`x`", "the output"
    start: int  # address of the storage's first byte
    nbytes: int
    itemsize: int
    logical: np.ndarray  # storage element -> flat index in the tensor, -1 where none
    numel: int
    last: int  # the storage element of the tensor's last element
    memory: np.ndarray  # the storage's elements as unsigned integers: their bits, read live
    is_output: bool = False
    is_input: bool = False
    given: bool = True  # handed to this launch: only then must it read all of it

    @classmethod
    def of(cls, tensor: torch.Tensor, name: str, **flags) -> "Region":
        storage = tensor.untyped_storage()
        size = storage.nbytes() // tensor.element_size()
        logical = torch.full((size,), -1, dtype=torch.int64)
        logical.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset()).copy_(
            torch.arange(tensor.numel(), dtype=torch.int64).view(tensor.shape))
        table = logical.numpy()
        last = int(np.nonzero(table >= 0)[0][-1]) if tensor.numel() else -1
        raw = torch.empty(0, dtype=torch.uint8).set_(storage).numpy()
        bits = raw[:size * tensor.element_size()].view(_BITS[tensor.element_size()])
        return cls(name, storage.data_ptr(), storage.nbytes(), tensor.element_size(), table,
                   tensor.numel(), last, bits, **flags)


def spanned(offsets: np.ndarray, itemsize: int, width: int | None) -> np.ndarray:
    """The storage elements lanes at byte `offsets` reach: each lane's own, and where a lane
    is wider than an element (a pointer cast to a wider type), every element its bytes
    cover."""
    first = offsets // itemsize
    if not width or width <= itemsize:
        return first
    last = (offsets + width - 1) // itemsize
    reach = first[:, None] + np.arange(int((last - first).max()) + 1)
    return reach[reach <= last[:, None]]
