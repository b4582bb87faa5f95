"""A Triton kernel file read and its kernels rebuilt, in the replay and the builder (the
reader part of the Triton track, grader.tracks.contract.KernelReader). Light on purpose: the
grading process reads `spellings` to word its messages, and imports neither Triton nor
PyTorch for it."""

from __future__ import annotations

import inspect
from typing import Any

from grader.languages.triton.constants import CONSTRUCTORS as constructors  # noqa: F401
from grader.languages.triton.decorators import decorate  # noqa: F401
from grader.languages.triton.frontend import unwrap
from grader.languages.triton.spellings import TRITON as spellings  # noqa: F401

helpers_are_tile_code = False  # Triton would call an undecorated helper as Python


def dtype(name: str) -> Any:
    import triton.language as tl

    found = getattr(tl, name, None)
    return found if isinstance(found, tl.dtype) else None


def parameters(kernel) -> list[str]:
    return list(unwrap(kernel)[0].arg_names)


def optional(kernel) -> set[str]:
    """The parameters with a default, and those every autotuner configuration sets."""
    jit, configs = unwrap(kernel)
    found = {name for name, p in inspect.signature(jit.fn).parameters.items()
             if p.default is not inspect.Parameter.empty}
    if configs:
        found |= set.intersection(*(set(c.kwargs) for c in configs))
    return found
