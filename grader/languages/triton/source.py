"""Triton kernels built from source, as the replay runs them on a CPU (grader.replay.source):
each launch checked by the front end with its very arguments, then run by the interpreter."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from grader.languages.triton.fidelity import gpu_arithmetic
from grader.languages.triton.frontend import check, unwrap
from grader.languages.triton.program_order import programs_in_case_order


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


def front_end(name: str, kernel, args: tuple, kwargs: dict, path: Path) -> str | None:
    """The launch checked by Triton's front end, under each of an autotuner's configurations
    (the interpreter runs only the first)."""
    jit, configs = unwrap(kernel)
    bound = dict(zip(jit.arg_names, args))
    bound.update({k: v for k, v in kwargs.items() if k in jit.arg_names})
    for config in configs or [None]:
        merged = {**bound, **(config.kwargs if config is not None else {})}
        error = check(name, jit.fn, merged, path, getattr(jit, "do_not_specialize", ()))
        if error:
            return error
    return None


def launch(step, kernel, args: tuple, kwargs: dict) -> None:
    # a float16 accumulator rounded as a GPU rounds it; the programs in the case's order
    with gpu_arithmetic(), programs_in_case_order():
        kernel[_grid(step, kernel)](*args, **kwargs)


def _grid(step, kernel) -> Any:
    """The launch's grid; for an autotuned kernel, a grid function that gives each
    configuration the grid the wrapper's grid function gave it in the child."""
    from grader.replay.proposal import ProposalError

    if step.grids is None:
        return step.grid
    configs = getattr(kernel, "configs", None) or []
    if len(configs) != len(step.grids):
        raise ProposalError(f"the launch of {step.kernel} gives grids for {len(step.grids)} "
                            f"configurations; its @triton.autotune has {len(configs)}")

    def grid(meta: dict):
        for config, found in zip(configs, step.grids):
            if all(meta.get(k) == v for k, v in config.kwargs.items()):
                return found
        return step.grid

    return grid
