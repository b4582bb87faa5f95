"""Triton's decorators, applied by the grader to a kernel's bare `def`
(grader.replay.definitions has read their options as data): `@triton.jit`, and
`@triton.autotune(configs=[...])` over literal configurations."""

from __future__ import annotations

import ast
from typing import Any, Callable

from grader.languages.triton.spellings import TRITON
from grader.replay.literals import NotData


def decorate(function: Any, spelling: str, options: dict, node: ast.expr,
             interpreted: bool) -> Any:
    if TRITON.decorators[spelling] == "jit":
        return _jit_class(interpreted)(function, **options)
    import triton

    options["configs"] = list(options.get("configs", ()))
    inner = getattr(function, "fn", function)  # the JIT function's Python function
    parameters = inner.__code__.co_varnames[:inner.__code__.co_argcount]
    for config in options["configs"]:
        strange = sorted(set(getattr(config, "kwargs", {})) - set(parameters))
        if not isinstance(config, triton.Config) or strange:
            raise NotData(node, "each of the autotuner's configurations is a triton.Config "
                                "whose dict names parameters of the kernel"
                                + (f" (`{strange[0]}` is not one)" if strange else ""))
    # The autotuner holds the configurations; it never tunes in the replay: on a CPU each
    # configuration is run in turn (grader.replay.variants), on a GPU the replay times the
    # builder's binaries itself (grader.replay.binaries).
    return triton.autotune(**options)(function)


def _jit_class(interpreted: bool) -> Callable:
    if interpreted:
        from triton.runtime.interpreter import InterpretedFunction

        return InterpretedFunction
    from triton.runtime.jit import JITFunction

    return JITFunction
