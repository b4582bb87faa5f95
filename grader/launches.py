"""Recording the kernel launches a submission makes.

The grader uses the recorded launches to name the tile (program) an erroneous element
belongs to, from the block sizes the kernel was really launched with. Recording hooks the
one method every Triton launch goes through (compiled or interpreted, autotuned or not) and
cuTile's `ct.launch`. Only languages the submission has already imported are hooked, so
recording never imports a kernel language itself.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class Launch:
    kernel: str
    grid: tuple[int, ...]
    constants: dict[str, Any] = field(default_factory=dict)  # int and bool arguments by name
    language: str = "triton"  # or "cutile"


def _grid(grid) -> tuple[int, ...]:
    return tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))


# --- Triton ----------------------------------------------------------------------------


def _triton_classes() -> list[type]:
    classes = []
    if "triton" in sys.modules:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        classes = [JITFunction, InterpretedFunction]
    return classes


def _triton_launch(kernel, args, kwargs, grid) -> Launch:
    bound = dict(zip(getattr(kernel, "arg_names", []), args))
    bound.update(kwargs)
    if callable(grid):
        grid = grid(bound)
    constants = {k: v for k, v in bound.items() if isinstance(v, (int, bool))}
    name = getattr(getattr(kernel, "fn", None), "__name__", type(kernel).__name__)
    return Launch(kernel=name, grid=_grid(grid), constants=constants)


@contextlib.contextmanager
def _recording_triton(launches: list[Launch]) -> Iterator[None]:
    originals = {cls: cls.run for cls in _triton_classes()}

    def wrap(original):
        def run(self, *args, grid, warmup, **kwargs):
            if not warmup:
                with contextlib.suppress(Exception):  # recording must never break a launch
                    launches.append(_triton_launch(self, args, kwargs, grid))
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

        return run

    for cls, original in originals.items():
        cls.run = wrap(original)
    try:
        yield
    finally:
        for cls, original in originals.items():
            cls.run = original


# --- cuTile ----------------------------------------------------------------------------


def cutile_parameters(kernel) -> list[tuple[str, bool]]:
    """(name, is it a ct.Constant) for each parameter of a @ct.kernel."""
    function = kernel._annotated_function
    names = list(function.pysig.parameters)
    return [(n, a.constant) for n, a in zip(names, function.parameter_annotations)]


def cutile_name(kernel) -> str:
    return kernel._annotated_function.pyfunc.__name__


def _cutile_launch(grid, kernel, args) -> Launch:
    constants = {name: value for (name, _), value in zip(cutile_parameters(kernel), args)
                 if isinstance(value, (int, bool))}
    return Launch(kernel=cutile_name(kernel), grid=_grid(grid), constants=constants,
                  language="cutile")


@contextlib.contextmanager
def _recording_cutile(launches: list[Launch]) -> Iterator[None]:
    ct = sys.modules.get("cuda.tile")
    if ct is None:
        yield
        return
    original = ct.launch

    def launch(stream, grid, kernel, kernel_args, *args, **kwargs):
        with contextlib.suppress(Exception):
            launches.append(_cutile_launch(grid, kernel, kernel_args))
        return original(stream, grid, kernel, kernel_args, *args, **kwargs)

    ct.launch = launch
    try:
        yield
    finally:
        ct.launch = original


@contextlib.contextmanager
def record_launches() -> Iterator[list[Launch]]:
    launches: list[Launch] = []
    with _recording_triton(launches), _recording_cutile(launches):
        yield launches
