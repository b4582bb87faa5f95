"""A submission's kernels, rebuilt from its source without running any of its host code.

The replay process never imports the student's module: top-level code could do anything
there. It reads the file's syntax tree and takes only:

- imports of the kernel languages' own modules and their companions (triton, cuda.tile,
  math, numpy, torch: a body that calls torch is left to the front end to refuse);
- top-level constants written as plain literals (numbers, strings, tuples, arithmetic on
  them, `tl.constexpr(...)`, `math.sqrt(2)`), evaluated here by a small evaluator, never by
  Python's `eval`;
- top-level functions: their `def` is compiled and bound (a body runs only when a kernel
  language runs it), with annotations and defaults evaluated as literals, and their
  decorators recognised by form (`@triton.jit`, `@triton.autotune(configs=[...])` with
  literal configurations, `@ct.kernel(...)`, `@ct.function`) and applied here;
- `name = kernel.replace_hints(...)` copies of cuTile kernels, with literal hints.

Anything else at the top level is skipped; a kernel that uses a name bound by skipped code
is told so (`KernelFile.explain`). Triton kernels on a CPU are built as the interpreter runs
them; the front end's helper process builds the same file the same way in compiler mode
(grader.replay.frontends).
"""

from __future__ import annotations

import __future__
import ast
import importlib
import itertools
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader.replay.literals import Literal, NotLiteral, allowed_module
from grader.tracks import TRACKS

_JIT_OPTIONS = {"do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline"}
_AUTOTUNE_OPTIONS = {"configs", "key", "reset_to_zero", "restore_value", "warmup", "rep",
                     "cache_results", "use_cuda_graph"}
_serial = itertools.count()


class SourceError(Exception):
    """The file's kernels cannot be rebuilt; the message is for the student, at a line."""


@dataclass
class KernelFile:
    path: Path
    namespace: dict[str, Any]
    skipped: dict[str, int] = field(default_factory=dict)  # name -> line of skipped code

    def kernel(self, name: str, language: str) -> Any:
        """The top-level kernel `name`; SourceError when the file has no such kernel."""
        found = self.namespace.get(name)
        if found is None or not _is_kernel(found, language):
            where = (f" (line {self.skipped[name]} binds it by code the grader does not run)"
                     if name in self.skipped else "")
            raise SourceError(
                f"the wrapper launched `{name}`, which is not a kernel defined at the top level "
                f"of {self.path.name}{where}: define each kernel with "
                f"{'@triton.jit def' if language == 'triton' else '@ct.kernel def'} at the top "
                "level, and launch it by that name")
        return found

    def explain(self, message: str) -> str | None:
        """Why a kernel failed, when it used a name bound by top-level code that was skipped."""
        for name, line in self.skipped.items():
            if re.search(rf"\b{re.escape(name)}\b", message):
                return (f"`{name}` is bound at line {line} by top-level code the grader does not "
                        "run: a kernel may use only top-level constants written as plain "
                        "literals (numbers, strings, tl.constexpr(...)), other kernels and "
                        "helper functions")
        return None


def _is_kernel(value: Any, language: str) -> bool:
    return TRACKS[language].owns(type(value).__module__)


def load(path: Path, track: str, interpreted: bool = False, used_only: bool = False
         ) -> KernelFile:
    """Build the kernels of `path` for `track` ("triton" or "cutile"); `interpreted`: Triton
    kernels as the interpreter runs them; `used_only`: leave out the imports that no kernel,
    helper or constant names (the wrapper's `import torch`: the Triton front end's helper
    then never spends seconds importing PyTorch, which it does not run)."""
    path = Path(path)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        raise SourceError(f"{path.name} cannot be read" + (f" at line {line}" if line else "")
                          + f": {type(exc).__name__}") from None
    file = KernelFile(path, {})
    builder = _Builder(path, track, "interpret" if interpreted else "jit", file)
    if used_only:
        builder.used = _names_used_by_kernels(tree)
    file.namespace = builder.build(tree)
    return file


def _names_used_by_kernels(tree: ast.Module) -> set[str]:
    """The names read anywhere but in imports and undecorated functions (host code, which
    the replay never runs)."""
    return {n.id for node in tree.body
            if not isinstance(node, (ast.Import, ast.ImportFrom))
            and not (isinstance(node, ast.FunctionDef) and not node.decorator_list)
            for n in ast.walk(node) if isinstance(n, ast.Name)}


class _Builder:
    def __init__(self, path: Path, track: str, triton_kind: str, file: KernelFile):
        self.path, self.track, self.kind, self.file = path, track, triton_kind, file
        self.module = types.ModuleType(f"tilecourse_kernels_{next(_serial)}_{path.stem}")
        self.module.__file__ = str(path)
        self.ns = self.module.__dict__
        self.flags = 0
        self.used: set[str] | None = None  # with load(used_only=True): the names to import

    def build(self, tree: ast.Module) -> dict[str, Any]:
        sys.modules[self.module.__name__] = self.module  # Triton looks kernels' modules up
        for node in tree.body:
            try:
                self.statement(node)
            except (_Skip, NotLiteral):  # host code, or not a literal: left out
                for name in _bound_names(node):
                    self.file.skipped.setdefault(name, node.lineno)
                    self.ns.pop(name, None)
        return self.ns

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                feature = getattr(__future__, alias.name, None)
                self.flags |= getattr(feature, "compiler_flag", 0)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                raise _Skip
            self.ns[targets[0].id] = self.constant_or_copy(node.value)
        elif isinstance(node, ast.FunctionDef):
            self.ns[node.name] = self.function(node)
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            raise _Skip  # a docstring is nothing; anything else is host code

    # --- imports ----------------------------------------------------------------------------

    def imports(self, node) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not allowed_module(alias.name):
                    raise _Skip
                if self.used is not None and (alias.asname or alias.name.split(".")[0]) \
                        not in self.used:
                    continue
                module = importlib.import_module(alias.name)
                if alias.asname:
                    self.ns[alias.asname] = module
                else:
                    top = alias.name.split(".")[0]
                    self.ns[top] = importlib.import_module(top)
            return
        if node.level or not node.module:
            raise _Skip
        for alias in node.names:  # `from cuda import tile as ct` names an allowed module
            full = f"{node.module}.{alias.name}"
            if alias.name == "*" or not (allowed_module(node.module) or allowed_module(full)):
                raise _Skip
        if self.used is not None and not {a.asname or a.name for a in node.names} & self.used:
            return
        module = importlib.import_module(node.module)
        for alias in node.names:
            value = getattr(module, alias.name, None)
            if value is None or not allowed_module(node.module):
                value = importlib.import_module(f"{node.module}.{alias.name}")
            self.ns[alias.asname or alias.name] = value

    # --- constants ----------------------------------------------------------------------------

    def constant_or_copy(self, node: ast.expr) -> Any:
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "replace_hints" and isinstance(node.func.value, ast.Name)
                and not node.args):
            kernel = self.ns.get(node.func.value.id)
            if kernel is None or not _is_kernel(kernel, "cutile"):
                raise _Skip
            return kernel.replace_hints(**self.keywords(node))
        if isinstance(node, ast.Name) and _is_kernel_of(self.ns.get(node.id), self.module):
            return self.ns[node.id]  # another name for a kernel or helper of the file
        return self.literal(node)

    def keywords(self, call: ast.Call, allowed: set[str] | None = None) -> dict[str, Any]:
        found = {}
        for keyword in call.keywords:
            if keyword.arg is None or (allowed is not None and keyword.arg not in allowed):
                raise self.refuse(call, f"`{keyword.arg or '**'}=` is not an option the grader "
                                        "rebuilds (only literal options are)")
            found[keyword.arg] = self.literal(keyword.value)
        return found

    def literal(self, node: ast.expr) -> Any:
        # Subscripts of the languages' own types too: `ConstInt = ct.Constant[int]`, as
        # NVIDIA's samples name an annotation once.
        return Literal(self.ns, annotations=True).value(node)

    # --- functions ----------------------------------------------------------------------------

    def function(self, node: ast.FunctionDef) -> Any:
        args = node.args
        evaluate = Literal(self.ns, annotations=True).value
        # Only a kernel's annotations mean anything here (`tl.constexpr`, `ct.Constant`); an
        # undecorated function is host code, never run here, and evaluating its annotations
        # (`x: torch.Tensor`) would import what they name.
        annotations = {a.arg: evaluate(a.annotation) for a in
                       [*args.posonlyargs, *args.args, *args.kwonlyargs]
                       if a.annotation and node.decorator_list}
        defaults = tuple(self.literal(d) for d in args.defaults)
        kwdefaults = {a.arg: self.literal(d) for a, d in zip(args.kwonlyargs, args.kw_defaults)
                      if d is not None}
        bare = ast.FunctionDef(
            name=node.name, args=_without_defaults(args), body=node.body, decorator_list=[],
            returns=None, type_comment=None, **({"type_params": []} if sys.version_info >= (3, 12) else {}))
        ast.copy_location(bare, node)
        code = compile(ast.fix_missing_locations(ast.Module([bare], [])), str(self.path), "exec",
                       flags=self.flags, dont_inherit=True)
        scope = self.ns
        exec(code, scope)  # defines the function; its body does not run  # noqa: S102
        function = scope.pop(node.name)
        function.__annotations__ = annotations
        function.__defaults__ = defaults or None
        function.__kwdefaults__ = kwdefaults or None
        for decorator in reversed(node.decorator_list):
            function = self.decorate(decorator, function)
        return function

    def decorate(self, node: ast.expr, function: Any) -> Any:
        call = node if isinstance(node, ast.Call) else None
        target = Literal(self.ns, annotations=True).value(call.func if call else node)
        if call is not None and call.args:
            raise self.refuse(node, "a decorator's arguments must be given by keyword")
        tl_jit, autotune, heuristics, ct_kernel, ct_function = _decorators()
        if target is tl_jit:
            options = self.keywords(call, _JIT_OPTIONS) if call else {}
            return _triton_kind(self.kind)(function, **options)
        if target is autotune and call is not None:
            options = self.keywords(call, _AUTOTUNE_OPTIONS)
            if self.kind == "interpret":
                # No GPU to time configurations on: the interpreter runs the first one (the
                # front end checks every one of them before anything runs).
                options["do_bench"] = _first_configuration
            return autotune(**options)(function)
        if target is heuristics:
            raise self.refuse(node, "@triton.heuristics takes functions, which the grader does "
                                    "not run: compute the value in your wrapper and pass it to "
                                    "the kernel as an argument")
        if target in (ct_kernel, ct_function) and target is not None:
            return target(function, **(self.keywords(call) if call else {}))
        raise self.refuse(node, "this decorator is not one the grader rebuilds (@triton.jit, "
                                "@triton.autotune, @ct.kernel, @ct.function)")

    def refuse(self, node: ast.AST, why: str) -> SourceError:
        return SourceError(f"line {node.lineno} of {self.path.name}: {why}")


def _is_kernel_of(value: Any, module: types.ModuleType) -> bool:
    """A function of the file (`__module__` is the module being built): a kernel, a helper."""
    return getattr(value, "__module__", None) == module.__name__


class _Skip(Exception):
    """This top-level statement is host code: it is left out."""


def _bound_names(node: ast.stmt) -> list[str]:
    """The top-level names a skipped statement binds (not the locals of a function)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    names = []
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.append(child.id)
        elif isinstance(child, ast.alias):
            names.append((child.asname or child.name).split(".")[0])
    return names


def _without_defaults(args: ast.arguments) -> ast.arguments:
    def bare(a: ast.arg) -> ast.arg:
        return ast.copy_location(ast.arg(arg=a.arg, annotation=None), a)

    return ast.arguments(posonlyargs=[bare(a) for a in args.posonlyargs],
                         args=[bare(a) for a in args.args],
                         vararg=args.vararg and bare(args.vararg),
                         kwonlyargs=[bare(a) for a in args.kwonlyargs],
                         kw_defaults=[None] * len(args.kwonlyargs),
                         kwarg=args.kwarg and bare(args.kwarg), defaults=[])


def _first_configuration(kernel_call, quantiles=None, **options) -> list[float]:
    """An autotuner's benchmark that times nothing: every configuration ties, and the
    autotuner keeps the first."""
    return [0.0, 0.0, 0.0]


def _triton_kind(kind: str) -> Callable:
    if kind == "interpret":
        from triton.runtime.interpreter import InterpretedFunction

        return InterpretedFunction
    from triton.runtime.jit import JITFunction

    return JITFunction


def _decorators() -> tuple:
    """The decorator objects the builder recognises (None for a language not installed)."""
    found: list[Any] = [None] * 5
    if "triton" in sys.modules or _importable("triton"):
        import triton

        found[:3] = [triton.jit, triton.autotune, triton.heuristics]
    if "cuda.tile" in sys.modules or _importable("cuda.tile"):
        import cuda.tile as ct

        found[3:] = [ct.kernel, ct.function]
    return tuple(found)


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        return False
