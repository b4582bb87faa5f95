"""Every result a student ever got, kept: OUT/history/NAME/.

A grading of a student whose result stands in OUT/students/NAME.json moves that result into
OUT/history/NAME/ before it begins (`archive`), with the digest of the files it graded and its
points, so that a regrade never loses one: --force, --only, a resubmission, a regrade that
crashed or ran out of --limit. Once the grading has a result, the rule of which stands
(`install`, docs/instructors.md):

- the newest grading stands, as a resubmission must;
- except where the same files (the same digest) scored more in an earlier grading (a
  smaller --limit, a slower machine): that result stands, the new one goes to history, and
  the run says so.

History holds every result but the one standing.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from grader.results import write_file

HISTORY = "history"
INDEX = "index.json"


def folder(out: Path, name: str) -> Path:
    return out / HISTORY / name


def archive(out: Path, name: str, digest: str) -> None:
    """Move the result standing for `name` (graded from files of `digest`) into history."""
    standing = out / "students" / f"{name}.json"
    if standing.is_file():
        _add(out, name, standing, digest)


def install(out: Path, name: str, fresh: Path, digest: str) -> str:
    """Put the new result `fresh` (of files of `digest`) in place by the rule; what the run
    should say of it ("" where the new result simply stands)."""
    standing = out / "students" / f"{name}.json"
    entries = _index(out, name)
    same = [e for e in entries if digest and e["digest"] == digest]
    best = max(same, key=lambda e: e["points"], default=None)
    new = _points(fresh)
    if best is None or new is None or best["points"] <= new:
        os.replace(fresh, standing)
        return ""
    _add(out, name, fresh, digest)
    os.replace(folder(out, name) / best["file"], standing)
    _write_index(out, name, [e for e in _index(out, name) if e["file"] != best["file"]])
    return (f"{name}: the same files scored {new:g} now against {best['points']:g} in an earlier "
            f"grading, which stands (every result is kept in {HISTORY}/{name}/)")


def _add(out: Path, name: str, result: Path, digest: str) -> None:
    entries = _index(out, name)
    number = 1 + max((int(e["file"].split(".")[0]) for e in entries), default=0)
    target = folder(out, name) / f"{number:03d}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(result, target)
    entries.append({"file": target.name, "digest": digest, "points": _points(target) or 0.0,
                    "kept_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    _write_index(out, name, entries)


def _index(out: Path, name: str) -> list[dict]:
    try:
        entries = json.loads((folder(out, name) / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [e for e in entries if isinstance(e, dict) and {"file", "digest", "points"} <= set(e)]


def _write_index(out: Path, name: str, entries: list[dict]) -> None:
    write_file(folder(out, name) / INDEX, json.dumps(entries, indent=2) + "\n")


def _points(result: Path) -> float | None:
    try:
        points = json.loads(result.read_text(encoding="utf-8")).get("points")
    except (OSError, ValueError, AttributeError):
        return None
    return float(points) if isinstance(points, (int, float)) else None
