"""The wire between the grader and the child: JSON and raw tensor bytes, nothing that runs.

One message is one frame:

    b"TCW1" | header length (4 bytes) | tensor bytes length (8 bytes) | header | tensors

or, where the tensors take SEALED_MIN bytes or more (on Linux), the same frame without them,
b"TCW2" its first bytes, with a descriptor of a sealed memory file that holds them.

The header is a JSON object of at most MAX_HEADER bytes. The tensors, when there are any,
are one safetensors buffer: a table of names, dtypes, shapes and offsets, then the raw bytes.
Decoding it can only ever produce plain CPU tensors, so nothing the child sends is unpickled,
imported or evaluated in the grader. Both ends handle the format themselves rather than
through safetensors' `save` and `load`, which copy every byte twice each way: a timed
trial fetches outputs of 256 MB, and those copies were most of its time. Each tensor's
bytes go from where they lie onto the socket or into the memory file, and come back as
views of the buffer they were read into or of the file, mapped (the tests check both ends
against safetensors itself). A memory file is only read once it is sealed against any
change, and of exactly the size the frame says.

The reader sets the rules: a deadline for the whole message (a child that sends one byte at
a time still runs out of time) and a size limit per request. A frame that breaks them, or
that is not a frame at all, raises ProtocolError; a reply must also have the shape the
request expects (`check`).
"""

from __future__ import annotations

import fcntl
import json
import math
import mmap
import os
import select
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# torch and safetensors are imported where tensors are (de)coded: the child reads its first
# message before it confines itself, and must not have started torch's threads by then.
MAGIC = b"TCW1"  # a frame whose tensors follow its header
MAGIC_SEALED = b"TCW2"  # ... whose tensors are in the sealed memory file sent with it
# Tensor buffers from this size on travel in a sealed memory file (os.memfd_create) rather
# than through the socket: a 256 MB output through a socket took 0.4 s on the H200's host
# (copied into the socket, out of it, and into a buffer), mapped it is read where it lies.
SEALED_MIN = 1 << 20
# Sealing is Linux's; elsewhere every frame carries its tensors itself.
_SEALING = hasattr(os, "memfd_create") and hasattr(fcntl, "F_SEAL_WRITE")
_SEALS = (fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE) if _SEALING else 0
MAX_HEADER = 4 << 20
# The tensor dtypes that cross (safetensors' names for them are torch's without "torch.").
TENSOR_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                 "uint8", "bool")
_PREFIX = struct.Struct("!4sIQ")


class ProtocolError(Exception):
    """The other side sent something that is not an acceptable message."""


class Closed(EOFError):
    """The other side closed the connection (the process is gone)."""


class Late(TimeoutError):
    """The whole message did not arrive before the deadline."""


@dataclass
class Message:
    header: dict[str, Any]
    tensors: dict[str, "torch.Tensor"] = field(default_factory=dict)


def send(sock: socket.socket, header: dict, tensors: dict[str, "torch.Tensor"] | None = None) -> None:
    body = json.dumps(header, allow_nan=False).encode()
    table, parts = _encode(tensors) if tensors else (b"", [])
    size = len(table) + sum(p.nbytes for p in parts)
    sealed = _sealed(table, parts, size) if _SEALING and size >= SEALED_MIN else None
    if sealed is None:
        sock.sendall(_PREFIX.pack(MAGIC, len(body), size) + body + table)
        for part in parts:
            sock.sendall(part)
        return
    try:  # the descriptor rides on the prefix's bytes; the tensors are in what it names
        socket.send_fds(sock, [_PREFIX.pack(MAGIC_SEALED, len(body), size)], [sealed])
    finally:
        os.close(sealed)
    sock.sendall(body)


def _sealed(table: bytes, parts: list[memoryview], size: int) -> int | None:
    """A sealed memory file holding the tensor buffer (its descriptor), or None where this
    system makes none. Sealed against growing, shrinking and writing: the reader maps it
    and reads the tensors where they lie, and no later change can reach them."""
    try:
        fd = os.memfd_create("tilecourse-tensors", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:  # not allowed here: the socket carries them
        return None
    try:
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size) as view:
            view[:len(table)] = table
            offset = len(table)
            for part in parts:
                view[offset:offset + part.nbytes] = part.cast("B")
                offset += part.nbytes
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS | fcntl.F_SEAL_SEAL)
    except OSError:
        os.close(fd)
        return None
    return fd


# safetensors' names for the dtypes that cross
_SAFETENSORS_DTYPE = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
                      "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8",
                      "uint8": "U8", "bool": "BOOL"}


def _encode(tensors: dict[str, "torch.Tensor"]) -> tuple[bytes, list[memoryview]]:
    """A safetensors buffer as its table (length and JSON) and each tensor's own bytes, sent
    from where they lie (safetensors' own `save` copies every byte twice first). The reader
    checks the table against the bytes before it makes a tensor (`_decode`)."""
    import torch

    table, parts, offset = {}, [], 0
    for name, t in _on_host(tensors).items():
        raw = t.reshape(-1).view(torch.uint8).numpy() if t.numel() else None
        size = 0 if raw is None else raw.nbytes
        table[name] = {"dtype": _SAFETENSORS_DTYPE[str(t.dtype).removeprefix("torch.")],
                       "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        if raw is not None:
            parts.append(memoryview(raw))
        offset += size
    text = json.dumps(table).encode()
    text += b" " * (-len(text) % 8)  # the tensors' bytes start 8-byte aligned, as safetensors'
    return struct.pack("<Q", len(text)) + text, parts


def receive(sock: socket.socket, deadline: float | None = None,
            max_bytes: int = 1 << 30) -> Message:
    """The next message; `deadline` is a time.monotonic() value for all of it."""
    prefix, fd = _read_prefix(sock, deadline)
    try:
        magic, header_len, blob_len = _PREFIX.unpack(prefix)
        if magic not in (MAGIC, MAGIC_SEALED):
            raise ProtocolError("the reply does not start like a message")
        if (fd is None) != (magic == MAGIC):
            raise ProtocolError("the reply's tensors and the descriptor it sent disagree")
        return _rest(sock, deadline, max_bytes, header_len, blob_len, fd)
    finally:
        if fd is not None:
            os.close(fd)


def _rest(sock: socket.socket, deadline: float | None, max_bytes: int, header_len: int,
          blob_len: int, fd: int | None) -> Message:
    if header_len > MAX_HEADER:
        raise ProtocolError(f"a reply header of {header_len} bytes is over the {MAX_HEADER} limit")
    if blob_len > max_bytes:
        raise ProtocolError(f"a reply of {blob_len} bytes of tensors is over the {max_bytes} "
                            "this request allows")
    try:
        header = json.loads(_read(sock, header_len, deadline))
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"the reply header is not JSON ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise ProtocolError("the reply header is not a JSON object")
    if fd is not None:
        tensors = _decode(_mapped(fd, blob_len))
    else:
        tensors = _decode(_read(sock, blob_len, deadline)) if blob_len else {}
    return Message(header, tensors)


def _mapped(fd: int, size: int) -> mmap.mmap:
    """The tensor buffer in the memory file `fd`, mapped (a private copy-on-write mapping:
    the tensors are writable here, and nothing written reaches the file). The file must be
    sealed as `_sealed` seals it, and exactly `size` bytes: a file that could still shrink
    under the mapping would make reading it fault, one that could be written could change
    what was checked."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS) if _SEALING else 0
        length = os.fstat(fd).st_size
    except OSError:
        raise ProtocolError("the reply's descriptor is not a sealed memory file") from None
    if seals & _SEALS != _SEALS:
        raise ProtocolError("the reply's memory file is not sealed against changes")
    if length != size or size < 8:
        raise ProtocolError("the reply's memory file is not the size its message says")
    return mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)


def _read_prefix(sock: socket.socket, deadline: float | None) -> tuple[bytes, int | None]:
    """A message's prefix, and the descriptor that came with its first byte, if any (the
    kernel attaches a descriptor to the bytes it was sent with)."""
    _settimeout(sock, deadline)
    try:
        data, fds, _, _ = socket.recv_fds(sock, _PREFIX.size, 1)
    except (TimeoutError, socket.timeout):
        raise Late("the reply did not arrive in time") from None
    except ConnectionError:
        raise Closed("the other process closed the connection") from None
    if not data:
        for fd in fds:
            os.close(fd)
        raise Closed("the other process closed the connection")
    try:
        if len(data) < _PREFIX.size:
            data += _read(sock, _PREFIX.size - len(data), deadline)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return bytes(data), (fds[0] if fds else None)


def _settimeout(sock: socket.socket, deadline: float | None) -> None:
    if deadline is None:
        sock.settimeout(None)
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise Late("the reply did not arrive in time")
    sock.settimeout(left)


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


_TORCH_DTYPE = {v: k for k, v in _SAFETENSORS_DTYPE.items()}
MAX_TABLE = 1 << 20  # bytes of a tensor table: a reply carries a few tensors, not thousands
MAX_DIMS = 8


def _decode(blob: bytearray) -> dict[str, "torch.Tensor"]:
    """The tensors of a safetensors buffer, each a view of `blob` (no byte is copied;
    safetensors' own `load` copies each twice). The buffer comes from another process: its
    table must describe exactly the bytes that follow it, in the dtypes that cross, or it
    is refused as malformed."""
    import torch

    if len(blob) < 8:
        raise ProtocolError("the reply's tensors are malformed (no table)")
    size = int.from_bytes(blob[:8], "little")
    if size > min(MAX_TABLE, len(blob) - 8):
        raise ProtocolError("the reply's tensors are malformed (a table past its buffer)")
    try:
        table = json.loads(bytes(blob[8:8 + size]))
    except (ValueError, RecursionError):
        raise ProtocolError("the reply's tensors are malformed (a table that is not JSON)") \
            from None
    if not isinstance(table, dict):
        raise ProtocolError("the reply's tensors are malformed (a table that is not an object)")
    data = memoryview(blob)[8 + size:]
    entries = sorted((_entry(name, entry) for name, entry in table.items()),
                     key=lambda e: e[3])
    tensors, offset = {}, 0
    for name, dtype, shape, begin, end in entries:
        if begin != offset:
            raise ProtocolError("the reply's tensors are malformed (their bytes overlap or "
                                "leave a gap)")
        count = math.prod(shape)
        if end - begin != count * dtype.itemsize or end > len(data):
            raise ProtocolError("the reply's tensors are malformed (a tensor whose bytes do "
                                "not fit its shape)")
        tensors[name] = (torch.frombuffer(data, dtype=dtype, count=count, offset=begin)
                         .reshape(shape) if count else torch.empty(shape, dtype=dtype))
        offset = end
    if offset != len(data):
        raise ProtocolError("the reply's tensors are malformed (bytes that no tensor holds)")
    return tensors


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
        raise ProtocolError("the reply's tensors are malformed (an entry of its table)")
    begin, end = entry["data_offsets"]
    return (name, getattr(torch, _TORCH_DTYPE[entry["dtype"]]), tuple(entry["shape"]),
            begin, end)


def _read(sock: socket.socket, n: int, deadline: float | None) -> bytearray:
    buffer = bytearray(n)
    view = memoryview(buffer)
    filled = 0
    while filled < n:
        _settimeout(sock, deadline)
        try:
            got = sock.recv_into(view[filled:], min(n - filled, 16 << 20))
        except (TimeoutError, socket.timeout):
            raise Late("the reply did not arrive in time") from None
        except ConnectionError:
            raise Closed("the other process closed the connection") from None
        if got == 0:
            raise Closed("the other process closed the connection")
        filled += got
    return buffer


def unasked(sock: socket.socket) -> bool:
    """Whether the other side sent something before it was asked; Closed if it is gone."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        if not sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
            raise Closed("the other process closed the connection")
    except ConnectionError:
        raise Closed("the other process closed the connection") from None
    except BlockingIOError:
        return False
    return True


# --- checking a reply's shape -----------------------------------------------------------


def check(value: Any, shape: Any, where: str = "reply") -> Any:
    """`value` if it has `shape`, else raise ProtocolError naming the first difference.

    A shape is a type or a tuple of types (int never matches a JSON boolean, float accepts
    ints and must be finite); [shape] is a list of such values; {key: shape} is an object
    with exactly these keys (a key ending in "?" may be missing); {str: shape} is an object
    with any string keys.
    """
    if isinstance(shape, list):
        if not isinstance(value, list):
            raise ProtocolError(f"{where} must be a list")
        for i, item in enumerate(value):
            check(item, shape[0], f"{where}[{i}]")
    elif isinstance(shape, dict) and list(shape) == [str]:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where} must be an object")
        for key, item in value.items():
            check(item, shape[str], f"{where}.{key}")
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise ProtocolError(f"{where} must be an object")
        keys = {k.rstrip("?"): k.endswith("?") for k in shape}
        extra = set(value) - set(keys)
        if extra:
            raise ProtocolError(f"{where} has unexpected fields: {', '.join(sorted(extra))}")
        for key, optional in keys.items():
            if key not in value:
                if not optional:
                    raise ProtocolError(f"{where} lacks {key}")
                continue
            check(value[key], shape[key + "?" if optional else key], f"{where}.{key}")
    elif not _is(value, shape if isinstance(shape, tuple) else (shape,)):
        raise ProtocolError(f"{where} has the wrong type ({type(value).__name__})")
    return value


def _is(value: Any, types: tuple) -> bool:
    if isinstance(value, bool):
        return bool in types
    if isinstance(value, (int, float)) and float in types:
        return math.isfinite(value)
    return isinstance(value, tuple(t for t in types if t is not None)) or (
        value is None and None in types)
