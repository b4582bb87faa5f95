"""What a wrapper proposes: its kernel launches and host steps, as plain data.

The child records one graded call of the student's wrapper as a `Proposal` and sends it as
JSON. Nothing in it runs as code: kernels are named (the replay finds them among the file's
top-level kernels), tensors are references to a buffer (an input, or a fresh allocation
made by an earlier step) with a view's geometry, and every other argument is a number, a
boolean, a string or a dtype. The replay checks the whole proposal (`parse`) before it runs
any of it; a proposal that breaks a rule is refused with a message for the student.

Steps, in the order the wrapper made them:

- `alloc`: a fresh tensor (`torch.empty`, `zeros`, the output of a copy ...), buffer
  "alloc.N"; it starts as poison (grader.replay.poison) unless a `fill` follows;
- `fill`: a view set to one value (`zeros`, `fill_`, `zero_`);
- `copy`: a view copied into another, converting its dtype (`copy_`, `.float()`, `clone`);
- `launch`: one kernel launch: which kernel, the grid, the arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from grader.tracks import TRACKS

MAX_STEPS = 256
MAX_LAUNCHES = 64
MAX_DIMS = 8
MAX_PROGRAMS = 1 << 31  # per launch; a grid past this is no kernel of this course
MAX_TEXT = 200  # characters of a string argument or a name
DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
          "bool")


class ProposalError(ValueError):
    """The proposal breaks a rule; the message is for the student."""


@dataclass(frozen=True)
class Ref:
    """A view of a buffer: `offset` bytes from the buffer's first element."""

    buffer: str  # "input.N" or "alloc.N"
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str

    @property
    def itemsize(self) -> int:
        return getattr(torch, self.dtype).itemsize

    def span(self) -> int:
        """Bytes from the view's first element to just past its last."""
        if any(s == 0 for s in self.shape):
            return 0
        return (1 + sum((n - 1) * s for n, s in zip(self.shape, self.stride))) * self.itemsize


@dataclass(frozen=True)
class Alloc:
    index: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str

    def ref(self) -> Ref:
        return Ref(f"alloc.{self.index}", 0, self.shape, self.stride, self.dtype)


@dataclass(frozen=True)
class Fill:
    target: Ref
    value: Any  # int, float or bool


@dataclass(frozen=True)
class Copy:
    target: Ref
    source: Ref


@dataclass(frozen=True)
class Launch:
    language: str  # its track's name (grader.tracks.TRACKS)
    kernel: str  # a top-level name of the submission's file
    grid: Any  # a tuple of ints, or an int where the wrapper gave one
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    # Triton's autotuner picks a configuration in the replay: the grid the wrapper's grid
    # function gives for each of the decorator's configurations, in their order.
    grids: tuple | None = None
    # Which of them the replay runs (grader.replay.variants), never part of the proposal:
    # None for the autotuner's own pick.
    configuration: int | None = None

    def tensors(self) -> list[Ref]:
        return [v for v in [*self.args, *self.kwargs.values()] if isinstance(v, Ref)]


@dataclass
class Proposal:
    steps: list = field(default_factory=list)
    result: Ref | None = None
    returned: str | None = None  # what the wrapper returned when it was not a known tensor

    @property
    def launches(self) -> list[Launch]:
        return [s for s in self.steps if isinstance(s, Launch)]

    def to_json(self) -> dict:
        return {"steps": [_step_json(s) for s in self.steps],
                "result": None if self.result is None else _ref_json(self.result),
                "returned": self.returned}


# --- to JSON --------------------------------------------------------------------------------


def _ref_json(ref: Ref) -> dict:
    return {"buffer": ref.buffer, "offset": ref.offset, "shape": list(ref.shape),
            "stride": list(ref.stride), "dtype": ref.dtype}


def value_json(value: Any) -> dict:
    """An argument as JSON; the caller has made it one of the kinds a proposal holds."""
    if isinstance(value, Ref):
        return {"tensor": _ref_json(value)}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": value if math.isfinite(value) else repr(value)}
    if isinstance(value, str):
        return {"str": value}
    if value is None:
        return {"none": True}
    if isinstance(value, DType):
        return {value.kind: value.name}
    if isinstance(value, tuple):
        return {"tuple": [value_json(v) for v in value]}
    raise TypeError(f"not a proposal value: {type(value).__name__}")


def _step_json(step) -> dict:
    if isinstance(step, Alloc):
        return {"op": "alloc", "index": step.index, "shape": list(step.shape),
                "stride": list(step.stride), "dtype": step.dtype}
    if isinstance(step, Fill):
        return {"op": "fill", "target": _ref_json(step.target), "value": value_json(step.value)}
    if isinstance(step, Copy):
        return {"op": "copy", "target": _ref_json(step.target), "source": _ref_json(step.source)}
    return {"op": "launch", "language": step.language, "kernel": step.kernel,
            "grid": list(step.grid) if isinstance(step.grid, tuple) else step.grid,
            "grids": None if step.grids is None else [list(g) for g in step.grids],
            "args": [value_json(v) for v in step.args],
            "kwargs": {k: value_json(v) for k, v in step.kwargs.items()}}


@dataclass(frozen=True)
class DType:
    """A dtype argument: a torch dtype ("torch"), or a dtype of a kernel language (its
    track's name: grader.tracks.contract.LaunchRecorder.dtype_name and KernelReader.dtype)."""

    kind: str
    name: str


# --- from JSON, checked ---------------------------------------------------------------------


def parse(data: Any, inputs: dict[str, tuple[tuple[int, ...], tuple[int, ...], str]],
          max_alloc_bytes: int) -> Proposal:
    """The proposal `data` (JSON) as objects, checked against the call's inputs (name ->
    shape, stride, dtype) and the bytes it may allocate; raises ProposalError."""
    if not isinstance(data, dict) or set(data) != {"steps", "result", "returned"}:
        raise ProposalError("the proposal is not an object of steps, result and returned")
    steps = _list(data["steps"], "steps", MAX_STEPS)
    buffers = {name: _extent(shape, stride, dtype) for name, (shape, stride, dtype) in inputs.items()}
    parsed, allocated = [], 0
    for i, step in enumerate(steps):
        where = f"step {i + 1}"
        op = step.get("op") if isinstance(step, dict) else None
        if op == "alloc":
            alloc = Alloc(_int(step.get("index"), where), _dims(step.get("shape"), where),
                          _dims(step.get("stride"), where), _dtype(step.get("dtype"), where))
            name = f"alloc.{alloc.index}"
            if name in buffers:
                raise ProposalError(f"{where} allocates {name} twice")
            size = alloc.ref().span()
            allocated += size
            if allocated > max_alloc_bytes:
                raise ProposalError(f"the wrapper allocates more than {max_alloc_bytes >> 20} MiB "
                                    "in one call, more than this stage can need")
            buffers[name] = size
            parsed.append(alloc)
        elif op == "fill":
            parsed.append(Fill(_ref(step.get("target"), buffers, where),
                               _number(step.get("value"), where)))
        elif op == "copy":
            parsed.append(Copy(_ref(step.get("target"), buffers, where),
                               _ref(step.get("source"), buffers, where)))
        elif op == "launch":
            parsed.append(_launch(step, buffers, where))
        else:
            raise ProposalError(f"{where} is not a step the grader replays")
    if len([s for s in parsed if isinstance(s, Launch)]) > MAX_LAUNCHES:
        raise ProposalError(f"the wrapper launches more than {MAX_LAUNCHES} kernels in one call")
    result = None if data["result"] is None else _ref(data["result"], buffers, "the result")
    returned = data["returned"]
    if returned is not None and not isinstance(returned, str):
        raise ProposalError("what the wrapper returned is described by something not text")
    return Proposal(parsed, result, None if returned is None else returned[:MAX_TEXT])


def _extent(shape, stride, dtype) -> int:
    return Ref("", 0, tuple(shape), tuple(stride), dtype).span()


def _list(value, where: str, limit: int) -> list:
    if not isinstance(value, list):
        raise ProposalError(f"{where} is not a list")
    if len(value) > limit:
        raise ProposalError(f"{where} holds more than {limit} entries")
    return value


def _int(value, where: str, low: int = 0, high: int = 1 << 62) -> int:
    if type(value) is not int or not low <= value <= high:  # noqa: E721 - no bools
        raise ProposalError(f"{where} holds a number out of range")
    return value


def _dims(value, where: str) -> tuple[int, ...]:
    return tuple(_int(v, where) for v in _list(value, where, MAX_DIMS))


def _dtype(value, where: str) -> str:
    if value not in DTYPES:
        raise ProposalError(f"{where} names a dtype the grader does not replay")
    return value


def _text(value, where: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise ProposalError(f"{where} holds a name that is not short text")
    return value


def _ref(data, buffers: dict[str, int], where: str) -> Ref:
    if not isinstance(data, dict) or set(data) != {"buffer", "offset", "shape", "stride", "dtype"}:
        raise ProposalError(f"{where} is not a tensor reference")
    ref = Ref(_text(data["buffer"], where), _int(data["offset"], where),
              _dims(data["shape"], where), _dims(data["stride"], where),
              _dtype(data["dtype"], where))
    if len(ref.shape) != len(ref.stride):
        raise ProposalError(f"{where} has a shape and strides of different lengths")
    if ref.buffer not in buffers:
        raise ProposalError(f"{where} uses {ref.buffer}, which no earlier step made")
    if ref.offset % ref.itemsize or ref.offset + ref.span() > buffers[ref.buffer]:
        raise ProposalError(f"{where} is a view that reaches outside {ref.buffer}")
    return ref


def _number(data, where: str):
    if isinstance(data, dict) and len(data) == 1:
        (kind, value), = data.items()
        if kind == "bool" and isinstance(value, bool):
            return value
        if kind == "int" and type(value) is int:  # noqa: E721
            return value
        if kind == "float":
            return _float(value, where)
    raise ProposalError(f"{where} fills with something that is not a number")


def _float(value, where: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if value in ("inf", "-inf", "nan"):
        return float(value)
    raise ProposalError(f"{where} holds a float that is not one")


def _value(data, buffers: dict[str, int], where: str, depth: int = 0):
    if not isinstance(data, dict) or len(data) != 1 or depth > 2:
        raise ProposalError(f"{where} is not an argument the grader replays")
    (kind, value), = data.items()
    if kind == "tensor":
        return _ref(value, buffers, where)
    if kind == "none" and value is True:
        return None
    if kind == "str":
        return _text(value, where)
    if kind == "torch" or kind in TRACKS:
        return DType(kind, _text(value, where))
    if kind == "tuple":
        return tuple(_value(v, buffers, where, depth + 1) for v in _list(value, where, 16))
    if kind not in ("bool", "int", "float"):
        raise ProposalError(f"{where} holds a {kind!r}, not an argument the grader replays")
    return _number(data, where)


def _grid(value, where: str):
    if type(value) is int:  # noqa: E721
        return _int(value, where, 0, MAX_PROGRAMS)
    grid = tuple(_int(v, where, 0, MAX_PROGRAMS) for v in _list(value, where, 3))
    if math.prod(grid) > MAX_PROGRAMS:
        raise ProposalError(f"{where} launches more than {MAX_PROGRAMS} programs")
    return grid


def _launch(step: dict, buffers: dict[str, int], where: str) -> Launch:
    if set(step) != {"op", "language", "kernel", "grid", "grids", "args", "kwargs"}:
        raise ProposalError(f"{where} is not a launch the grader replays")
    if step["language"] not in TRACKS:
        raise ProposalError(f"{where} is a launch in no language the course teaches")
    kwargs = step["kwargs"]
    if not isinstance(kwargs, dict) or len(kwargs) > 64:
        raise ProposalError(f"{where} has keyword arguments that are not a short table")
    grids = step["grids"]
    return Launch(
        step["language"], _text(step["kernel"], where), _grid(step["grid"], where),
        tuple(_value(v, buffers, where) for v in _list(step["args"], where, 64)),
        {_text(k, where): _value(v, buffers, where) for k, v in kwargs.items()},
        None if grids is None else tuple(_grid(g, where) for g in _list(grids, where, 256)))
