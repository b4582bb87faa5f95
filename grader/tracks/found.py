"""The languages installed: each a `tilecourse.tracks` entry point naming its record.

A language's package declares its record as an entry point of this group, as a Triton
backend declares itself under `triton.backends`: `toy = "grader.languages.toy.track:TOY"` in
pyproject.toml, or in any other distribution that brings a language of its own. Where the
grader runs from a checkout (pyproject.toml beside the package, as on a machine that runs
`python -m grader` from the repository), that file is read for this project's own entry
points, since installed metadata may be older than it or absent; every other distribution's
come from their installed metadata. The processes the grader starts may see neither (a
sandbox shows no checkout): the grading process tells them what it found (`ENV`). Reading
every distribution's metadata takes longer than the rest of `grade --help`, so the answer
is kept on the machine (grader.cache) under a stamp of sys.path's folders and the
checkout's pyproject.toml: installing or removing a distribution changes its folder.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path

from grader import cache
from grader.errors import GradeError
from grader.tracks.record import Track

GROUP = "tilecourse.tracks"
PROJECT = "tilecourse"
CHECKOUT = Path(__file__).resolve().parents[2] / "pyproject.toml"
ENV = "TILECOURSE_TRACKS"  # what the grading process found, in the processes it starts
CACHE_FILE = cache.ROOT / "tracks.json"


class BrokenTrack(GradeError):
    """An entry point of the group that does not name a track's record, or none at all."""


def declared() -> list[tuple[str, str, str]]:
    """(name, "module:attribute", who declares it) for every entry point of the group, this
    project's first; a name declared twice keeps its first."""
    if os.environ.get(ENV):
        return [tuple(point) for point in json.loads(os.environ[ENV])]
    stamp = _stamp()
    kept = cache.lookup(CACHE_FILE, stamp)
    if kept is not None:
        return [tuple(point) for point in kept["points"]]
    found = _read()
    cache.remember(CACHE_FILE, stamp, {"points": found}, keep=8)
    return found


def _stamp() -> str:
    """What the entry points depend on: each folder on sys.path as it stands (a distribution
    installed or removed changes its folder's time) and the checkout's pyproject.toml."""
    stood = []
    for path in [*sys.path, str(CHECKOUT)]:
        try:
            stood.append(f"{path}\t{os.stat(path or '.').st_mtime_ns}")
        except OSError:
            stood.append(f"{path}\t-")
    return hashlib.sha256("\n".join(stood).encode()).hexdigest()


def _read() -> list[tuple[str, str, str]]:
    own = _checkout_points()
    found = [(name, value, str(CHECKOUT)) for name, value in (own or {}).items()]
    from importlib.metadata import entry_points

    for point in entry_points(group=GROUP):
        owner = point.dist.name if point.dist is not None else "an unnamed distribution"
        if own is not None and owner.replace("_", "-").lower() == PROJECT:
            continue  # this checkout's metadata, maybe older than its pyproject.toml
        found.append((point.name, point.value, f"the {owner} distribution"))
    seen: set[str] = set()
    return [f for f in found if not (f[0] in seen or seen.add(f[0]))]


def _checkout_points() -> dict[str, str] | None:
    """This project's entry points of the group, from the checkout's pyproject.toml; None
    where the grader is not running from a checkout."""
    if not CHECKOUT.is_file():
        return None
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads(CHECKOUT.read_text(encoding="utf-8")).get("project", {})
    if project.get("name") != PROJECT:
        return None
    return dict(project.get("entry-points", {}).get(GROUP, {}))


def load(name: str, value: str, owner: str) -> Track:
    """The record an entry point names, checked to be the track it is declared as."""
    module, _, attribute = value.partition(":")
    try:
        record = getattr(importlib.import_module(module.strip()), attribute.strip())
    except (ImportError, AttributeError) as exc:
        raise BrokenTrack(f"The tile language {name!r}, declared by {owner} as {value!r}, "
                          f"cannot be loaded: {exc}") from None
    if not isinstance(record, Track) or record.name != name:
        raise BrokenTrack(f"{value!r}, declared by {owner} as the tile language {name!r}, "
                          f"is not the record (grader.tracks.Track) of a track named {name!r}")
    return record


def told() -> str:
    """What a process the grader starts is told of the languages (in `ENV`)."""
    return json.dumps(declared())


def installed() -> dict[str, Track]:
    """The tracks by name: those installed with the grader itself (no extra) first, then by
    name. Metadata lists entry points in an order of its own, and every listing of the tracks
    (messages, choices) keeps this one."""
    records = [load(name, value, owner) for name, value, owner in declared()]
    if not records:
        raise BrokenTrack(
            f"No tile language is declared: no `{GROUP}` entry point was found in this "
            "grader's metadata, which is older than its pyproject.toml. Install the grader "
            "again: `python -m grader.install` in its checkout (or `pip install -e .`).")
    return {t.name: t for t in sorted(records, key=lambda t: (t.extra is not None, t.name))}
