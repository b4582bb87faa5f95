"""The worker's mount table, read once its root is switched: sealed, or the start refused.

The view (grader.sandbox.filesystem) is built so that the worker can write only in its own
tmpfs mounts (OWN) and sees no file system of a kernel object that other processes share.
`seal` reads what the kernel says the view is (/proc/self/mountinfo) rather than trust
that it was built as meant: a writable mount anywhere else (a kernel older than 5.12
makes only the top of a window read-only; a host mount turned up inside a window) is made
read-only, and one that stays writable, or a mount of a shared kind (SHARED_KINDS), stops
the sandbox before any student code runs (`Unsealed`): such a place is where one grading
could leave a note for another to read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.sandbox import linux

# Where the worker may write, and the file system each must be.
OWN = {"/tmp": "tmpfs", "/dev/shm": "tmpfs", "/dev/pts": "devpts", "/proc": "proc"}
# File systems that show kernel objects other namespaces share: the host's POSIX message
# queues (a name made there is seen by every process that sees the mount).
SHARED_KINDS = ("mqueue",)
_ESCAPE = re.compile(r"\\([0-7]{3})")  # mountinfo writes a space as \040


class Unsealed(Exception):
    """The view holds a place that is not the worker's own and could not be closed."""


@dataclass(frozen=True)
class Mount:
    point: str
    kind: str  # the file system's type
    writable: bool


def table(path: str = "/proc/self/mountinfo") -> list[Mount]:
    """The mounts this process sees, the uppermost one at each point (a mount below another
    at the same point cannot be reached)."""
    found: dict[str, Mount] = {}
    with open(path) as lines:
        for line in lines:
            fields = line.split()
            rest = fields[fields.index("-") + 1:]  # after the optional fields
            writable = "rw" in fields[5].split(",") and "ro" not in rest[2].split(",")
            point = _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
            found.pop(point, None)  # in mount order: the later one is on top
            found[point] = Mount(point, rest[0], writable)
    return list(found.values())


def own(mount: Mount, scratch: str) -> bool:
    """A mount the worker may write: its tmpfs folders, its terminals, its /proc (whose
    files are its own processes' or need privileges it gave up)."""
    if mount.point == scratch:
        return mount.kind == "tmpfs"
    if mount.kind == "proc":
        return mount.point == "/proc" or mount.point.startswith("/proc/")
    return OWN.get(mount.point) == mount.kind


def seal(scratch: str) -> None:
    """Make every mount but the worker's own read-only; raises Unsealed where one cannot be,
    or where a shared kind is mounted."""
    for mount in table():
        if mount.kind in SHARED_KINDS:
            raise Unsealed(f"{mount.point} shows the host's {mount.kind}, which every "
                           "process that sees it shares: unmount it on this machine")
        if mount.writable and not own(mount, scratch):
            try:
                linux.remount_read_only(mount.point)
            except OSError:
                pass  # said below
    left = [m for m in table() if m.writable and not own(m, scratch)]
    if left:
        raise Unsealed(f"{left[0].point} ({left[0].kind}) is writable and could not be made "
                       "read-only")
