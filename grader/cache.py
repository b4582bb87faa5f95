"""Small JSON caches under ~/.cache/tilecourse: answers that are slow to find and stable on a
machine (does tileiras compile, how fast is this GPU). A cache that cannot be read or written
only costs finding the answer again."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

ROOT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tilecourse"


def lookup(path: Path, key: str) -> dict | None:
    """The entry cached under `key` in the JSON file `path`, if any."""
    try:
        return json.loads(Path(path).read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None


def remember(path: Path, key: str, value: dict, keep: int | None = None) -> None:
    """Store `value` under `key` in the JSON file `path`, keeping the other entries (with
    `keep`, only the newest: of a kind whose keys change whenever what they stand for does)."""
    try:
        entries = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        entries = {}
    if not isinstance(entries, dict):
        entries = {}
    entries.pop(key, None)  # the newest last
    entries[key] = value
    if keep is not None:
        entries = dict(list(entries.items())[-keep:])
    # Written aside and moved into place: writers at once (a test suite's processes) leave one
    # whole file, never a mix of two.
    written = Path(path).with_name(f".{Path(path).name}.{os.getpid()}.{threading.get_ident()}")
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        written.write_text(json.dumps(entries, indent=1))
        os.replace(written, path)
    except OSError:
        written.unlink(missing_ok=True)
