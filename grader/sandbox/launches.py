"""The kernel launches a submission's wrapper makes: intercepted in the child, written down.

The hooks are installed once in the grading child, before the submission is imported
(`install`): each kernel language's recorder part hooks its own launch paths (Triton's launchers,
cuTile's launch function), which ask `current` for the session. Outside a session they only
launch. During one (`recording`):

- each launch is handed to the session's recorder (grader.sandbox.recorder) as a proposal
  for the grader's replay, and not run: the kernels run only in the replay process;
- its tensors are shown to the host watch (grader.sandbox.host), for its messages;
- with `capture`, launches are collected (kernel, arguments) for `grade compile`.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator

import torch

from grader.tracks import TRACKS, wing


class Session:
    """The launches of one recorded call (or, with `capture`, the launches collected for
    `grade compile`, which builds them without a GPU)."""

    def __init__(self, host=None, recorder=None, capture: bool = False):
        self.host = host  # a grader.sandbox.host.HostWatch, or None
        self.recorder = recorder  # a grader.sandbox.recorder.Recorder, or None
        self.capture = capture
        self.captured: list[tuple[Any, tuple]] = []  # (kernel, arguments), with capture
        self.count = 0

    def propose(self, language: str, kernel: Any, grid: Any, args: tuple, kwargs: dict,
                configs: list | None = None) -> None:
        with self._launching(language, kernel, args, kwargs):
            if self.recorder is not None:
                self.recorder.launch(language, kernel, grid, args, kwargs, configs)

    def refuse(self, language: str, kernel: Any, args: tuple, kwargs: dict, why: str) -> None:
        """A launch its language itself refuses (a grid that is not a tuple): the call is
        refused at the student's launch line, `why`, and the host watch still sees the
        tensors the launch was given, so that it does not also say no kernel had them."""
        with self._launching(language, kernel, args, kwargs):
            if self.recorder is not None:
                self.recorder.refuse(why, launch=True)

    def _launching(self, language: str, kernel: Any, args: tuple, kwargs: dict):
        self.count += 1
        tensors = [v for v in [*args, *kwargs.values()] if isinstance(v, torch.Tensor)]
        name = (getattr(getattr(kernel, "fn", None), "__name__", None)
                or f"a {TRACKS[language].title} kernel")
        return self.host.launching(name, tensors) if self.host else contextlib.nullcontext()


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
    """Hook the launch paths of the kernel languages imported so far (idempotent): each
    language's recorder part hooks its own (grader.tracks.contract.LaunchRecorder.hook_launches)."""
    for name, track in TRACKS.items():
        if track.module in sys.modules and name not in _installed:
            wing(track).recorder.hook_launches()
            _installed.add(name)
