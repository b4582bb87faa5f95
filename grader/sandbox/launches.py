"""The kernel launches a submission's wrapper makes: intercepted in the child, written down.

The hooks are installed once in the grading child, before the submission is imported
(`install`): on the `run` method of every Triton launcher (compiled or interpreted, autotuned
or not) and on cuTile's launch function itself, both in `cuda.tile` and in the extension
module it comes from, so a submission that imported `launch` under another name goes
through them too. Outside a session they only launch. During one (`recording`):

- each launch is handed to the session's recorder (grader.sandbox.recorder) as a proposal
  for the grader's replay, and not run: the kernels run only in the replay process;
- its tensors are shown to the host watch (grader.sandbox.host), for its messages;
- with `capture`, cuTile launches are collected (kernel, arguments) for the compile check.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator

import torch

from grader.tracks import TRACKS, wing


class Session:
    """The launches of one recorded call (or, with `capture`, cuTile launches collected for
    the compile check)."""

    def __init__(self, host=None, recorder=None, capture: bool = False):
        self.host = host  # a grader.sandbox.host.HostWatch, or None
        self.recorder = recorder  # a grader.sandbox.recorder.Recorder, or None
        self.capture = capture
        self.captured: list[tuple[Any, tuple]] = []  # (kernel, arguments), with capture
        self.count = 0

    def propose(self, language: str, kernel: Any, grid: Any, args: tuple, kwargs: dict,
                configs: list | None = None) -> None:
        self.count += 1
        tensors = [v for v in [*args, *kwargs.values()] if isinstance(v, torch.Tensor)]
        name = (getattr(getattr(kernel, "fn", None), "__name__", None)
                or f"a {TRACKS[language].title} kernel")
        watch = self.host.launching(name, tensors) if self.host else contextlib.nullcontext()
        with watch:
            if self.recorder is not None:
                self.recorder.launch(language, kernel, grid, args, kwargs, configs)


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


def current() -> Session | None:
    """The session recording now, if any: what a language's hooked launch asks first."""
    return _session


def install() -> None:
    """Hook the launch paths of the kernel languages imported so far (idempotent)."""
    for name, hook in HOOKS.items():
        if TRACKS[name].module in sys.modules and name not in _installed:
            hook()
            _installed.add(name)


# --- cuTile ----------------------------------------------------------------------------


def _install_cutile() -> None:
    import cuda.tile as ct
    import cuda.tile._cext as cext

    hooked = _cutile_launch(ct.launch)
    ct.launch = cext.launch = hooked


def _cutile_launch(original):
    def launch(stream, grid, kernel, kernel_args, *more, **options):
        session = _session
        if session is None:
            return original(stream, grid, kernel, kernel_args, *more, **options)
        if session.capture:
            session.captured.append((kernel, tuple(kernel_args)))
            return None
        # cuTile's own launch takes tuples only ("Grid must be a tuple"): a proposal holds
        # what cuTile accepts, so that the simulator and the GPU agree.
        for what, value, says in (("grid", grid, "Grid must be a tuple"),
                                  ("kernel arguments", kernel_args,
                                   "launch expects a tuple as the fourth argument")):
            if not isinstance(value, tuple) and session.recorder is not None:
                session.count += 1
                session.recorder.refuse(
                    f"ct.launch takes its {what} as a tuple, and cuTile refuses a "
                    f"{type(value).__name__} there (\"{says}\"): write "
                    f"({'n' if what == 'grid' else 'a, b'},) with the trailing comma for one element",
                    launch=True)
                return None
        session.propose("cutile", kernel, grid, kernel_args, {})
        return None

    return launch


# Per track (grader.tracks): the hook that makes its launches proposals.
HOOKS = {"triton": wing("triton").hook_launches, "cutile": _install_cutile}
