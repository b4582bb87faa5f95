"""GPU memory handed from one process to another as a file descriptor, for the wire
(grader.protocol): a timed output checked by the grader never leaves the GPU.

A timed output of 256 MB fetched through host memory cost the grader about a quarter of a
second on the H200 (copied to the host, written to a memory file, mapped, copied back to the
GPU), some five fetches a speed case. Here the sender copies the bytes into a fresh
allocation of CUDA's virtual memory management that can be exported as a POSIX file
descriptor (the descriptor travels like a sealed memory file's, SCM_RIGHTS); the receiver
imports it, maps it, copies the bytes into a tensor of its own and unmaps it at once: a
copy on the GPU each side (well under a millisecond for 256 MB) and a few driver calls.

The receiver maps exactly the size the frame says, rounded up to the allocation
granularity, and the driver refuses to map more than the allocation holds; what it copies
is then its own, and checked like any output (grader.speed.trial: against the checksum
committed before the grader chose which output to fetch, and against the reference). Where
any step is refused (no CUDA, a driver without these handles, a sandbox that keeps the
descriptor from working) the caller sends through host memory instead: `shared` returns
None, and `imported` raises Unshareable, after which the grader asks again that way.

The driver's API through ctypes: PyTorch exposes none of it.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED: device memory, resident
_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE


class Unshareable(RuntimeError):
    """This process cannot share or take GPU memory this way (the driver's words)."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_driver = None


def _cuda():
    """libcuda, loaded once (it is loaded already wherever PyTorch has used the GPU)."""
    global _driver
    if _driver is None:
        try:
            _driver = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise Unshareable(f"no CUDA driver: {exc}") from None
    return _driver


def _call(name: str, *args) -> None:
    try:
        function = getattr(_cuda(), name)
    except AttributeError:
        raise Unshareable(f"the CUDA driver has no {name}") from None
    result = function(*args)
    if result != 0:
        raise Unshareable(f"{name} failed (CUDA error {result})")


def _device() -> int:
    """The device of the calling thread's CUDA context, made current by PyTorch (a runtime
    call binds its primary context to the thread)."""
    import torch

    torch.cuda.synchronize()
    device = ctypes.c_int()
    _call("cuCtxGetDevice", ctypes.byref(device))
    return device.value


def _prop(device: int) -> _Prop:
    prop = _Prop()
    prop.type, prop.requestedHandleTypes = _PINNED, _POSIX_FD
    prop.location = _Location(_ON_DEVICE, device)
    return prop


def _rounded(size: int, prop: _Prop) -> int:
    granularity = ctypes.c_size_t()
    _call("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop), 0)
    step = max(granularity.value, 1)
    return -(-max(size, 1) // step) * step


class _Mapping:
    """An allocation's handle mapped at an address of this process, readable and writable by
    its device, and unmapped (address freed, handle released) when the block ends."""

    def __init__(self, handle: int, size: int, device: int):
        self.handle, self.size, self.device, self.address = handle, size, device, None

    def __enter__(self) -> "_Mapping":
        address = ctypes.c_uint64()
        _call("cuMemAddressReserve", ctypes.byref(address), ctypes.c_size_t(self.size),
              ctypes.c_size_t(0), ctypes.c_uint64(0), ctypes.c_uint64(0))
        try:
            _call("cuMemMap", address, ctypes.c_size_t(self.size), ctypes.c_size_t(0),
                  ctypes.c_uint64(self.handle), ctypes.c_uint64(0))
        except Unshareable:
            _cuda().cuMemAddressFree(address, ctypes.c_size_t(self.size))
            raise
        self.address = address.value
        access = _Access(_Location(_ON_DEVICE, self.device), _READ_WRITE)
        try:
            _call("cuMemSetAccess", ctypes.c_uint64(self.address), ctypes.c_size_t(self.size),
                  ctypes.byref(access), ctypes.c_size_t(1))
        except Unshareable:
            self.__exit__()
            raise
        return self

    def bytes(self, count: int) -> "torch.Tensor":
        """The first `count` bytes, as a uint8 tensor that does not own them."""
        import torch

        return torch.as_tensor(_Bytes(self.address, count), device=f"cuda:{self.device}")

    def __exit__(self, *exc) -> None:
        if self.address is not None:
            _cuda().cuMemUnmap(ctypes.c_uint64(self.address), ctypes.c_size_t(self.size))
            _cuda().cuMemAddressFree(ctypes.c_uint64(self.address), ctypes.c_size_t(self.size))
            self.address = None


class _Bytes:
    """Device bytes as PyTorch takes them from another library (the CUDA array interface)."""

    def __init__(self, address: int, count: int):
        self.__cuda_array_interface__ = {"shape": (count,), "typestr": "|u1",
                                         "data": (address, False), "version": 3,
                                         "strides": None, "stream": None}


_held: list[int] = []  # the handle behind the last descriptor sent, until the next is made
refused: str | None = None  # why `shared` last made none (the driver's words), for studies


def shared(parts: list["torch.Tensor"]) -> tuple[int, int] | None:
    """A descriptor of a fresh GPU allocation holding `parts` (contiguous CUDA tensors, on
    one device) one after another, and the bytes they take; None where this process cannot
    make one. The allocation is held until the next call (the receiver maps it meanwhile:
    the sender is not told when)."""
    global refused
    import torch

    while _held:
        _cuda().cuMemRelease(ctypes.c_uint64(_held.pop()))
    size = sum(p.numel() * p.element_size() for p in parts)
    try:
        device = _device()
        prop = _prop(device)
        handle = ctypes.c_uint64()
        _call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(_rounded(size, prop)),
              ctypes.byref(prop), ctypes.c_uint64(0))
    except Unshareable as exc:
        refused = str(exc)
        return None
    _held.append(handle.value)
    try:
        with _Mapping(handle.value, _rounded(size, prop), device) as mapping:
            into, offset = mapping.bytes(size), 0
            for part in parts:
                count = part.numel() * part.element_size()
                into[offset:offset + count].copy_(part.reshape(-1).view(torch.uint8))
                offset += count
            torch.cuda.synchronize()
        fd = ctypes.c_int(-1)
        _call("cuMemExportToShareableHandle", ctypes.byref(fd), ctypes.c_uint64(handle.value),
              _POSIX_FD, ctypes.c_uint64(0))
    except (Unshareable, RuntimeError, TypeError, ValueError) as exc:  # PyTorch's too
        refused = str(exc)
        return None
    refused = None
    return fd.value, size


def imported(fd: int, size: int) -> "torch.Tensor":
    """The first `size` bytes of the GPU allocation `fd` names, copied into a uint8 tensor of
    this process's own; raises Unshareable where the driver refuses any step (not an
    allocation of this kind, smaller than `size`, another device's)."""
    handle = ctypes.c_uint64()
    device = _device()
    _call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
          _POSIX_FD)
    try:
        with _Mapping(handle.value, _rounded(size, _prop(device)), device) as mapping:
            try:
                own = mapping.bytes(size).clone()
                _device()  # the copy done before the mapping goes
            except (RuntimeError, TypeError, ValueError) as exc:  # PyTorch's refusals
                raise Unshareable(f"the mapped memory could not be read: {exc}") from None
    finally:
        _cuda().cuMemRelease(handle)
    return own
