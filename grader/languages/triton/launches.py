"""Triton's launches in the child (grader.sandbox.launches): the `run` method of every
launcher, compiled or interpreted, autotuned or not, hooked so that inside a recording
session a launch is proposed and not run."""

from __future__ import annotations

from grader.sandbox import launches


def install() -> None:
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    for cls in (JITFunction, InterpretedFunction, Autotuner, Heuristics):
        cls.run = _hooked(cls.run)


def _hooked(original):
    def run(self, *args, **kwargs):
        session = launches.current()
        if session is None or kwargs.get("warmup"):
            return original(self, *args, **kwargs)
        grid = kwargs.pop("grid", None)
        kwargs.pop("warmup", None)
        session.propose("triton", self, grid, args, kwargs, getattr(self, "configs", None))
        return None

    return run


def dtype_name(value) -> str | None:
    """A triton.language dtype passed to a kernel, by name."""
    if type(value).__module__.startswith("triton.language") \
            and hasattr(value, "primitive_bitwidth"):
        return value.name
    return None
