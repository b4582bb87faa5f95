"""The functions, types and constants a kernel body may name: per language, a reviewed list,
kept as data in the language's wing (grader/languages/<name>/kernel_api.py), per version of
the language.

Being public in the language's package is not enough: Triton also exports what reads the
GPU's clock (`tl.extra.cuda.globaltimer`) or the multiprocessor a program runs on
(`tl.extra.cuda.smid`), and both pass its front end. A kernel that works less at some times
than at others earns speed it does not have. So grader.replay.bodies allows a spelling under
the language's modules only where the list names it (`KernelApi.allows`), and refuses every
other one at its line (`KernelApi.refusal`): with the reason the list gives for a name it
leaves out, else with what to use instead.

A list names, per module a kernel may reach ("triton.language", "cuda.tile"), the names it
may use from it; a name that is a module (`tl.math`) is itself a key. Below a listed name
that is no module (`ct.PaddingMode.ZERO`, `tl.float32.primitive_bitwidth`), an attribute is
left to the checks that come before and after the list: public, and the language's own
object (grader.replay.spellings).

Versions: `names` is the list reviewed for the version `base` of the language's
distribution ("3.6" of `triton`), and `changes` says, per later version reviewed, what it
adds and removes. The list for the installed version (major.minor, read from the
distribution's metadata) is the base with every change at or below it applied. A version
newer than every one reviewed gets the newest list: its new functions are refused until
someone reviews them, and tests/languages/test_kernel_api.py fails until then (every public
name of the installed version must be listed or left out with a reason, every listed name
must exist, and the installed version must be one reviewed).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import metadata
from typing import Mapping

Names = Mapping[str, frozenset[str]]  # module -> the names a kernel may use from it


@dataclass(frozen=True)
class Change:
    """What a version of the language adds to the list, and removes from it."""

    added: Names = field(default_factory=dict)
    removed: Names = field(default_factory=dict)


@dataclass(frozen=True, eq=False)  # hashed by identity: one list per language, cached
class KernelApi:
    """One language's reviewed kernel API."""

    distribution: str  # whose installed version picks the list (importlib.metadata)
    title: str  # the language, as a student reads it ("Triton")
    base: str  # the version `names` was reviewed for ("3.6")
    names: Names
    changes: Mapping[str, Change] = field(default_factory=dict)  # version -> its change
    # Spellings left off the list -> why, and what to write instead (the student reads it).
    left_out: Mapping[str, str] = field(default_factory=dict)
    instead: str = ""  # what to use instead of a name neither listed nor left out

    def reviewed(self) -> tuple[str, ...]:
        """The versions the list was reviewed for, oldest first."""
        return tuple(sorted({self.base, *self.changes}, key=_key))

    def at(self, version: str) -> dict[str, frozenset[str]]:
        """The list for `version` (major.minor): the base, and every change up to it."""
        found = {module: frozenset(names) for module, names in self.names.items()}
        for at in sorted(self.changes, key=_key):
            if _key(at) > _key(version):
                break
            change = self.changes[at]
            for module, names in change.added.items():
                found[module] = found.get(module, frozenset()) | names
            for module, names in change.removed.items():
                found[module] = found.get(module, frozenset()) - names
        return found

    def installed(self) -> str:
        """The installed version of the language, as major.minor."""
        return _installed(self.distribution)

    def current(self) -> dict[str, frozenset[str]]:
        return _current(self)

    def allows(self, spelling: str) -> bool:
        """Whether the list names `spelling` (a module on it, a name listed under its
        module, or an attribute below such a name)."""
        return self._first_unlisted(spelling) is None

    def refusal(self, spelling: str) -> str:
        """Why `spelling` may not be used in a kernel, and what to use instead."""
        unlisted = self._first_unlisted(spelling) or spelling
        if unlisted in self.left_out:
            return self.left_out[unlisted]
        return (f"it is not on the grader's list of {self.title} {self.installed()}'s kernel "
                f"functions; {self.instead}")

    def _first_unlisted(self, spelling: str) -> str | None:
        """The shortest part of `spelling` the list does not name (`tl.extra.cuda.smid` of
        `tl.extra.cuda.smid`), or None where it names the whole spelling."""
        names = self.current()
        parts = spelling.split(".")
        here = parts[0]
        if here not in names:
            return here
        for part in parts[1:]:
            if here not in names:
                return None  # an attribute of a listed name that is no module
            if part not in names[here]:
                return f"{here}.{part}"
            here = f"{here}.{part}"
        return None


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in version.split("."))


@functools.cache
def _installed(distribution: str) -> str:
    found = re.match(r"(\d+)\.(\d+)", metadata.version(distribution))
    if not found:
        raise RuntimeError(f"{distribution}'s version cannot be read")
    return f"{found.group(1)}.{found.group(2)}"


@functools.cache
def _current(api: KernelApi) -> dict[str, frozenset[str]]:
    return api.at(api.installed())
