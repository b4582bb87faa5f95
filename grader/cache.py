"""Small JSON caches under ~/.cache/tilecourse: answers that are slow to find and stable on a
machine (does tileiras compile, how fast is this GPU). A cache that cannot be read or written
only costs finding the answer again."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tilecourse"


def lookup(path: Path, key: str) -> dict | None:
    """The entry cached under `key` in the JSON file `path`, if any."""
    try:
        return json.loads(Path(path).read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None


def remember(path: Path, key: str, value: dict) -> None:
    """Store `value` under `key` in the JSON file `path`, keeping the other entries."""
    try:
        entries = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        entries = {}
    entries[key] = value
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(entries, indent=1))
    except OSError:
        pass
