"""The user a confined child runs as, and what such a user can reach.

Root gives each child a user id of its own (`own_uid`), one that owns nothing on the machine
but the child's scratch folder; an ordinary user's child keeps the user's id inside a user
namespace of its own (`map_own_ids`). Either way the child keeps the groups that open the
GPU's device files (`device_groups`), and the grader asks what a user who owns nothing could
read (`others_can_read`) to say which protections hold.
"""

from __future__ import annotations

import os
import stat

# One user id per child, above the ids of people and system services: root picks
# UID_BASE + the bootstrap's pid, unique among the processes alive on this machine.
UID_BASE = 1 << 30
DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0",
           "/dev/dri")


def map_own_ids() -> None:
    uid, gid = os.getuid(), os.getgid()
    # Before unshare the ids were ours; the new namespace maps them to themselves.
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def own_uid(pid: int) -> int | None:
    """UID_BASE + the bootstrap's pid, if this machine maps such ids."""
    uid = UID_BASE + pid
    try:
        with open("/proc/self/uid_map") as f:
            ranges = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    except OSError:
        return None
    return uid if any(start <= uid < start + count for start, _, count in ranges) else None


def device_groups() -> list[int]:
    """The groups that open the GPU's device files, where 'others' may not."""
    groups = set()
    for path in DEVICES:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if not st.st_mode & stat.S_IROTH and st.st_mode & stat.S_IRGRP:
            groups.add(st.st_gid)
    return sorted(groups)


def others_can_read(path: str) -> bool:
    """Whether a user who owns nothing can reach `path` and read it."""
    path = os.path.realpath(path)
    parts = path.split("/")
    for i in range(1, len(parts)):
        folder = "/".join(parts[:i]) or "/"
        try:
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    try:
        return bool(os.stat(path).st_mode & stat.S_IROTH)
    except OSError:
        return False
