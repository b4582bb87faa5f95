"""The /dev a child sees: a tmpfs the sandbox fills itself, never a window on the host's.

The host's /dev holds more than the devices a grading needs. On Docker's containers, on
systemd hosts and on CI runners, /dev/mqueue is mounted there: the POSIX message queues of
the host's IPC namespace (the worker's own IPC namespace does not cover a mount it can see),
where any process may create a name. Bound whole into every sandbox, it let one child leave
a queue named after a hidden case's size for a later stage to read, and one student's
grading fail a classmate's case in `grade batch` (tests/sandbox/test_classmates.py). So the
child's /dev is made of:

- the device nodes Python, PyTorch and the compilers use (NODES), and the GPU's (every
  /dev/nvidia* and /dev/dri), each bound alone and read-only (a device node is opened for
  writing on a read-only mount all the same: only the files a mount stores are kept from
  change);
- the links programs expect (/dev/fd, /dev/stdin, ...);
- a devpts of its own (a terminal made there is seen by this child alone), if the kernel
  lets one be made;
- a private /dev/shm (POSIX semaphores and shared memory live there);
- nothing else: no message queues, no sockets of the host (/dev/log), no disks.

The tmpfs itself is then made read-only.
"""

from __future__ import annotations

import os

from grader.sandbox import linux

NODES = ("null", "zero", "full", "random", "urandom", "tty")
GPU_PREFIXES = ("nvidia", "dri")  # /dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm, /dev/dri, ...
LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
         "stderr": "/proc/self/fd/2"}
# The tmpfs holds empty files to bind the nodes on, and links: it is capped where it stands.
DEV_SIZE = "64k"
_NO_EXEC = linux.MS_NOSUID | linux.MS_NOEXEC


def wanted(host: str = "/dev") -> list[str]:
    """The names of the host's /dev that the worker's holds: the nodes, the GPU's entries."""
    try:
        names = os.listdir(host)
    except OSError:
        return []
    return sorted(n for n in names if n in NODES or n.startswith(GPU_PREFIXES))


def build(root: str, shm_size: str) -> None:
    """Make `root`/dev, its /dev/shm a tmpfs of `shm_size` (before the root is switched: the
    host's /dev is still reachable)."""
    dev = root + "/dev"
    os.makedirs(dev, mode=0o755, exist_ok=True)
    linux.mount("tmpfs", dev, "tmpfs", _NO_EXEC, f"mode=0755,size={DEV_SIZE}")
    for name in wanted():
        _bind(f"/dev/{name}", f"{dev}/{name}")
    for name, target in LINKS.items():
        os.symlink(target, f"{dev}/{name}")
    if _own_terminals(dev):
        os.symlink("pts/ptmx", f"{dev}/ptmx")
    os.mkdir(f"{dev}/shm")
    linux.mount("tmpfs", f"{dev}/shm", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                f"mode=1777,size={shm_size}")
    linux.mount(None, dev, None, linux.MS_REMOUNT | linux.MS_RDONLY | _NO_EXEC)


def _bind(source: str, target: str) -> None:
    if os.path.isdir(source):
        os.mkdir(target)
    else:
        open(target, "w").close()
    linux.mount(source, target, None, linux.MS_BIND | linux.MS_REC)
    linux.make_read_only(target)


def _own_terminals(dev: str) -> bool:
    """A devpts instance of this child's own at dev/pts; False where the kernel refuses one
    (the worker then has no terminals, which grading does not use)."""
    os.mkdir(f"{dev}/pts")
    try:
        linux.mount("devpts", f"{dev}/pts", "devpts", _NO_EXEC,
                    "newinstance,ptmxmode=0666,mode=0620")
        return True
    except OSError:
        os.rmdir(f"{dev}/pts")
        return False
