"""A kernel's function as the simulator runs it: its `ct` rebound to the simulated namespace,
Python's max and min elementwise on tiles, and every call of PyTorch refused in cuTile's
terms (a GPU kernel cannot call PyTorch)."""

from __future__ import annotations

import builtins
import types

import torch

from grader.languages.cutile.simulator.arithmetic import maximum, minimum
from grader.languages.cutile.simulator.errors import SimulatorError
from grader.languages.cutile.simulator.namespace import API, namespace
from grader.languages.cutile.simulator.values import Tile


def kernel_function(kernel):
    function = getattr(getattr(kernel, "_annotated_function", None), "pyfunc", None)
    if function is None:
        function = getattr(kernel, "__wrapped__", kernel)
    if not isinstance(function, types.FunctionType):
        raise SimulatorError(f"{kernel!r} is not a @ct.kernel function")
    return function


def _elementwise(builtin, pairwise):
    """Python's max or min in a kernel: elementwise on tiles, as in cuTile."""
    def choose(*values, **options):
        if len(values) > 1 and any(isinstance(v, Tile) for v in values):
            out = values[0]
            for v in values[1:]:
                out = pairwise(out, v)
            return out
        return builtin(*values, **options)

    return choose


def _is_torch(module_name: str) -> bool:
    return module_name == "torch" or module_name.startswith("torch.")


# Operations a student reaches for in PyTorch that cuTile writes as Python operators.
_OPERATORS = {"add": "+", "sub": "-", "subtract": "-", "mul": "*", "multiply": "*",
              "div": "/", "divide": "/", "true_divide": "/", "neg": "unary -"}


class _TorchInKernel(types.ModuleType):
    """What a name bound to torch (or torch.nn.functional, ...) means inside a simulated
    kernel. A GPU kernel cannot call PyTorch: cuTile rejects it when it compiles, but on the
    simulator the call would reach real PyTorch and fail with a puzzling TypeError about
    Tiles. Calling one says so; dtypes, classes and other values pass through."""

    def __init__(self, module: types.ModuleType, name: str):
        super().__init__(module.__name__)
        self._module, self._name = module, name

    def __getattr__(self, attribute: str):
        value = getattr(self._module, attribute)
        if isinstance(value, types.ModuleType) and _is_torch(value.__name__):
            return _TorchInKernel(value, f"{self._name}.{attribute}")
        if not callable(value) or isinstance(value, (type, torch.dtype)):
            return value  # torch.float32, torch.Tensor in an isinstance: no PyTorch runs
        return _refuse(f"{self._name}.{attribute}", attribute)


def _refuse(called: str, attribute: str):
    def call(*args, **kwargs):
        raise SimulatorError(f"{called} was called inside a @ct.kernel: PyTorch does not run "
                             f"inside a kernel; {_instead(attribute)}")

    return call


def _instead(attribute: str) -> str:
    """The cuTile way to write a PyTorch operation, where there is an obvious one."""
    if attribute in API and attribute[0].islower():
        return f"use ct.{attribute} on tiles"
    if attribute in _OPERATORS:
        return f"use the operator {_OPERATORS[attribute]} on tiles"
    return "use ct.* operations on tiles (ct.load, ct.store, ct.exp, ct.sum, ...)"


def rebind(function: types.FunctionType) -> types.FunctionType:
    """The kernel's function, with every global that is the cuda.tile module replaced (and
    every PyTorch module guarded: a kernel cannot call PyTorch).

    Helper functions of the kernel's module (tile code a kernel calls) are rebound into
    the same scope, so that their `ct.` calls are simulated too."""
    module_globals = function.__globals__
    scope = {"max": _elementwise(builtins.max, maximum), "min": _elementwise(builtins.min, minimum),
             **module_globals}
    for name, value in module_globals.items():
        if isinstance(value, types.ModuleType) and value.__name__ == "cuda.tile":
            scope[name] = namespace
        elif isinstance(value, types.ModuleType) and _is_torch(value.__name__):
            scope[name] = _TorchInKernel(value, name)
        elif isinstance(value, types.FunctionType) and value.__globals__ is module_globals:
            scope[name] = _clone(value, scope)
    return _clone(function, scope)


def _clone(function: types.FunctionType, scope: dict) -> types.FunctionType:
    return types.FunctionType(function.__code__, scope, function.__name__,
                              function.__defaults__, function.__closure__)
