"""A ceiling on the memory of each confined process tree, kept by the grader's own clock.

A resource limit cannot do it: RLIMIT_AS and RLIMIT_DATA count address space, and CUDA
reserves tens of GB of it that it never fills (its unified addressing), while a machine
with many cores gives every thread a stack. So the grader measures what the tree really
holds: the anonymous and shared-memory pages of each of its processes (the bootstrap, the
namespace's init, the worker and anything the submission started, which the PID namespace
keeps below them), every PERIOD seconds (none while a batch is timed: `held_off`), and
kills the tree that holds more than LIMIT. Each measurement must be cheap, for it runs all
through a grading: the resident pages come from /proc/PID/status (a fraction of a
millisecond), and a process's parent is read once, when it is first seen. Resident pages
count a page that a fork still shares with its parent in both (the spares are forks of a
template that imported PyTorch; a submission may fork too), so a tree that seems over the
ceiling is measured again by each process's share of its pages (/proc/PID/smaps_rollup,
tens of milliseconds a process; again only once it grew, or seconds later), and only a
tree over the ceiling by its shares is killed. The verdict is a crash of the case that says
how much the tree held (`describe`). The child's scratch tmpfs mounts are bounded apart, by
their size (grader.sandbox.filesystem): one submission can hold at most LIMIT per process
tree plus those.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from grader.sandbox.privileges import Protection

LIMIT = 4 << 30  # bytes per process tree: far above any honest stage (a few hundred MiB)
PERIOD = 0.2  # seconds between two measurements
# A tree measured by its shares under the ceiling is measured so again only once its
# resident pages grew by GROWN bytes, or SHARES_PERIOD seconds later: a share measurement
# takes tens of milliseconds a process, holding the kernel's lock on its memory maps, and
# every stage's replay, idle, can seem over the ceiling by its resident pages.
GROWN = 64 << 20
SHARES_PERIOD = 2.0
PROC = Path("/proc")
PROTECTION = Protection("memory ceiling", True, f"at most {LIMIT >> 30} GiB per process tree, "
                        f"measured by the grader every {PERIOD:g} s (the scratch tmpfs apart, "
                        "bounded by its size)")
_RESIDENT = (b"RssAnon:", b"RssShmem:", b"VmSwap:")  # of /proc/PID/status, in kB
_SHARES = (b"Pss_Anon:", b"Pss_Shmem:", b"SwapPss:")  # of /proc/PID/smaps_rollup, in kB

_lock = threading.Lock()
_watched: set[int] = set()  # the roots of the trees being watched
_over: dict[int, int] = {}  # root -> bytes it held when it was killed
_thread: threading.Thread | None = None
_parent_of: dict[int, int] = {}  # every process seen alive, and its parent
_parents_lock = threading.Lock()
_shares: dict[int, tuple[int, float]] = {}  # root -> resident, when: its last share measure
_timing = 0  # batches being timed in this process: no tree is measured meanwhile
_steady = threading.Event()  # set while none is
_steady.set()


def watch(root: int) -> None:
    """Keep the tree below process `root` (and `root`) under LIMIT until `forget`."""
    global _thread
    with _lock:
        _watched.add(root)
        _over.pop(root, None)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_keep, name="memory-ceiling", daemon=True)
            _thread.start()


def forget(root: int) -> int | None:
    """Stop watching `root`; the bytes its tree held if the ceiling killed it."""
    with _lock:
        _watched.discard(root)
        _shares.pop(root, None)
        return _over.pop(root, None)


def exceeded(root: int) -> int | None:
    """The bytes the tree below `root` held when the ceiling killed it, if it did."""
    with _lock:
        return _over.get(root)


def describe(held: int) -> str:
    return (f"its processes held {held / 2**30:.1f} GiB of memory, more than the "
            f"{LIMIT / 2**30:g} GiB a submission may hold; the grader stopped them")


def tree_bytes(root: int, parents: dict[int, int] | None = None, shares: bool = False) -> int:
    """What the processes below `root`, and `root`, hold in memory now: their resident
    pages, or with `shares` each one's share of the pages it has in common with others."""
    parents = _parents() if parents is None else parents
    held = _share if shares else _resident
    return sum(held(pid) for pid in _tree(root, parents))


@contextmanager
def held_off():
    """No tree measured while a batch is timed in this process (grader.speed.trial): reading
    a process's memory maps (smaps_rollup) holds the kernel's lock on them, which the timed
    replay may wait for, and the measuring thread competes with the timing thread for the
    interpreter. The measurements go on once no batch is being timed: a batch lasts
    milliseconds, a trial a few seconds, and the processes are measured between batches."""
    global _timing
    with _lock:
        _timing += 1
        _steady.clear()
    try:
        yield
    finally:
        with _lock:
            _timing -= 1
            if not _timing:
                _steady.set()


def _keep() -> None:
    while True:
        with _lock:
            roots = set(_watched)
        if roots:
            _steady.wait()
            parents = _parents()
            for root in roots:
                _steady.wait()  # a batch began meanwhile: its tree waits until it is done
                _measure(root, parents)
        time.sleep(PERIOD)


def _measure(root: int, parents: dict[int, int]) -> None:
    resident = tree_bytes(root, parents)  # cheap, and never below the shares
    if resident <= LIMIT:
        return
    last = _shares.get(root)
    if last is not None and resident - last[0] < GROWN \
            and time.monotonic() - last[1] < SHARES_PERIOD:
        return  # under the ceiling by its shares, and it holds no more since
    held = tree_bytes(root, parents, shares=True)
    with _lock:
        if root in _watched:  # not forgotten meanwhile: a pid is used again later
            _shares[root] = (resident, time.monotonic())
    if held > LIMIT:
        _kill(root, held)


def _kill(root: int, held: int) -> None:
    with _lock:
        if root not in _watched:  # ended meanwhile by its owner
            return
        _over[root] = held
    try:
        os.kill(root, signal.SIGKILL)  # the bootstrap: its namespace, and all below, end
    except ProcessLookupError:
        pass


def _parents() -> dict[int, int]:
    """Every live process's parent, from /proc: read once per process (a process whose
    parent ends is adopted by the namespace's init, which is in the same tree)."""
    alive = {int(entry.name) for entry in os.scandir(PROC) if entry.name.isdigit()}
    with _parents_lock:
        for pid in _parent_of.keys() - alive:
            del _parent_of[pid]
        for pid in alive - _parent_of.keys():
            try:
                stat = (PROC / str(pid) / "stat").read_bytes()
            except OSError:
                continue  # gone meanwhile
            _parent_of[pid] = int(stat[stat.rindex(b")") + 2:].split()[1])
        return dict(_parent_of)


def _tree(root: int, parents: dict[int, int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def _resident(pid: int) -> int:
    """A process's resident anonymous and shared-memory pages, swapped ones included."""
    return _sum(pid, "status", _RESIDENT) or 0


def _share(pid: int) -> int:
    """The same pages, each divided among the processes that map it (where the kernel has
    no such sums, the resident pages)."""
    found = _sum(pid, "smaps_rollup", _SHARES)
    return found if found is not None else _resident(pid)


def _sum(pid: int, name: str, fields: tuple[bytes, ...]) -> int | None:
    try:
        text = (PROC / str(pid) / name).read_bytes()
    except OSError:
        return 0
    found = [int(line.split()[1]) * 1024 for line in text.splitlines() if line.startswith(fields)]
    return sum(found) if found else None
