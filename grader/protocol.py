"""The wire between the grader and the child: JSON and raw tensor bytes, nothing that runs.

One message is one frame:

    b"TCW1" | header length (4 bytes) | tensor bytes length (8 bytes) | header | tensors

The header is a JSON object of at most MAX_HEADER bytes. The tensors, when there are any,
are one safetensors buffer: a table of names, dtypes, shapes and offsets, then the raw bytes.
Decoding it can only ever produce plain CPU tensors, so nothing the child sends is unpickled,
imported or evaluated in the grader.

The reader sets the rules: a deadline for the whole message (a child that sends one byte at
a time still runs out of time) and a size limit per request. A frame that breaks them, or
that is not a frame at all, raises ProtocolError; a reply must also have the shape the
request expects (`check`).
"""

from __future__ import annotations

import json
import math
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
MAGIC = b"TCW1"
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
    blob = _encode(tensors) if tensors else b""
    sock.sendall(_PREFIX.pack(MAGIC, len(body), len(blob)) + body)
    if blob:
        sock.sendall(blob)


def _encode(tensors: dict[str, "torch.Tensor"]) -> bytes:
    import torch
    from safetensors.torch import save

    # Own, contiguous CPU copies: safetensors refuses views and tensors that share memory.
    return save({name: t.detach().cpu().clone(memory_format=torch.contiguous_format)
                 for name, t in tensors.items()})


def receive(sock: socket.socket, deadline: float | None = None,
            max_bytes: int = 1 << 30) -> Message:
    """The next message; `deadline` is a time.monotonic() value for all of it."""
    magic, header_len, blob_len = _PREFIX.unpack(_read(sock, _PREFIX.size, deadline))
    if magic != MAGIC:
        raise ProtocolError("the reply does not start like a message")
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
    tensors = _decode(_read(sock, blob_len, deadline)) if blob_len else {}
    return Message(header, tensors)


def _decode(blob: bytes) -> dict[str, "torch.Tensor"]:
    import torch
    from safetensors.torch import load

    try:
        tensors = load(blob)
    except Exception as exc:  # noqa: BLE001 - whatever safetensors rejects is malformed
        raise ProtocolError(f"the reply's tensors are malformed ({exc})") from None
    if not all(type(t) is torch.Tensor for t in tensors.values()):  # noqa: E721 - exact type
        raise ProtocolError("the reply holds something other than plain tensors")
    return tensors


def _read(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    buffer = bytearray(n)
    view = memoryview(buffer)
    filled = 0
    while filled < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Late("the reply did not arrive in time")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            got = sock.recv_into(view[filled:], min(n - filled, 1 << 20))
        except (TimeoutError, socket.timeout):
            raise Late("the reply did not arrive in time") from None
        except ConnectionError:
            raise Closed("the other process closed the connection") from None
        if got == 0:
            raise Closed("the other process closed the connection")
        filled += got
    return bytes(buffer)


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
