"""One call of the student's wrapper, written down as a proposal (grader.replay.proposal).

In the child, the wrapper runs on the grader's inputs under the host watch
(grader.sandbox.host), with every kernel launch intercepted (grader.sandbox.launches) and
not run. The `Recorder` follows the tensors of the call by their storage: the inputs, and
what the ATen operators the watch sees make of them. It writes down:

- allocations (`empty`, `zeros`, `full`, the outputs of `clone` and `_to_copy`), fills
  (`fill_`, `zero_`) and copies (`copy_`, `clone`, `_to_copy`), in order;
- each launch: the kernel's top-level name in the file, the grid as integers, every
  argument as a tensor reference (buffer, byte offset, shape, strides, dtype) or a plain
  number, boolean, string or dtype;
- which tensor the wrapper returned.

Views need no step: a reference carries its geometry. Anything the recorder cannot write as
one of these (a tensor made by other host arithmetic, an object as an argument, a kernel
with no top-level name) makes the proposal refused, with the reason, for the student.
"""

from __future__ import annotations

import numbers
from typing import Any

import torch

from grader.tracks import TRACKS, wing
from grader.replay.proposal import (MAX_STEPS, Alloc, Copy, DType, Fill, Launch, Proposal,
                                    ProposalError, Ref)

_EMPTY = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
# allocation operators that also fill: the position of the fill value among the arguments
_FILLED = {"zeros": None, "zeros_like": None, "new_zeros": None, "ones": None, "ones_like": None,
           "new_ones": None, "full": 1, "full_like": 1, "new_full": 2}
_FILL_VALUE = {"zeros": 0, "zeros_like": 0, "new_zeros": 0, "ones": 1, "ones_like": 1,
               "new_ones": 1}
_COPY_NEW = {"_to_copy", "clone"}


class Recorder:
    def __init__(self, module_globals: dict[str, Any], inputs: list[tuple[str, torch.Tensor]]):
        self.names = module_globals
        self.steps: list = []
        self.refused: str | None = None  # the first reason the call cannot be replayed
        self.refused_launch = False  # it was a launch that could not be written down
        self._bases: dict[tuple, tuple[str, torch.Tensor]] = {}  # storage -> (buffer, base)
        self._allocs = 0
        for index, (_, tensor) in enumerate(inputs):
            self._bases[_key(tensor)] = (f"input.{index}", tensor)

    def refuse(self, why: str, launch: bool = False) -> None:
        if self.refused is None:
            place = self._caller_line() if launch else None
            self.refused = f"{place}: {why}" if place else why
            self.refused_launch = launch

    def _caller_line(self) -> str | None:
        """`line N (`source`)` of the submission's file that is making this launch."""
        import linecache
        import sys

        path = self.names.get("__file__")
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != path:
            frame = frame.f_back
        if frame is None:
            return None
        source = linecache.getline(path, frame.f_lineno).strip()
        return f"line {frame.f_lineno}" + (f" (`{source}`)" if source else "")

    # --- host steps, as the watch's dispatch mode sees them --------------------------------

    def operator(self, func, args: tuple, kwargs: dict, result: Any) -> None:
        name = func.overloadpacket.__name__
        try:
            if name in _EMPTY or name in _FILLED:
                for tensor in _tensors(result):
                    ref = self._alloc(tensor)
                    if name in _FILLED:
                        position = _FILLED[name]
                        value = _FILL_VALUE.get(name) if position is None else args[position]
                        self._add(Fill(ref, _number(value)))
            elif name in ("fill_", "zero_"):
                value = 0 if name == "zero_" else args[1]
                self._add(Fill(self.ref(args[0], "a fill"), _number(value)))
            elif name == "copy_":
                self._add(Copy(self.ref(args[0], "a copy"), self.ref(args[1], "a copy")))
            elif name in _COPY_NEW and isinstance(result, torch.Tensor):
                source = self.ref(args[0], f"aten::{name}")
                if result.device != args[0].device:
                    raise ProposalError("the wrapper moved a tensor to another device: inputs, "
                                        "outputs and kernels all stay on the inputs' device")
                self._add(Copy(self._alloc(result), source))
            elif _writes(func) and any(_key(t) in self._bases for t in _tensors(args)):
                raise ProposalError(f"aten::{name} changed a tensor on the host; the grader "
                                    "replays only your kernel launches, allocations, fills, "
                                    "copies and views, so the work belongs in your kernel")
        except ProposalError as exc:
            self.refuse(str(exc))

    def _alloc(self, tensor: torch.Tensor) -> Ref:
        alloc = Alloc(self._allocs, tuple(tensor.shape), tuple(tensor.stride()),
                      _dtype_name(tensor))
        self._allocs += 1
        self._bases[_key(tensor)] = (f"alloc.{alloc.index}", tensor)
        self._add(alloc)
        return alloc.ref()

    def _add(self, step) -> None:
        if len(self.steps) >= MAX_STEPS:
            raise ProposalError(f"the wrapper made more than {MAX_STEPS} host steps and launches "
                                "in one call")
        self.steps.append(step)

    def ref(self, tensor: Any, used_by: str) -> Ref:
        """`tensor` as a reference to a buffer of this call; ProposalError if it is none."""
        if type(tensor) is not torch.Tensor:  # noqa: E721 - subclasses do not cross
            raise ProposalError(f"{used_by} was given a {type(tensor).__name__}, not a plain "
                                "torch.Tensor")
        found = self._bases.get(_key(tensor))
        if found is None:
            raise ProposalError(f"{used_by} was given a tensor that is neither an input nor made "
                                "by the allowed host steps of this call (torch.empty, zeros, a "
                                "copy, a view): one computed on the host cannot be replayed")
        buffer, base = found
        offset = tensor.data_ptr() - base.data_ptr()
        return Ref(buffer, offset, tuple(tensor.shape), tuple(tensor.stride()), _dtype_name(tensor))

    # --- launches ---------------------------------------------------------------------------

    def launch(self, language: str, kernel: Any, grid: Any, args: tuple, kwargs: dict,
               configs: list | None = None) -> None:
        """One launch, as the wrapper made it; `grid` may be Triton's grid function."""
        try:
            name = self._top_level_name(kernel, language)
            bound = {**dict(zip(getattr(kernel, "arg_names", ()), args)), **kwargs}
            grids = None
            if configs:  # every configuration's grid, each graded (grader.replay.variants)
                grids = tuple(_grid(grid({**bound, **c.all_kwargs()}) if callable(grid) else grid)
                              for c in configs)
                grid = grids[0]
            elif callable(grid):
                grid = grid(bound)
            self._add(Launch(language, name, _grid(grid),
                             tuple(self._value(a, name, i) for i, a in enumerate(args)),
                             {k: self._value(v, name, k) for k, v in kwargs.items()}, grids))
        except ProposalError as exc:
            self.refuse(str(exc), launch=True)

    def _top_level_name(self, kernel: Any, language: str) -> str:
        for name, value in self.names.items():
            if value is kernel:
                return name
        what = TRACKS[language].decorator
        raise ProposalError(f"the wrapper launched a kernel that is not bound to a top-level name "
                            f"of the file: define each kernel with {what} at the top level and "
                            "launch it by that name")

    def _value(self, value: Any, kernel: str, where: Any) -> Any:
        what = f"argument {where!r} of {kernel}" if isinstance(where, str) else \
            f"argument {where + 1} of {kernel}"
        if isinstance(value, torch.Tensor):
            return self.ref(value, what)
        if value is None or type(value) in (bool, int, float, str):
            return value
        if isinstance(value, torch.dtype):
            return DType("torch", str(value).removeprefix("torch."))
        for track in TRACKS.values():  # a dtype of a kernel language, kept by its name
            name = wing(track).recorder.dtype_name(value)
            if name is not None:
                return DType(track.name, name)
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if isinstance(value, (tuple, list)):
            return tuple(self._value(v, kernel, where) for v in value)
        raise ProposalError(f"{what} is a {type(value).__name__}: the grader replays launches "
                            "whose arguments are tensors, numbers, booleans, strings or dtypes")

    # --- the end ----------------------------------------------------------------------------

    def finish(self, output: Any) -> Proposal:
        proposal = Proposal(list(self.steps))
        if isinstance(output, torch.Tensor) and type(output) is not torch.Tensor:  # noqa: E721
            proposal.returned = f"{type(output).__name__} (a subclass of torch.Tensor)"
        elif isinstance(output, torch.Tensor):
            try:
                proposal.result = self.ref(output, "the returned value")
            except ProposalError as exc:
                self.refuse(str(exc))
        else:
            proposal.returned = type(output).__name__
        return proposal


def _grid(grid: Any) -> Any:
    if isinstance(grid, (tuple, list)):
        return tuple(_integer(g) for g in grid)
    return _integer(grid)


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ProposalError(f"the grid holds a {type(value).__name__}, not an integer")
    return int(value)


def _number(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise ProposalError(f"a fill value is a {type(value).__name__}, not a number")


def _writes(func) -> bool:
    schema = getattr(func, "_schema", None)
    return any(a.alias_info is not None and a.alias_info.is_write
               for a in getattr(schema, "arguments", ()))


def _dtype_name(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _key(tensor: torch.Tensor) -> tuple:
    storage = tensor.untyped_storage()
    return tensor.device.type, tensor.device.index, storage.data_ptr(), storage.nbytes()


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []
