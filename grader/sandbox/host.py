"""What the host side of a submission does during the graded call, and what it may not.

A kernel submission's host code allocates outputs, views and reshapes tensors, reads shapes
and strides, and launches kernels. The work itself belongs in the kernels. During the call
(grader.sandbox.submission), `HostWatch` holds the submission to that with an allowlist, and with a
check of where every tensor came from:

- torch functions and Tensor methods are allowed by name (`host_functions`, course.toml),
  ATen operators by name (`host_ops`); anything else (a matmul, an in-place `exp_`,
  `Tensor.numpy`, `torch.from_numpy`) is a violation named after it;
- the tensors the call may hand to a kernel or return are "known": its inputs and what the
  allowed functions made from them. A kernel launched on, or an output that is, anything
  else (made in a thread, outside the watch, from numpy) is a violation;
- the memory of a known tensor may change only inside a kernel launch or through an
  allowed function: the watch keeps a copy of each and compares it at every launch and at
  the end, so a write through a numpy view, a thread or ctypes is found;
- the output must be a known tensor that some launch was given.

Inside a launch (grader.sandbox.launches) the watch is paused: there, the kernel language's own
machinery runs (and, on a CPU, the interpreter or the simulator executing the kernel body,
which the language's front end checks the way a real compiler would: grader.tracks.contract.CpuRunner).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode, resolve_name
from torch.utils._python_dispatch import TorchDispatchMode

from grader.course import SubmissionRules
from grader.replay.poison import FRESH, Guarded, fresh

# Printing a tensor (debugging) reads its values through many operators: allowed, unwatched.
_PRINTING = {"torch.Tensor.__repr__", "torch.Tensor.__str__", "torch.Tensor.__format__"}
VIOLATIONS_KEPT = 5


@dataclass
class _Known:
    name: str
    tensor: torch.Tensor
    snapshot: torch.Tensor  # its storage's bytes as the watch last saw them
    launched: bool = False  # handed to a kernel launch


class HostWatch:
    """The watch over one graded call; `violations` says what the host did wrong."""

    def __init__(self, rules: SubmissionRules, inputs: list[tuple[str, torch.Tensor]],
                 recorder=None):
        self.recorder = recorder  # a grader.sandbox.recorder.Recorder: host steps go there
        self.functions = frozenset(rules.host_functions)
        self.ops = frozenset(rules.host_ops)
        self.violations: list[str] = []
        self.allocations: list[Guarded] = []  # fresh tensors, with guard regions
        self._known: dict[tuple, _Known] = {}  # by storage: views share their base's entry
        self._paused = 0
        self._modes = (_Functions(self), _Operators(self))
        for name, tensor in inputs:
            self._know(tensor, f"input `{name}`")

    def __enter__(self) -> "HostWatch":
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(*exc)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    @property
    def watching(self) -> bool:
        return self._paused == 0

    def violate(self, message: str) -> None:
        if message not in self.violations and len(self.violations) < VIOLATIONS_KEPT:
            self.violations.append(message)

    # --- tensors and their memory ----------------------------------------------------------

    def _know(self, tensor: torch.Tensor, name: str, launched: bool = False) -> None:
        with self.paused():
            key = _key(tensor)
            if key not in self._known:
                self._known[key] = _Known(name, tensor, _bytes(tensor), launched)

    def _launched(self, tensors: list[torch.Tensor]) -> bool:
        """Whether any of `tensors` was given to a kernel (a copy of one is its output too)."""
        with self.paused():
            return any(getattr(self._known.get(_key(t)), "launched", False) for t in tensors)

    def _all_known(self, used_by: str, tensors: list[torch.Tensor]) -> None:
        """Data enters the call's tensors only from its inputs, never from outside."""
        with self.paused():
            unknown = [t for t in tensors if _key(t) not in self._known]
        if unknown:
            self.violate(f"{used_by} was given a tensor that is neither an input nor made by the "
                         "allowed host code of this call (one made in a thread, from numpy, or "
                         "out of the grader's sight)")

    def _resnapshot(self, tensor: torch.Tensor) -> None:
        with self.paused():
            known = self._known.get(_key(tensor))
            if known is not None:
                known.snapshot = _bytes(tensor)

    def _check_memory(self, when: str) -> None:
        """Every known tensor holds what the watch last saw: nothing wrote it unseen."""
        with self.paused():
            for known in self._known.values():
                if not torch.equal(_bytes(known.tensor), known.snapshot):
                    self.violate(f"the host changed {known.name} outside a kernel ({when}), "
                                 "through something the grader does not see (a numpy view, a "
                                 "thread, raw memory): results must be written by your kernel")
                    known.snapshot = _bytes(known.tensor)

    @contextlib.contextmanager
    def launching(self, kernel: str, tensors: list[torch.Tensor]) -> Iterator[None]:
        """Around one kernel launch: its tensors must be known; what it writes is its own."""
        self._check_memory(f"before launching {kernel}")
        self._all_known(kernel, tensors)
        with self.paused():
            for tensor in tensors:
                if _key(tensor) in self._known:
                    self._known[_key(tensor)].launched = True
        try:
            with self.paused():
                yield
        finally:
            with self.paused():
                for known in self._known.values():
                    known.snapshot = _bytes(known.tensor)

    def finish(self, output: Any) -> None:
        """At the end of the call: memory unchanged since the last look, the output known."""
        self._check_memory("after the last launch")
        if not isinstance(output, torch.Tensor):
            return  # the parent reports what came back instead
        with self.paused():
            known = self._known.get(_key(output))
        if known is None:
            self.violate("it returned a tensor that is neither an input nor made by the allowed "
                         "host code of this call: return the tensor your kernel wrote")
        elif not known.launched:
            self.violate(f"it returned {known.name}, which no kernel launch was given: the "
                         "output must be written by your kernel")

    # --- what the modes see -----------------------------------------------------------------

    def function(self, func, types, args, kwargs):
        name = resolve_name(func) or getattr(func, "__qualname__", repr(func))
        if name in _PRINTING:
            with self.paused():
                return func(*args, **kwargs)
        if name not in self.functions:
            self.violate(f"it called {name} on the host: during the graded call the host code "
                         "may only allocate, view, copy and launch kernels (host_functions in "
                         "course.toml); the stage's work belongs in your kernel")
            with self.paused():  # run it, so that the call goes on to be judged as a whole
                return func(*args, **kwargs)
        self._all_known(name, _tensors((args, kwargs)))
        result = func(*args, **kwargs)
        if func in FRESH and isinstance(result, torch.Tensor) and self.recorder is None:
            with self.paused():
                result, guarded = fresh(result, func.__name__)
            self.allocations += [guarded] if guarded else []
        derived = self._launched(_tensors(args))
        for tensor in _tensors(result):
            self._know(tensor, f"a tensor made by {name}", derived)
        if name.endswith("_"):  # an allowed in-place function: its writes are seen
            for tensor in _tensors(args):
                self._resnapshot(tensor)
        return result

    def operator(self, func, args, kwargs):
        name = func.overloadpacket.__name__
        if name not in self.ops:
            self.violate(f"it ran aten::{name} on the host: during the graded call the host "
                         "may only allocate, view, copy and launch kernels (host_ops in "
                         "course.toml); the stage's work belongs in your kernel")
        result = func(*args, **kwargs)
        if self.recorder is not None:
            self.recorder.operator(func, args, kwargs, result)
        return result


class _Functions(TorchFunctionMode):
    def __init__(self, watch: HostWatch):
        super().__init__()
        self.watch = watch

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if not self.watch.watching:
            return func(*args, **(kwargs or {}))
        return self.watch.function(func, types, args, kwargs or {})


class _Operators(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing is compiled under this mode. Left at PyTorch's default, the first operator
        # seen would import torch._dynamo, seconds of every child's start.
        return False

    def __init__(self, watch: HostWatch):
        super().__init__()
        self.watch = watch

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.watch.watching:
            return func(*args, **(kwargs or {}))
        return self.watch.operator(func, args, kwargs or {})


def _key(tensor: torch.Tensor) -> tuple:
    storage = tensor.untyped_storage()
    return tensor.device.type, tensor.device.index, storage.data_ptr(), storage.nbytes()


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of every byte of the tensor's storage."""
    storage = tensor.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(storage).clone()


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []
