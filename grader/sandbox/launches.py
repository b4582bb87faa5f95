"""The kernel launches a submission makes: recorded, shown to the host watch, checked.

The hooks are installed once in the grading child, before the submission is imported
(`install`): on the method every Triton launch goes through (compiled or interpreted,
autotuned or not), on the autotuner's benchmarking, and on cuTile's launch function itself,
both in `cuda.tile` and in the extension module it comes from, so a submission that imported
`launch` under another name goes through them too. Outside a graded call they only launch.
During one (`Session`, through `recording`):

- each launch is recorded (kernel, grid, int and bool arguments): grader.judge.compare places a
  wrong element in the tile its program owned, with the block sizes really used;
- its tensors are shown to the host watch (grader.sandbox.host), which the launch pauses: what
  happens inside is the kernel language's business;
- on a CPU, where an interpreter or the simulator runs the kernel body as Python, the kernel
  is also given to the real compiler's front end (grader.sandbox.frontends), so that a body no GPU
  compiler would accept fails here too;
- a Triton grid given as a function is evaluated before the pause, where the watch sees it.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from grader.backends.build import cutile_name, cutile_parameters
from grader.sandbox import frontends


@dataclass
class Launch:
    kernel: str
    grid: tuple[int, ...]
    constants: dict[str, Any] = field(default_factory=dict)  # int and bool arguments by name
    language: str = "triton"  # or "cutile"


class Session:
    """The launches of one graded call (or, with `capture`, cuTile launches collected for
    the compile check instead of run)."""

    def __init__(self, host=None, capture: bool = False):
        self.host = host  # a grader.sandbox.host.HostWatch, or None
        self.capture = capture
        self.launches: list[Launch] = []
        self.captured: list[tuple[Any, tuple]] = []  # (kernel, arguments), with capture
        self.compile_errors: list[str] = []
        self.unchecked: str | None = None  # why the front end could not check a kernel
        self._depth = 0

    def run(self, launch: Launch | None, tensors: list[torch.Tensor], go: Callable[[], Any],
            frontend: Callable[[], str | None] | None = None):
        if launch is not None:
            self.launches.append(launch)
        if self._depth:  # inside another launch (an autotuner's benchmark): just run
            return go()
        if frontend is not None:
            try:
                error = frontend()
            except frontends.Unavailable as exc:
                self.unchecked, error = str(exc), None
            except Exception as exc:  # noqa: BLE001 - the check's failure is not the kernel's
                self.unchecked, error = f"the grader's compile check broke: {exc!r}", None
            if error and error not in self.compile_errors:
                self.compile_errors.append(error)
        watch = self.host.launching(launch.kernel if launch else "the autotuner",
                                    tensors) if self.host else contextlib.nullcontext()
        self._depth += 1
        try:
            with watch:
                return go()
        finally:
            self._depth -= 1


_session: Session | None = None
_installed: set[str] = set()


@contextlib.contextmanager
def recording(session: Session) -> Iterator[Session]:
    global _session
    saved, _session = _session, session
    try:
        yield session
    finally:
        _session = saved


def install() -> None:
    """Hook the launch paths of the kernel languages imported so far (idempotent)."""
    if "triton" in sys.modules and "triton" not in _installed:
        _install_triton()
        _installed.add("triton")
    if "cuda.tile" in sys.modules and "cutile" not in _installed:
        _install_cutile()
        _installed.add("cutile")


def _grid(grid) -> tuple[int, ...]:
    return tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))


def _tensors(values) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor)]


def _constants(bound: dict) -> dict[str, Any]:
    return {k: v for k, v in bound.items() if isinstance(v, (int, bool))}


# --- Triton ----------------------------------------------------------------------------


def _install_triton() -> None:
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    for cls in (JITFunction, InterpretedFunction):
        cls.run = _triton_run(cls.run, interpreted=cls is InterpretedFunction)
    Autotuner._bench = _benchmark(Autotuner._bench)


def _triton_run(original, interpreted: bool):
    def run(self, *args, grid, warmup, **kwargs):
        session = _session
        if session is None or warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        bound = dict(zip(getattr(self, "arg_names", []), args))
        bound.update(kwargs)
        if callable(grid):
            grid = grid(bound)
        name = getattr(getattr(self, "fn", None), "__name__", type(self).__name__)
        launch = Launch(kernel=name, grid=_grid(grid), constants=_constants(bound))
        frontend = (lambda: frontends.triton(self, bound)) if interpreted else None
        return session.run(launch, _tensors(bound.values()),
                           lambda: original(self, *args, grid=grid, warmup=warmup, **kwargs),
                           frontend)

    return run


def _benchmark(original):
    # Timing configurations is the autotuner's own machinery: it runs paused.
    def bench(self, *args, **kwargs):
        session = _session
        if session is None:
            return original(self, *args, **kwargs)
        return session.run(None, _tensors(args), lambda: original(self, *args, **kwargs))

    return bench


# --- cuTile ----------------------------------------------------------------------------


def _install_cutile() -> None:
    import cuda.tile as ct
    import cuda.tile._cext as cext

    from grader import cutile_sim

    target = ct.launch
    simulated = target is cutile_sim.launch
    hooked = _cutile_launch(target, simulated)
    ct.launch = cext.launch = hooked


def _cutile_launch(original, simulated: bool):
    def launch(stream, grid, kernel, kernel_args, *more, **options):
        session = _session
        if session is None:
            return original(stream, grid, kernel, kernel_args, *more, **options)
        args = tuple(kernel_args)
        if session.capture:
            session.captured.append((kernel, args))
            return None
        try:
            names = [n for n, _ in cutile_parameters(kernel)]
            record = Launch(kernel=cutile_name(kernel), grid=_grid(grid),
                            constants=_constants(dict(zip(names, args))), language="cutile")
        except (AttributeError, TypeError):  # not a @ct.kernel: cuTile says so when it runs
            record = Launch(kernel=repr(kernel), grid=_grid(grid), language="cutile")
        frontend = (lambda: frontends.cutile(kernel, args)) if simulated else None
        return session.run(record, _tensors(args),
                           lambda: original(stream, grid, kernel, kernel_args, *more, **options),
                           frontend)

    return launch
