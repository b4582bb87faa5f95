"""What each stage computes: its parameters, how inputs are drawn, and the PyTorch reference.

A problem is the contract between the course and a submission: the function name a module
must export, the arguments it is called with, and the float32 result it must match. Which
shapes, dtypes and tolerances are graded is course content and lives in course.toml; this
module only knows how to turn one case of course.toml into tensors and a reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F

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

    @property
    def compute_bound(self) -> bool:
        return self.flops > 0


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


def _randn(shape, dtype, gen, scale=1.0, shift=0.0) -> torch.Tensor:
    # From a seeded generator, on its device: the same tensor in every process (and, on the
    # CPU, on every machine).
    drawn = torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device)
    return (drawn * scale + shift).to(dtype)


def _f32(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32)


# --- stage problems ----------------------------------------------------------------------


def _vector_add_call(p, dtype, gen):
    return Call((_randn(p["n"], dtype, gen), _randn(p["n"], dtype, gen)))


def _vector_add_ref(call):
    x, y = call.args
    return _f32(x) + _f32(y)


def _fused_gelu_call(p, dtype, gen):
    m, n = p["M"], p["N"]
    return Call((_randn((m, n), dtype, gen), _randn(n, dtype, gen), _randn(n, dtype, gen)))


def _softmax_call(p, dtype, gen):
    return Call((_randn((p["M"], p["N"]), dtype, gen, scale=p["scale"]),))


def _matmul_call(p, dtype, gen):
    m, n, k = p["M"], p["N"], p["K"]
    return Call((_randn((m, k), dtype, gen), _randn((k, n), dtype, gen)))


def _matmul_ref(call):
    a, b = call.args
    # Exact float32 products: TF32 would hide the error budget we grant fp32 submissions.
    return torch.matmul(_f32(a), _f32(b))


def _attention_call(p, dtype, gen):
    shape = (p["B"], p["H"], p["N"], p["D"])
    q, k, v = (_randn(shape, dtype, gen) for _ in range(3))
    kwargs = {"causal": p["causal"]}
    if p["sm_scale"] is not None:
        kwargs["sm_scale"] = p["sm_scale"]
    return Call((q, k, v), kwargs)


def _size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _compiled(fn):
    """torch.compile'd on first use, so importing the grader never compiles anything."""
    cache = {}

    def run(call):
        if "fn" not in cache:
            cache["fn"] = torch.compile(fn)
        return cache["fn"](*call.args, **call.kwargs)

    return run


def _gelu_bias(x, w, b):
    return F.gelu(x * w + b, approximate="tanh")


def _softmax_last(x):
    return torch.softmax(x, dim=-1)


def _sdpa(call, backend=None):
    q, k, v = call.args
    scale = call.kwargs.get("sm_scale")
    causal = call.kwargs["causal"]
    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, backend)):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


# The references: the same PyTorch operations as the eager baselines, in float32.
def _in_f32(call: Call) -> Call:
    return Call(tuple(_f32(t) for t in call.args), call.kwargs)


def _fused_gelu_ref(call):
    return _gelu_bias(*_in_f32(call).args)


def _softmax_ref(call):
    return _softmax_last(*_in_f32(call).args)


def _attention_ref(call):
    return _sdpa(_in_f32(call))


PROBLEMS: dict[str, Problem] = {
    p.id: p
    for p in [
        Problem(
            id="vector_add",
            function="vector_add",
            signature="vector_add(x, y) -> Tensor",
            params=(Param("n", int, doc="length of x and y"),),
            make_call=_vector_add_call,
            reference=_vector_add_ref,
            work=lambda p, dt: Work(3 * p["n"] * _size(dt)),
            baselines={"torch": lambda c: torch.add(*c.args)},
        ),
        Problem(
            id="fused_gelu",
            function="fused_gelu",
            signature="fused_gelu(x, weight, bias) -> Tensor",
            params=(Param("M", int, doc="rows of x"), Param("N", int, doc="columns of x")),
            make_call=_fused_gelu_call,
            reference=_fused_gelu_ref,
            work=lambda p, dt: Work((2 * p["M"] * p["N"] + 2 * p["N"]) * _size(dt)),
            baselines={"torch": lambda c: _gelu_bias(*c.args),
                       "torch.compile": _compiled(_gelu_bias)},
        ),
        Problem(
            id="softmax",
            function="softmax",
            signature="softmax(x) -> Tensor",
            params=(
                Param("M", int, doc="rows"),
                Param("N", int, doc="columns (the softmax axis)"),
                Param("scale", float, 1.0, doc="standard deviation of the inputs"),
            ),
            make_call=_softmax_call,
            reference=_softmax_ref,
            work=lambda p, dt: Work(2 * p["M"] * p["N"] * _size(dt)),
            baselines={"torch": lambda c: _softmax_last(*c.args),
                       "torch.compile": _compiled(_softmax_last)},
        ),
        Problem(
            id="matmul",
            function="matmul",
            signature="matmul(a, b) -> Tensor",
            params=(Param("M", int), Param("N", int), Param("K", int)),
            make_call=_matmul_call,
            reference=_matmul_ref,
            work=lambda p, dt: Work((p["M"] * p["K"] + p["K"] * p["N"] + p["M"] * p["N"]) * _size(dt),
                                    2 * p["M"] * p["N"] * p["K"]),
            baselines={"torch": lambda c: torch.matmul(*c.args)},
        ),
        Problem(
            id="flash_attention",
            function="flash_attention",
            signature="flash_attention(q, k, v, causal=False, sm_scale=None) -> Tensor",
            params=(
                Param("B", int, doc="batch"),
                Param("H", int, doc="heads"),
                Param("N", int, doc="sequence length"),
                Param("D", int, doc="head dimension"),
                Param("causal", bool, False),
                Param("sm_scale", float, None, doc="softmax scale; default 1/sqrt(D)"),
            ),
            make_call=_attention_call,
            reference=_attention_ref,
            # Each of q, k, v read once and the output written once; 4*N*N*D flops per head
            # (QK^T and PV), half of them skipped under a causal mask.
            work=lambda p, dt: Work(
                4 * p["B"] * p["H"] * p["N"] * p["D"] * _size(dt),
                4 * p["B"] * p["H"] * p["N"] ** 2 * p["D"] // (2 if p["causal"] else 1)),
            baselines={"torch": _sdpa,
                       "sdpa-flash": lambda c: _sdpa(c, "FLASH_ATTENTION")},
        ),
    ]
}
