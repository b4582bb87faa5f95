"""A cuTile kernel file read and its kernels rebuilt, in the replay and the builder (the
reader part of the cuTile track, grader.tracks.contract.KernelReader). Light on purpose: the
grading process reads `spellings` to word its messages, and imports neither cuda.tile nor
PyTorch for it."""

from __future__ import annotations

from grader.languages.cutile.constants import CONSTRUCTORS as constructors  # noqa: F401
from grader.languages.cutile.spellings import CUTILE as spellings
from grader.replay.spellings import lookup

helpers_are_tile_code = True  # cuTile compiles what a kernel calls as tile code


def decorate(function, spelling: str, options: dict, node, interpreted: bool):
    return lookup(spelling, spellings)(function, **options)  # @ct.kernel, @ct.function


def parameters(kernel) -> list[str]:
    return list(kernel._annotated_function.pysig.parameters)


def optional(kernel) -> set[str]:
    """The parameters of a @ct.kernel that have a default."""
    signature = kernel._annotated_function.pysig
    return {n for n, p in signature.parameters.items() if p.default is not p.empty}
