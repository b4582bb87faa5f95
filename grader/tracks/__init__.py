"""The tile languages a course is taught in: a record per language, and the contracts its
code keeps with the grader.

    record.py    Track, Words and Parts: a language as data, which its own package holds
    contract.py  what the grader asks of a language, one contract per process that asks
    found.py     the languages installed: the `tilecourse.tracks` entry points

A language is a package (below grader/languages/, or in a distribution of its own) that
holds its record and a module per part of its code. The layers below the languages (the
backends, the replay, the sandbox, the judge) reach one only through `TRACKS` and `wing`,
never by an import or by its name.

Standard library only: every layer of the grader reads it.
"""

from __future__ import annotations

import importlib
from functools import cached_property
from types import SimpleNamespace

from grader.tracks.contract import (BackendProbe, CpuRunner, GpuBuilder, KernelReader,
                                    LaunchRecorder, NotSupported, Unavailable,
                                    WorkerBootstrap)
from grader.tracks.record import Parts, Track, Words

__all__ = ["AUTO_ORDER", "TRACKS", "NotSupported", "Parts", "Track", "Unavailable", "Wing",
           "Words", "wing"]


class Wing:
    """A language's code, a part per process that asks, each imported and checked against
    its contract when first asked for: naming a wing imports neither the language nor
    PyTorch."""

    def __init__(self, track: Track):
        self.track = track

    def _part(self, contract: type) -> SimpleNamespace:
        where = getattr(self.track.parts, contract.role)
        if where is None:  # a part the language has not: every member says so
            return _absent(self.track, contract)
        return contract.answered_by(self.track, importlib.import_module(where))

    @cached_property
    def backends(self) -> BackendProbe:
        return self._part(BackendProbe)

    @cached_property
    def worker(self) -> WorkerBootstrap:
        return self._part(WorkerBootstrap)

    @cached_property
    def recorder(self) -> LaunchRecorder:
        return self._part(LaunchRecorder)

    @cached_property
    def reader(self) -> KernelReader:
        return self._part(KernelReader)

    @cached_property
    def cpu(self) -> CpuRunner:
        return self._part(CpuRunner)

    @cached_property
    def gpu(self) -> GpuBuilder:
        return self._part(GpuBuilder)


def _absent(track: Track, contract: type) -> SimpleNamespace:
    def refuse(*args, **kwargs):
        raise NotSupported(f"the {track.title} track has no {contract.role} part")

    defaults = contract(track)
    return SimpleNamespace(**{n: getattr(defaults, n) if not getattr(
        getattr(contract, n), "required", False) else refuse for n in contract.members()})


_wings: dict[str, Wing] = {}


def wing(track: str | Track) -> Wing:
    """The wing of a track (its record, or its name): how the layers below the languages
    reach one."""
    record = TRACKS[track] if isinstance(track, str) else track
    found = _wings.get(record.name)
    if found is None or found.track is not record:
        found = _wings[record.name] = Wing(record)
    return found


def __getattr__(name: str):
    # The languages are found when first asked for, not when this module is imported: a
    # record's own module imports this package for its types.
    if name == "TRACKS":
        from grader.tracks.found import installed

        globals()["TRACKS"] = found = installed()
        return found
    if name == "AUTO_ORDER":
        ranked = sorted((t for t in __getattr__("TRACKS").values() if t.auto_rank is not None),
                        key=lambda t: t.auto_rank)
        globals()["AUTO_ORDER"] = order = tuple(t.name for t in ranked)
        return order
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
