"""A dict of tensors as one buffer in safetensors' format, for the wire (grader.protocol):
a table of names, dtypes, shapes and offsets (length, then JSON), then the raw bytes.

The grader writes and reads the format itself rather than through safetensors' `save` and
`load`, which copy every byte twice each way: a timed trial fetches outputs of 256 MB, and
those copies were most of its time. Each tensor's bytes go from where they lie onto the
socket, or into a sealed memory file (from SEALED_MIN bytes, on Linux), or stay on the GPU
(`encode_on_device`, for grader.device_memory), and come back as views of the buffer they
were read into, of the file, mapped, or of the GPU bytes (the tests check both ends against
safetensors itself). Reading makes plain tensors and nothing else (on the CPU, or on the
GPU where the bytes are there): the table must describe exactly the bytes that follow it,
in the dtypes that cross, and a memory file is read only once sealed against any change and
of exactly the size its frame says.
"""

from __future__ import annotations

import fcntl
import json
import math
import mmap
import os
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# The tensor dtypes that cross (safetensors' names for them are torch's without "torch.").
TENSOR_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                 "uint8", "bool")
# Tensor buffers from this size on travel in a sealed memory file (os.memfd_create) rather
# than through the socket (copied into it, out of it and into a buffer): mapped, a buffer
# is read where it lies. On the H200's host a timed 128-256 MB output was fetched in 0.29 s
# so, 0.38 s through the socket (cuTile softmax, BENCHMARKS.md).
SEALED_MIN = 1 << 20
# Sealing is Linux's; elsewhere every frame carries its tensors itself.
_SEALING = hasattr(os, "memfd_create") and hasattr(fcntl, "F_SEAL_WRITE")
_SEALS = (fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE) if _SEALING else 0


class Malformed(ValueError):
    """The buffer (or its memory file) is not what the table or the frame says."""


# safetensors' names for the dtypes that cross
_SAFETENSORS_DTYPE = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
                      "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8",
                      "uint8": "U8", "bool": "BOOL"}


def encode(tensors: dict[str, "torch.Tensor"]) -> tuple[bytes, list[memoryview]]:
    """A safetensors buffer as its table (length and JSON) and each tensor's own bytes, sent
    from where they lie (safetensors' own `save` copies every byte twice first). The reader
    checks the table against the bytes before it makes a tensor (`decode`)."""
    import torch

    host = _on_host(tensors)
    return _table(host), [memoryview(t.reshape(-1).view(torch.uint8).numpy())
                          for t in host.values() if t.numel()]


def encode_on_device(tensors: dict[str, "torch.Tensor"]) \
        -> tuple[bytes, list["torch.Tensor"]] | None:
    """`encode`'s buffer with the tensors' bytes left on the GPU (uint8 CUDA tensors, for
    grader.device_memory), or None unless every tensor is a CUDA tensor."""
    import torch

    if not tensors or any(t.device.type != "cuda" for t in tensors.values()):
        return None
    flat = {n: t.detach().contiguous() for n, t in tensors.items()}
    return _table(flat), [t.reshape(-1).view(torch.uint8) for t in flat.values() if t.numel()]


def _table(tensors: dict[str, "torch.Tensor"]) -> bytes:
    """The buffer's table (its length, then JSON) for these tensors, laid out in order."""
    table, offset = {}, 0
    for name, t in tensors.items():
        size = t.numel() * t.element_size()
        table[name] = {"dtype": _SAFETENSORS_DTYPE[str(t.dtype).removeprefix("torch.")],
                       "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(table).encode()
    text += b" " * (-len(text) % 8)  # the tensors' bytes start 8-byte aligned, as safetensors'
    return struct.pack("<Q", len(text)) + text


_staging = None  # pinned host memory that GPU tensors are copied to before they are sent
_STAGED_MIN = 1 << 20  # bytes: smaller tensors go through pageable memory, as they come


def _on_host(tensors: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
    """Each tensor contiguous in host memory. GPU tensors are copied to pinned memory that
    this process keeps for its next message (a copy to fresh pageable memory faults in every
    page first: 0.19 s for a 256 MB output on the H200's host). A message is sent before the
    next is made, so one buffer serves them all."""
    global _staging
    import torch

    on_gpu = {n: t for n, t in tensors.items() if t.device.type == "cuda"}
    sizes = {n: -(-t.numel() * t.element_size() // 16) * 16 for n, t in on_gpu.items()}
    if sum(sizes.values()) >= _STAGED_MIN:
        try:
            if _staging is None or _staging.numel() < sum(sizes.values()):
                _staging = None  # the old buffer goes first
                _staging = torch.empty(sum(sizes.values()), dtype=torch.uint8, pin_memory=True)
        except RuntimeError:  # pinned memory refused here: pageable copies, as they come
            on_gpu = {}
        host, offset = {}, 0
        for name, t in on_gpu.items():
            size = t.numel() * t.element_size()
            host[name] = _staging[offset:offset + size].view(t.dtype).view(t.shape)
            host[name].copy_(t.detach())
            offset += sizes[name]
    else:
        host = {}
    return {n: host[n] if n in host else t.detach().to("cpu").contiguous()
            for n, t in tensors.items()}


def sealed(table: bytes, parts: list[memoryview]) -> int | None:
    """A sealed memory file holding the buffer `encode` made (its descriptor), or None where
    this system makes none. Sealed against growing, shrinking and writing: the reader maps it
    and reads the tensors where they lie, and no later change can reach them."""
    if not _SEALING:
        return None
    try:
        fd = os.memfd_create("tilecourse-tensors", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:  # not allowed here: the socket carries them
        return None
    try:
        # Written, not mapped and copied into: the kernel allocates the file's pages as it
        # writes, where a mapping faults them in one at a time (256 MB in 94 ms against
        # 202 ms on the two-core CPU machine).
        for chunk in (memoryview(table), *parts):
            chunk = chunk.cast("B")
            while chunk:
                chunk = chunk[os.write(fd, chunk):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS | fcntl.F_SEAL_SEAL)
    except OSError:
        os.close(fd)
        return None
    return fd


def mapped(fd: int, size: int) -> mmap.mmap:
    """The tensor buffer in the memory file `fd`, mapped (a private copy-on-write mapping:
    the tensors are writable here, and nothing written reaches the file). The file must be
    sealed as `sealed` seals it, and exactly `size` bytes: a file that could still shrink
    under the mapping would make reading it fault, one that could be written could change
    what was checked."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS) if _SEALING else 0
        length = os.fstat(fd).st_size
    except OSError:
        raise Malformed("the reply's descriptor is not a sealed memory file") from None
    if seals & _SEALS != _SEALS:
        raise Malformed("the reply's memory file is not sealed against changes")
    if length != size or size < 8:
        raise Malformed("the reply's memory file is not the size its message says")
    try:  # a sealed file of the right size the system still will not map (huge pages, say)
        return mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE,
                         prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except (OSError, ValueError):
        raise Malformed("the reply's memory file cannot be mapped") from None


_TORCH_DTYPE = {v: k for k, v in _SAFETENSORS_DTYPE.items()}
MAX_TABLE = 1 << 20  # bytes of a tensor table: a reply carries a few tensors, not thousands
MAX_DIMS = 8


def decode(blob: bytearray, on_device: "torch.Tensor | None" = None) -> dict[str, "torch.Tensor"]:
    """The tensors of a safetensors buffer, each a view of `blob` (no byte is copied;
    safetensors' own `load` copies each twice), or, where `blob` is only the table, of the
    bytes `on_device` holds (a uint8 GPU tensor). The buffer comes from another process: its
    table must describe exactly the bytes that follow it, in the dtypes that cross, or it
    is refused as malformed."""
    import torch

    size = table_size(blob)
    if size > len(blob) - 8:
        raise Malformed("the reply's tensors are malformed (a table past its buffer)")
    try:
        table = json.loads(bytes(blob[8:8 + size]))
    except (ValueError, RecursionError):
        raise Malformed("the reply's tensors are malformed (a table that is not JSON)") \
            from None
    if not isinstance(table, dict):
        raise Malformed("the reply's tensors are malformed (a table that is not an object)")
    if on_device is None:
        data = memoryview(blob)[8 + size:]
        length = len(data)
    elif len(blob) != 8 + size:
        raise Malformed("the reply's tensors are malformed (bytes after its table)")
    else:
        length = on_device.numel()
    entries = sorted((_entry(name, entry) for name, entry in table.items()),
                     key=lambda e: e[3])
    tensors, offset = {}, 0
    for name, dtype, shape, begin, end in entries:
        if begin != offset:
            raise Malformed("the reply's tensors are malformed (their bytes overlap or "
                                "leave a gap)")
        count = math.prod(shape)
        if end - begin != count * dtype.itemsize or end > length:
            raise Malformed("the reply's tensors are malformed (a tensor whose bytes do "
                                "not fit its shape)")
        if not count:
            tensors[name] = torch.empty(shape, dtype=dtype)
        elif on_device is None:
            tensors[name] = torch.frombuffer(data, dtype=dtype, count=count,
                                             offset=begin).reshape(shape)
        else:  # a dtype's view needs its bytes aligned to it: elsewhere, a copy of them
            raw = on_device[begin:end]
            raw = raw if begin % dtype.itemsize == 0 else raw.clone()
            tensors[name] = raw.view(dtype).reshape(shape)
        offset = end
    if offset != length:
        raise Malformed("the reply's tensors are malformed (bytes that no tensor holds)")
    return tensors


def table_size(blob: bytes | bytearray) -> int:
    """The length of a buffer's table, from its first 8 bytes (at most MAX_TABLE)."""
    if len(blob) < 8:
        raise Malformed("the reply's tensors are malformed (no table)")
    size = int.from_bytes(blob[:8], "little")
    if size > MAX_TABLE:
        raise Malformed("the reply's tensors are malformed (a table past its buffer)")
    return size


def _entry(name: str, entry: Any) -> tuple:
    """(name, torch dtype, shape, first byte, byte past the last) of one table entry."""
    import torch

    def natural(value) -> bool:
        return type(value) is int and value >= 0  # noqa: E721 - not a bool

    if not (isinstance(entry, dict) and set(entry) == {"dtype", "shape", "data_offsets"}
            and entry["dtype"] in _TORCH_DTYPE and isinstance(entry["shape"], list)
            and len(entry["shape"]) <= MAX_DIMS and all(map(natural, entry["shape"]))
            and isinstance(entry["data_offsets"], list) and len(entry["data_offsets"]) == 2
            and all(map(natural, entry["data_offsets"]))):
        raise Malformed("the reply's tensors are malformed (an entry of its table)")
    begin, end = entry["data_offsets"]
    return (name, getattr(torch, _TORCH_DTYPE[entry["dtype"]]), tuple(entry["shape"]),
            begin, end)
