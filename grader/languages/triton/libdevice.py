"""CUDA's libdevice on Triton's interpreter: what a GPU computes, computed by numpy.

A kernel may call libdevice (`tl.extra.cuda.libdevice.tanh`, or the same functions from
`triton.language.extra.libdevice`; kernel_api.py lists them). Triton's interpreter runs
neither: the backend-neutral module is a table of empty stand-ins that the GPU compiler
replaces (each returns None, and the kernel fails a line later on "unsupported operand
type(s) ... 'NoneType'"), and CUDA's own calls a library the interpreter has not. So a
kernel a GPU runs failed on the CPU with a message about neither. While the replay runs a
launch on the CPU, both modules' functions are CUDA's, given the interpreter's semantics,
and its call of a library function computes the function by numpy, in float64 rounded to
the result's type once (within the couple of units of the last place libdevice's own
functions promise, far inside any stage's tolerance). A function with no numpy form here fails at the student's
line with its name and what to write instead.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

from grader.languages.triton.kernel_api import LIBDEVICE

_ERF = np.vectorize(math.erf, otypes=[np.float64])
_ERFC = np.vectorize(math.erfc, otypes=[np.float64])
_LGAMMA = np.vectorize(math.lgamma, otypes=[np.float64])
_TGAMMA = np.vectorize(math.gamma, otypes=[np.float64])


def _round_half_away(x):  # CUDA's round(): halves away from zero, not to even
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# libdevice's functions by their name without `__nv_` and the `f` of the float32 variant.
NUMPY: dict[str, Callable] = {
    "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "atan2": np.arctan2,
    "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x),
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "cbrt": np.cbrt,
    "rcbrt": lambda x: 1.0 / np.cbrt(x), "pow": np.power, "powi": np.power,
    "hypot": np.hypot, "rhypot": lambda x, y: 1.0 / np.hypot(x, y),
    "fabs": np.abs, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": _round_half_away, "rint": np.rint, "nearbyint": np.rint,
    "fmax": np.fmax, "fmin": np.fmin, "fdim": lambda x, y: np.maximum(x - y, 0.0),
    "fmod": np.fmod, "copysign": np.copysign, "fma": lambda x, y, z: x * y + z,
    "erf": _ERF, "erfc": _ERFC, "lgamma": _LGAMMA, "tgamma": _TGAMMA,
    "isnan": np.isnan, "isinf": np.isinf, "signbit": np.signbit,
    "saturate": lambda x: np.clip(x, 0.0, 1.0),
}
# Not the fast_* approximations: their error on a GPU grows with the argument (__expf's to a
# dozen units of the last place and more), so numpy's exact answer could pass a kernel a GPU
# fails. With no CPU form they fail at their line, saying so: the CPU is then the stricter.


def named(symbol: str) -> str:
    """`__nv_tanhf` -> `tanh`: a library symbol as a kernel calls it (the float32 variant's
    `f` dropped where the name without it is libdevice's, as kernel_api.py lists them)."""
    name = symbol.removeprefix("__nv_")
    known = NUMPY.keys() | LIBDEVICE
    return name[:-1] if name not in known and name.endswith("f") and name[:-1] in known \
        else name


@contextmanager
def libdevice_on_the_cpu() -> Iterator[None]:
    """For the length of a launch: libdevice's functions run in the interpreter. Where this
    Triton's interpreter is not the one this was written against, nothing is changed."""
    try:
        from triton.language.extra import libdevice as neutral
        from triton.language.extra.cuda import libdevice as cuda
        from triton.runtime import interpreter
        semantic = interpreter.interpreter_semantic
        tensor_handle, np_dtype = interpreter.TensorHandle, interpreter._get_np_dtype
    except (ImportError, AttributeError):
        yield
        return
    builder, saved = interpreter.interpreter_builder, []

    def given_semantic(function):
        def call(*args, **kwargs):
            kwargs.pop("_semantic", None)
            return function(*args, _semantic=semantic, **kwargs)
        return call

    def extern_elementwise(lib_name, lib_path, symbol, arguments, result_type, is_pure):
        name = named(symbol)
        function = NUMPY.get(name)
        if function is None:
            raise NotImplementedError(
                f"libdevice.{name} has no CPU form in the grader; write it with tl.* "
                "functions (tl.exp, tl.sqrt, ...), or grade on a GPU")
        with np.errstate(all="ignore"):
            values = function(*(np.asarray(a.data, dtype=np.float64)
                                if np.asarray(a.data).dtype.kind == "f" else a.data
                                for a in arguments))
        scalar = getattr(result_type, "scalar", result_type)
        return tensor_handle(np.asarray(values).astype(np_dtype(scalar)), scalar)

    functions = {name: f for name, f in vars(cuda).items()
                 if callable(f) and not name.startswith("_")
                 and getattr(f, "__module__", None) == cuda.__name__}
    for module in (cuda, neutral):
        for name, function in functions.items():
            if module is cuda or hasattr(neutral, name):
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, given_semantic(function))
    builder.create_extern_elementwise = extern_elementwise
    try:
        yield
    finally:
        del builder.create_extern_elementwise  # the class's again
        for module, name, function in reversed(saved):
            setattr(module, name, function)
