"""Triton's launches in the child (grader.sandbox.launches): the `run` method of every
launcher, compiled or interpreted, autotuned or not, hooked so that inside a recording
session a launch is proposed and not run."""

from __future__ import annotations

from grader.sandbox import launches


def hook_launches() -> None:
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
        if not callable(grid) and not isinstance(grid, (tuple, list)):
            # Triton's launch takes len(grid): a number of programs is refused on a GPU, so
            # a proposal holds what Triton accepts, and the student reads why at the launch.
            session.refuse("triton", self, args, kwargs, not_a_tuple(grid, "is"))
            return None
        if callable(grid):
            grid = _returning_a_tuple(grid)
        session.propose("triton", self, grid, args, kwargs, getattr(self, "configs", None))
        return None

    return run


def not_a_tuple(grid, verb: str) -> str:
    """Why a grid that is not a tuple is refused, and the fix: `verb` says whether it "is"
    the grid or what the grid function "returns"."""
    fix = "(n,)" if verb == "is" else "return (n,)"
    if grid is None:  # no grid at all (`kernel[None]`, a grid function without a return)
        given = "the launch gives no grid" if verb == "is" else \
            "the launch's grid function returns no grid (is its `return` missing?)"
        return (f"{given}: Triton takes the grid as a tuple of program counts, one per axis, "
                f"and refuses a launch without one on a GPU; write {fix} with the trailing "
                "comma for a 1-D grid")
    what = type(grid).__name__
    article = "an" if what[:1] in "aeiou" else "a"
    given = "the launch's grid is" if verb == "is" else "the launch's grid function returns"
    return (f"{given} {article} {what}, not a tuple: Triton takes the grid as a tuple of "
            f"program counts, one per axis, and refuses {article} {what} on a GPU "
            f"(\"object of type '{what}' has no len()\"); write {fix} with the trailing comma "
            "for a 1-D grid")


def _returning_a_tuple(grid):
    """A grid function whose result the recorder takes only as a tuple (or list)."""
    from grader.replay.proposal import ProposalError

    def checked(meta):
        found = grid(meta)
        if not isinstance(found, (tuple, list)):
            raise ProposalError(not_a_tuple(found, "returns"))
        return found

    return checked


def dtype_name(value) -> str | None:
    """A triton.language dtype passed to a kernel, by name."""
    if type(value).__module__.startswith("triton.language") \
            and hasattr(value, "primitive_bitwidth"):
        return value.name
    return None
