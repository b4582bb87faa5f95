"""The wire between the grader and the child: JSON and raw tensor bytes, nothing that runs.

One message is one frame:

    b"TCW1" | header length (4 bytes) | tensor bytes length (8 bytes) | header | tensors

or, where the tensors take tensor_buffer.SEALED_MIN bytes or more (on Linux), the same frame
without them, b"TCW2" its first bytes, with a descriptor of a sealed memory file that
holds them; or, for a request that takes GPU memory (a timed output the grader fetches),
b"TCW3" with a descriptor of a GPU allocation that holds the tensors' bytes
(grader.device_memory), the frame carrying only their table.

The header is a JSON object of at most MAX_HEADER bytes. The tensors, when there are any,
are one buffer in safetensors' format (grader.tensor_buffer): decoding it can only ever
produce plain CPU tensors, so nothing the child sends is unpickled, imported or evaluated in
the grader.

The reader sets the rules: a deadline for the whole message (a child that sends one byte at
a time still runs out of time) and a size limit per request. A frame that breaks them, or
that is not a frame at all, raises ProtocolError; a reply must also have the shape the
request expects (`check`).
"""

from __future__ import annotations

import json
import math
import os
import select
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grader import device_memory, tensor_buffer

if TYPE_CHECKING:
    import torch

# torch is imported where tensors are (de)coded (grader.tensor_buffer): the child reads its
# first message before it confines itself, and must not have started torch's threads by then.
MAGIC = b"TCW1"  # a frame whose tensors follow its header
MAGIC_SEALED = b"TCW2"  # ... whose tensors are in the sealed memory file sent with it
MAGIC_DEVICE = b"TCW3"  # ... whose tensors' bytes are in the GPU allocation sent with it
MAX_HEADER = 4 << 20
_PREFIX = struct.Struct("!4sIQ")


class ProtocolError(Exception):
    """The other side sent something that is not an acceptable message."""


class Closed(EOFError):
    """The other side closed the connection (the process is gone)."""


class NotShared(ProtocolError):
    """A whole frame of GPU memory arrived that this process could not take (the driver's
    words): the connection is still in step, and the same request can be asked again for
    the tensors through host memory."""


class LateReply(TimeoutError):
    """The whole message did not arrive before the deadline."""


@dataclass
class Message:
    header: dict[str, Any]
    tensors: dict[str, "torch.Tensor"] = field(default_factory=dict)


def send(sock: socket.socket, header: dict, tensors: dict[str, "torch.Tensor"] | None = None,
         on_device: bool = False) -> None:
    """One frame; `on_device`: GPU tensors may stay on the GPU (the request takes them so)."""
    body = json.dumps(header, allow_nan=False).encode()
    if on_device and tensors and _send_on_device(sock, body, tensors):
        return
    table, parts = tensor_buffer.encode(tensors) if tensors else (b"", [])
    size = len(table) + sum(p.nbytes for p in parts)
    sealed = tensor_buffer.sealed(table, parts) if size >= tensor_buffer.SEALED_MIN else None
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


def _send_on_device(sock: socket.socket, body: bytes, tensors: dict) -> bool:
    """A TCW3 frame, where the tensors are on the GPU, large enough to be worth it, and this
    process can share GPU memory; False (nothing sent) otherwise."""
    encoded = tensor_buffer.encode_on_device(tensors)
    if encoded is None:
        return False
    table, parts = encoded
    if sum(p.numel() for p in parts) < tensor_buffer.SEALED_MIN:
        return False
    shared = device_memory.shared(parts)
    if shared is None:
        return False
    fd, size = shared
    try:
        socket.send_fds(sock, [_PREFIX.pack(MAGIC_DEVICE, len(body), len(table) + size)], [fd])
    finally:
        os.close(fd)
    sock.sendall(body + table)
    return True


def receive(sock: socket.socket, deadline: float | None = None,
            max_bytes: int = 1 << 30, on_device: bool = False) -> Message:
    """The next message; `deadline` is a time.monotonic() value for all of it; `on_device`:
    the request takes GPU memory (its tensors then come back on the GPU)."""
    prefix, fd = _read_prefix(sock, deadline)
    try:
        magic, header_len, blob_len = _PREFIX.unpack(prefix)
        if magic not in (MAGIC, MAGIC_SEALED, MAGIC_DEVICE):
            raise ProtocolError("the reply does not start like a message")
        if (fd is None) != (magic == MAGIC):
            raise ProtocolError("the reply's tensors and the descriptor it sent disagree")
        if magic == MAGIC_DEVICE and not on_device:
            raise ProtocolError("the reply sent GPU memory, which its request does not take")
        return _rest(sock, deadline, max_bytes, header_len, blob_len, fd,
                     magic == MAGIC_DEVICE)
    finally:
        if fd is not None:
            os.close(fd)


def _rest(sock: socket.socket, deadline: float | None, max_bytes: int, header_len: int,
          blob_len: int, fd: int | None, on_device: bool = False) -> Message:
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
    try:
        if on_device:
            tensors = _on_device(sock, deadline, blob_len, fd)
        elif fd is not None:
            tensors = tensor_buffer.decode(tensor_buffer.mapped(fd, blob_len))
        else:
            tensors = tensor_buffer.decode(_read(sock, blob_len, deadline)) if blob_len else {}
    except tensor_buffer.Malformed as exc:
        raise ProtocolError(str(exc)) from None
    return Message(header, tensors)


def _on_device(sock: socket.socket, deadline: float | None, blob_len: int,
               fd: int) -> dict[str, "torch.Tensor"]:
    """A TCW3 frame's tensors: its table from the socket, their bytes from the GPU allocation
    `fd` names, copied into this process's own memory (NotShared if the driver refuses)."""
    table = _read(sock, 8, deadline)
    size = tensor_buffer.table_size(table)
    if 8 + size >= blob_len:
        raise tensor_buffer.Malformed("the reply's tensors are malformed (a table past its "
                                      "buffer)")
    table += _read(sock, size, deadline)
    try:  # the frame is read whole: refused, the same request can be asked again
        data = device_memory.imported(fd, blob_len - len(table))
    except device_memory.Unshareable as exc:
        raise NotShared(f"the reply's GPU memory could not be taken here: {exc}") from None
    return tensor_buffer.decode(table, data)


def _read_prefix(sock: socket.socket, deadline: float | None) -> tuple[bytes, int | None]:
    """A message's prefix, and the descriptor that came with its first byte, if any (the
    kernel attaches a descriptor to the bytes it was sent with)."""
    _settimeout(sock, deadline)
    try:
        data, fds, _, _ = socket.recv_fds(sock, _PREFIX.size, 1)
    except (TimeoutError, socket.timeout):
        raise LateReply("the reply did not arrive in time") from None
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
        raise LateReply("the reply did not arrive in time")
    sock.settimeout(left)


def _read(sock: socket.socket, n: int, deadline: float | None) -> bytearray:
    buffer = bytearray(n)
    view = memoryview(buffer)
    filled = 0
    while filled < n:
        _settimeout(sock, deadline)
        try:
            got = sock.recv_into(view[filled:], min(n - filled, 16 << 20))
        except (TimeoutError, socket.timeout):
            raise LateReply("the reply did not arrive in time") from None
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


def check_shape(value: Any, shape: Any, where: str = "reply") -> Any:
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
            check_shape(item, shape[0], f"{where}[{i}]")
    elif isinstance(shape, dict) and list(shape) == [str]:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where} must be an object")
        for key, item in value.items():
            check_shape(item, shape[str], f"{where}.{key}")
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
            check_shape(value[key], shape[key + "?" if optional else key], f"{where}.{key}")
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
