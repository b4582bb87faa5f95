"""The Linux system calls the sandbox needs and Python's os module lacks (before 3.12).

Thin wrappers over libc through ctypes: each raises OSError with the call's name and the
errno's text, so a layer that the kernel refuses can be reported as not in force.
"""

from __future__ import annotations

import ctypes
import os
import platform

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_SYSCALLS = {  # name -> number, per machine
    "x86_64": {"pivot_root": 155, "capset": 126, "mount_setattr": 442,
               "add_key": 248, "request_key": 249, "keyctl": 250},
    "aarch64": {"pivot_root": 41, "capset": 91, "mount_setattr": 442,
                "add_key": 217, "request_key": 218, "keyctl": 219},
}
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}  # seccomp_data.arch
_KEY_CALLS = ("add_key", "request_key", "keyctl")
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong]


def _checked(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _syscall(name: str, *args) -> int:
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise OSError(38, f"{name}: not known on {platform.machine()}")
    return _libc.syscall(numbers[name], *args)


def _bytes(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def unshare(flags: int) -> None:
    if hasattr(os, "unshare"):  # Python 3.12+
        os.unshare(flags)
    else:
        _checked(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    _checked(_libc.mount(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data)),
             f"mount {target}")


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _checked(_libc.umount2(_bytes(target), flags), f"umount {target}")


def make_read_only(path: str) -> None:
    """Make a bind mount and every mount below it read-only (mount_setattr, Linux 5.12+)."""

    class MountAttr(ctypes.Structure):
        _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                    ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]

    attr = MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
    try:
        if _syscall("mount_setattr", _AT_FDCWD, _bytes(path), _AT_RECURSIVE,
                    ctypes.byref(attr), ctypes.sizeof(attr)) == 0:
            return
    except OSError:  # a machine whose call numbers we do not know
        pass
    # Older kernels: the top of the bind (grader.sandbox.mounts seals what stays writable).
    remount_read_only(path)


def remount_read_only(path: str) -> None:
    """Make the mount at `path` read-only, and only it."""
    mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _locked_flags(path))


def _locked_flags(path: str) -> int:
    """The flags a remount must keep (the kernel refuses to clear them in a user namespace)."""
    flags = os.statvfs(path).f_flag
    return flags & (MS_NOSUID | MS_NODEV | MS_NOEXEC)


def pivot_root(new_root: str, put_old: str) -> None:
    _checked(_syscall("pivot_root", _bytes(new_root), _bytes(put_old)), "pivot_root")


def prctl(option: int, value: int = 0) -> None:
    _checked(_libc.prctl(option, value, 0, 0, 0), f"prctl {option}")


def drop_capabilities() -> None:
    """Clear every capability of this process (what a user namespace's creator holds)."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(_LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
    _checked(_syscall("capset", ctypes.byref(header), ctypes.byref(data)), "capset")


def capabilities() -> int:
    """This process's effective capabilities, as the kernel reports them."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def refuse_key_calls() -> None:
    """From now on, this process and every one it starts get ENOSYS from the kernel's key
    calls (add_key, request_key, keyctl), as if the kernel had no keyrings: a keyring outlives
    the process that filled it (a user's, for days; a login's session keyring, which every
    process of the session inherits), so one grading could leave a key for another to read.
    A seccomp filter (needs no_new_privs, or privileges); system calls of another ABI than
    the machine's own (32-bit ones on x86_64) are refused alike, their numbers being others."""
    machine = platform.machine()
    if machine not in _AUDIT_ARCH:
        raise OSError(38, f"seccomp: the system calls of {machine} are not known")
    numbers = [_SYSCALLS[machine][name] for name in _KEY_CALLS]

    class Instruction(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Instruction))]

    load, equal, at_least, answer = 0x20, 0x15, 0x35, 0x06  # BPF ld|w|abs, jeq, jge, ret
    allow, refuse = 0x7FFF0000, 0x00050000 | 38  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO|ENOSYS
    code = [(load, 0, 0, 4),  # the call's ABI
            (equal, 1, 0, _AUDIT_ARCH[machine]),
            (answer, 0, 0, refuse),
            (load, 0, 0, 0),  # the call's number
            (at_least, len(numbers) + 1, 0, 0x40000000)]  # x32's numbers: refused
    code += [(equal, len(numbers) - i, 0, n) for i, n in enumerate(numbers)]
    code += [(answer, 0, 0, allow), (answer, 0, 0, refuse)]
    instructions = (Instruction * len(code))(*[Instruction(*step) for step in code])
    program = Program(len(code), instructions)
    _checked(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0),
             "seccomp")
