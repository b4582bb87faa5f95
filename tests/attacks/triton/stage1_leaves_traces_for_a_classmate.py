"""Leaves a trace of every kind it can for the next student, and looks for one first.

When the file is imported it first looks for a trace of a classmate graded before it (or
beside it) in every place one could be: a file in any folder it can write, a POSIX message
queue (created through /dev/mqueue, which on Docker and systemd hosts belongs to the host,
or with mq_open), a named semaphore, System V shared memory, semaphores and message queues,
an abstract socket, a process, a key in the session, user or persistent keyring. Should it
find one, its kernel subtracts instead of adding, and the stage fails: so two students who
hand this file in, graded one after the other in `grade batch --jobs 1`, show whether the
first can change the second's points (tests/sandbox/test_classmates.py grades them so, on a
host with /dev/mqueue mounted). Then it leaves a trace of every kind it can, and prints
what it left and what it found.

Graded alone it finds nothing (none of its own processes can see what another left) and
passes.

expect: PASS
points: 10
rules: relaxed
"""

import ctypes
import errno
import os
import socket
import time

import torch
import triton
import triton.language as tl

NAME = "tilecourse-trace"
KEY = 0x7ACE  # of the System V objects
SHORT = b"tc-trace"  # the process's name (15 bytes at most)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mq_open.restype = ctypes.c_int
_libc.sem_open.restype = ctypes.c_void_p
_KEY_SYSCALLS = {"add_key": 248, "keyctl": 250}  # x86_64
_KEYRINGS = {"session": -3, "user": -4}
_KEYCTL_SEARCH, _KEYCTL_GET_PERSISTENT = 10, 22


def _folders() -> list[str]:
    """Every folder a file could be left in: the usual ones, and every mount point."""
    usual = ["/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run", "/run/lock",
             os.environ.get("HOME", "/"), os.getcwd()]
    try:
        with open("/proc/self/mountinfo") as table:
            points = [line.split()[4].replace("\\040", " ") for line in table]
    except OSError:
        points = []
    return list(dict.fromkeys(usual + points))


def _keyrings() -> dict[str, int]:
    rings = dict(_KEYRINGS)
    persistent = _key("keyctl", _KEYCTL_GET_PERSISTENT, -1, -4)
    if persistent >= 0:
        rings["persistent"] = persistent
    return rings


def _key(call: str, *args) -> int:
    converted = [ctypes.c_char_p(a) if isinstance(a, bytes) else ctypes.c_long(a) for a in args]
    return _libc.syscall(_KEY_SYSCALLS[call], *converted)


def _system_v(flags: int) -> dict[str, int]:
    return {"System V shared memory": _libc.shmget(KEY, 4096 if flags else 0, flags),
            "System V semaphores": _libc.semget(KEY, 1 if flags else 0, flags),
            "System V message queue": _libc.msgget(KEY, flags)}


def look() -> list[str]:
    found = [f"a file in {folder}" for folder in _folders()
             if os.path.lexists(os.path.join(folder, NAME))]
    if _libc.mq_open(f"/{NAME}".encode(), os.O_RDONLY) >= 0:
        found.append("a POSIX message queue")
    if _libc.sem_open(f"/{NAME}".encode(), 0):
        found.append("a named semaphore")
    found += [what for what, got in _system_v(0).items() if got >= 0]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(f"\0{NAME}")
            found.append("an abstract socket")
        except OSError:
            pass
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/comm", "rb") as comm:
                if comm.read().strip() == SHORT:
                    found.append("a process")
        except OSError:
            pass
    found += [f"a key in the {ring} keyring" for ring, ring_id in _keyrings().items()
              if _key("keyctl", _KEYCTL_SEARCH, ring_id, b"user", NAME.encode(), 0) >= 0]
    return found


def leave() -> list[str]:
    left = []
    for folder in _folders():
        try:
            with open(os.path.join(folder, NAME), "w") as trace:
                trace.write("left by a classmate")
            left.append(f"a file in {folder}")
        except OSError:
            pass
    if _libc.mq_open(f"/{NAME}".encode(), os.O_RDWR | os.O_CREAT, 0o666, None) >= 0:
        left.append("a POSIX message queue")
    if _libc.sem_open(f"/{NAME}".encode(), os.O_CREAT, 0o666, 1):
        left.append("a named semaphore")
    left += [what for what, got in _system_v(0o1666).items() if got >= 0]  # IPC_CREAT | 0666
    left += [f"a key in the {ring} keyring" for ring, ring_id in _keyrings().items()
             if _key("add_key", b"user", NAME.encode(), b"x", 1, ring_id) >= 0]
    if _daemon():
        left += ["an abstract socket", "a process"]
    return left


def _daemon() -> bool:
    """A process of its own session that holds an abstract socket and outlives the call."""
    ready_read, ready_write = os.pipe()
    if os.fork():
        os.close(ready_write)
        told = os.read(ready_read, 1)
        os.close(ready_read)
        return told == b"1"
    try:
        os.setsid()
        _libc.prctl(15, ctypes.c_char_p(SHORT), 0, 0, 0)  # PR_SET_NAME
        os.closerange(3, ready_write)
        os.closerange(ready_write + 1, 4096)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(f"\0{NAME}")
        server.listen()
        os.write(ready_write, b"1")
        time.sleep(600)
    except OSError as exc:
        os.write(ready_write, str(exc.errno or errno.EIO).encode()[:1])
    os._exit(0)


FOUND = look()
print("found: " + ("; ".join(FOUND) or "nothing"))
print("left: " + ("; ".join(leave()) or "nothing"))


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, SIGN: tl.constexpr,
                      BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + SIGN * y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    sign = -1 if FOUND else 1  # a classmate's trace costs this stage its points
    vector_add_kernel[(triton.cdiv(out.numel(), 1024),)](x, y, out, out.numel(), SIGN=sign,
                                                          BLOCK_SIZE=1024)
    return out
