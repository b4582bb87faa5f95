"""Keeping a copy of a file before the grader rewrites it: nothing a user wrote is lost."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

_BACKUP = re.compile(r".+\.bak(\.[0-9]+)?")


def free_name(path: Path) -> Path:
    """`path`, or `path.1`, `path.2`, ...: a backup never replaces an earlier backup."""
    candidate, n = path, 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def backup(path: Path) -> Path:
    """Copy `path` to `path.bak` (or the next free name) and return the copy's path."""
    target = free_name(path.with_name(path.name + ".bak"))
    shutil.copy2(path, target)
    return target


def is_backup(name: str) -> bool:
    """Whether a file name is one that `backup` writes: `NAME.bak` or `NAME.bak.N`."""
    return _BACKUP.fullmatch(name) is not None
