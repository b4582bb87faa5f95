"""The parts every problem is made of, and the helpers the problem files share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


REQUIRED = object()  # a Param default meaning "every case must give this"


@dataclass(frozen=True)
class Param:
    """One knob of a case in course.toml (a size, a flag, an input scale)."""

    name: str
    type: type
    default: Any = REQUIRED
    doc: str = ""
    choices: tuple = ()  # the only values a case may give (empty: any value of the type)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass
class Call:
    """The arguments a submission is called with, and the shape of the result it owes."""

    args: tuple
    kwargs: dict = field(default_factory=dict)

    def to(self, device: str) -> "Call":
        """The same call with its tensor arguments on `device`."""
        def move(v):
            return v.to(device) if isinstance(v, torch.Tensor) else v

        return Call(tuple(move(a) for a in self.args), {k: move(v) for k, v in self.kwargs.items()})

    def tensors(self) -> list[torch.Tensor]:
        values = list(self.args) + list(self.kwargs.values())
        return [v for v in values if isinstance(v, torch.Tensor)]


@dataclass(frozen=True)
class Work:
    """The least a correct kernel must do: bytes moved (each input read once, each output
    written once) and floating-point operations. Speed is judged against these."""

    bytes: int
    flops: int = 0


@dataclass(frozen=True)
class Problem:
    id: str
    function: str
    signature: str
    params: tuple[Param, ...]
    make_call: Callable[[dict, torch.dtype, torch.Generator], Call]
    reference: Callable[[Call], torch.Tensor]
    work: Callable[[dict, torch.dtype], Work]
    # PyTorch implementations a submission is timed against, in the input dtype.
    baselines: dict[str, Callable[[Call], torch.Tensor]] = field(default_factory=dict)
    # What a wrong output shows where no hypothesis of the course holds (observations
    # only, grader.problems.evidence): given the output, the reference and the inputs.
    explain: Callable[[Any], list[Any]] | None = None
    # The experiments course.toml's hypotheses name, by name: given the Evidence, the
    # output a mistake gives (a recompute), or an evidence.Experiment with the facts its
    # findings name; None where the case cannot tell it (its K fits one tile, ...).
    experiments: dict[str, Any] = field(default_factory=dict)
    # What is wrong with a case's parameters beyond their types (course.toml's checker
    # reports each message under the case): given the parameters, defaults filled in.
    check: Callable[[dict], list[str]] | None = None

    @property
    def arg_names(self) -> list[str]:
        """Argument names, read from the signature: `f(q, k, causal=False)` -> q, k, causal."""
        inside = self.signature[self.signature.index("(") + 1 : self.signature.index(")")]
        return [part.split("=")[0].strip() for part in inside.split(",")]

    def tensor_names(self, call: Call) -> list[str]:
        """The names of the call's tensor arguments, in the order of Call.tensors()."""
        names = list(zip(self.arg_names, call.args)) + list(call.kwargs.items())
        return [name for name, value in names if isinstance(value, torch.Tensor)]

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def draw(self, params: dict, dtype: str, seed: int, device: str = "cpu") -> Call:
        """The inputs of a case: the same tensors in every process that draws them on the
        same kind of device (the timed calls draw theirs on the GPU, where it is fast)."""
        generator = torch.Generator(device=device).manual_seed(seed)
        return self.make_call(params, DTYPES[dtype], generator)


def randn(shape, dtype, gen, scale=1.0, shift=0.0) -> torch.Tensor:
    # From a seeded generator, on its device: the same tensor in every process (and, on the
    # CPU, on every machine).
    drawn = torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device)
    return (drawn * scale + shift).to(dtype)


# How a 2-D input is laid out in memory (the `layout` parameter of the stages whose lessons
# promise that any layout works): the kernel must follow the strides it is given.
LAYOUTS = ("contiguous", "transposed", "sliced")
LAYOUT_DOC = ("how 2-D inputs are laid out: contiguous (row-major), transposed (a column-major "
              "view) or sliced (a view of some columns of a wider matrix)")
# A sliced input is columns SLICE_START .. SLICE_START + n of a matrix SLICE_EXTRA columns
# wider: its rows are not adjacent and it does not start at its storage's first element.
# Odd, so that the row stride is a multiple of no tile or vector width.
SLICE_START, SLICE_EXTRA = 3, 7


def layout_param() -> "Param":
    return Param("layout", str, "contiguous", doc=LAYOUT_DOC, choices=LAYOUTS)


def randn_2d(rows: int, cols: int, layout: str, dtype, gen, scale: float = 1.0) -> torch.Tensor:
    """A rows x cols input in `layout`. Transposed: the transpose of a contiguous cols x rows
    tensor (strides (1, rows)); sliced: columns of a wider contiguous one (strides
    (cols + SLICE_EXTRA, 1), storage offset SLICE_START)."""
    if layout == "transposed":
        return randn((cols, rows), dtype, gen, scale).t()
    if layout == "sliced":
        wide = randn((rows, cols + SLICE_EXTRA), dtype, gen, scale)
        return wide[:, SLICE_START:SLICE_START + cols]
    if layout != "contiguous":
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    return randn((rows, cols), dtype, gen, scale)


def laid_out(x: torch.Tensor, layout: str) -> torch.Tensor:
    """The values of the 2-D `x` in `layout`, as randn_2d lays its inputs out (a sliced
    view's neighbouring columns hold zeros): for inputs whose values are drawn first and
    placed after."""
    if layout == "transposed":
        return x.t().contiguous().t()
    if layout == "sliced":
        rows, cols = x.shape
        wide = torch.zeros((rows, cols + SLICE_EXTRA), dtype=x.dtype, device=x.device)
        wide[:, SLICE_START:SLICE_START + cols] = x
        return wide[:, SLICE_START:SLICE_START + cols]
    if layout != "contiguous":
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    return x.contiguous()


def layout_check(*dims: tuple[str, str]):
    """A Problem.check for the layout of 2-D inputs, each given as its (rows, cols) parameter
    names: a view with a dimension of 1 is laid out like a contiguous tensor, so a layout case
    needs every such dimension at least 2 to test anything."""
    def check(params: dict) -> list[str]:
        layout = params.get("layout", "contiguous")
        if layout == "contiguous":
            return []
        small = [name for pair in dims for name in pair if params[name] < 2]
        if not small:
            return []
        names = " and ".join(dict.fromkeys(small))
        return [f"layout = {layout!r} needs {names} of at least 2: an input with a dimension "
                "of 1 is laid out like a contiguous one, so the case would not test strides"]

    return check


def misread_strides(x: torch.Tensor, candidates) -> list[tuple[int, ...]]:
    """Of `candidates`, the strides a kernel may wrongly read x with: other than x's own, and
    inside x's storage (x's shape read with them reaches no element past its end), in
    order, each once."""
    storage = x.untyped_storage().nbytes() // x.element_size() - x.storage_offset()
    return [s for s in dict.fromkeys(candidates) if s != tuple(x.stride())
            and sum((size - 1) * step for size, step in zip(x.shape, s)) < storage]


def f32(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32)


def element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def in_f32(call: Call) -> Call:
    """The call with its tensor arguments in float32: references compute in float32."""
    return Call(tuple(f32(t) for t in call.args), call.kwargs)


def compiled(fn):
    """torch.compile'd on first use, so importing the grader never compiles anything."""
    cache = {}

    def run(call):
        if "fn" not in cache:
            cache["fn"] = torch.compile(fn)
        return cache["fn"](*call.args, **call.kwargs)

    return run
