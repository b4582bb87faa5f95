"""A submission's kernels, rebuilt from its source: only data crosses from the file.

The replay process never imports the student's module, and runs none of its host code. It
reads the file's syntax tree and takes:

- its imports, as spellings (grader.replay.spellings): a kernel's namespace gets only the
  kernel language's modules (and math), looked up by the grader;
- top-level constants written as data (grader.replay.literals), read, never evaluated;
- its kernels: each decorated top-level `def` (`@triton.jit`, `@triton.autotune(configs=
  [...])`, `@ct.kernel(...)`, `@ct.function`), its decorator recognised by spelling and
  applied by the grader with options read as data, its annotations and defaults read as
  data, its body checked before anything is built (grader.replay.bodies) and compiled as a
  bare `def` (a body runs only when the kernel language runs it); a cuTile kernel's
  undecorated helpers are tile code, and are taken the same way;
- `name = kernel` and `name = kernel.replace_hints(...)` (cuTile) copies of kernels.

Everything else at the top level is host code: skipped. A constant a kernel uses that is
not data, a decorator option that is not data, a body that names anything but the kernel
language: refused (`SourceError`) at its line, before any kernel is built or runs. A
kernel's namespace holds nothing of the host, not even Python's built-ins beyond the few
the language gives a meaning. A front end that checks the kernels in a process of its own
(Triton's: grader.languages.triton.frontend) builds the same file the same way, so the
program it checks is the program that runs.
"""

from __future__ import annotations

import __future__
import ast
import builtins
import itertools
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import syntax
from grader.replay import bodies, definitions
from grader.replay.literals import NotData, LiteralReader, changeable
from grader.replay.spellings import Aliases, Spellings, Unknown, lookup, part_of_language
from grader.tracks import TRACKS, wing

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
                f"{TRACKS[language].decorator} def at the top level, and launch it by that name")
        return found


def _is_kernel(value: Any, language: str) -> bool:
    return TRACKS[language].owns(type(value).__module__)


def load(path: Path, track: str, interpreted: bool = False) -> KernelFile:
    """Build the kernels of `path` for `track`; `interpreted`: kernels as the CPU backend
    runs them (as a GPU compiles them otherwise). Raises SourceError."""
    path = Path(path)
    try:
        tree = syntax.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        raise SourceError(f"{path.name} cannot be read" + (f" at line {line}" if line else "")
                          + f": {type(exc).__name__}") from None
    builder = _Builder(path, track, interpreted)
    try:
        builder.build(tree)
    except (NotData, bodies.BodyRefused) as exc:
        raise SourceError(f"line {exc.line} of {path.name}: {exc}") from None
    return KernelFile(path, builder.ns, dict(builder.names.skipped))


class _Builder:
    """Reads a file's top level in order, checks every kernel body, then builds the kernels
    in order, each with the constants and imports above it (as Python would)."""

    def __init__(self, path: Path, track: str, interpreted: bool):
        self.path, self.track, self.interpreted = path, track, interpreted
        self.table: Spellings = wing(track).reader.spellings
        self.helpers_are_tile_code = wing(track).reader.helpers_are_tile_code
        self.module = types.ModuleType(f"tilecourse_kernels_{next(_serial)}_{path.stem}")
        self.module.__file__ = str(path)
        self.ns = self.module.__dict__
        # Python's built-ins as a kernel sees them: only those the language gives a meaning.
        self.ns["__builtins__"] = {n: getattr(builtins, n) for n in self.table.builtins}
        self.flags = 0
        self.aliases = Aliases()
        self.constants: dict[str, Any] = {}
        self.lines: dict[str, int] = {}  # a constant's line
        self.names = bodies.FileNames()
        self.kernels: dict[str, ast.FunctionDef] = {}  # decorated functions, to check
        self.steps: list[tuple[str, ast.AST, LiteralReader]] = []  # what to build, in order

    def build(self, tree: ast.Module) -> None:
        sys.modules[self.module.__name__] = self.module  # Triton looks kernels' modules up
        for node in tree.body:
            try:
                self.statement(node)
            except _Skip as skip:  # host code: left out
                for name in _bound_names(node):
                    self.forget(name)
                    self.names.skipped.setdefault(name, node.lineno)
                    if skip.why:
                        self.names.not_data[name] = skip.why
        self.freeze()
        helpers = self.check_bodies()
        self.bind_modules()
        for name in helpers:
            self.ns[name] = self.bare_function(self.names.helpers[name], self.reader())
        for kind, node, reader in self.steps:
            if kind == "kernel":
                self.ns[node.name] = self.kernel(node, reader)
            else:
                self.ns[node.targets[0].id] = self.copy_of_kernel(node.value, reader)

    def forget(self, name: str) -> None:
        """`name` is bound anew: whatever it was (an import too) is gone."""
        for table in (self.constants, self.lines, self.names.helpers, self.names.not_data,
                      self.ns, self.aliases.spelled):
            table.pop(name, None)
        self.names.kernels.discard(name)
        self.kernels.pop(name, None)
        self.steps = [s for s in self.steps if _step_name(s) != name]

    def reader(self) -> LiteralReader:
        """A reader of data as the file stands here (later constants and imports unseen)."""
        return LiteralReader(Aliases(self.aliases.spelled), dict(self.constants), self.table)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                feature = getattr(__future__, alias.name, None)
                self.flags |= getattr(feature, "compiler_flag", 0)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _bound_names(node):
                self.forget(name)
            self.aliases.add(node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            self.assign(node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None \
                and isinstance(node.target, ast.Name):
            self.assign(ast.copy_location(ast.Assign([node.target], node.value), node))
        elif isinstance(node, ast.FunctionDef):
            self.forget(node.name)
            if node.decorator_list:
                self.kernels[node.name] = node
                self.names.kernels.add(node.name)
                self.steps.append(("kernel", node, self.reader()))
            else:
                self.names.helpers[node.name] = node  # host code, or a cuTile tile helper
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            raise _Skip  # a docstring is nothing; anything else is host code

    # --- constants and copies of kernels ------------------------------------------------

    def assign(self, node: ast.Assign) -> None:
        name, value = node.targets[0].id, node.value
        self.forget(name)
        if _copies_a_kernel(value, self.names.kernels):
            self.names.kernels.add(name)
            self.steps.append(("copy", node, self.reader()))
            return
        reader = self.reader()
        try:
            read = reader.constant(value)
        except NotData as exc:
            try:  # `ConstInt = ct.Constant[int]`, as NVIDIA's samples name an annotation
                read = reader.annotation(value)
            except (NotData, Unknown):
                raise _Skip(str(exc)) from None
        self.constants[name] = self.ns[name] = read
        self.lines[name] = node.lineno

    def freeze(self) -> None:
        """The constants a kernel may name: those that cannot change while kernels run. The
        others stay data for decorators (a dict of triton.Config's values), but leave the
        kernels' namespace, and a body that names one is refused (grader.replay.bodies)."""
        for name, value in self.constants.items():
            why = changeable(value, self.table)
            if why:
                self.names.changeable[name] = (self.lines[name], why)
                self.ns.pop(name, None)
            else:
                self.names.constants.add(name)

    def copy_of_kernel(self, node: ast.expr, reader: LiteralReader) -> Any:
        """`name = kernel` (another name for a kernel of the file) or, for cuTile,
        `name = kernel.replace_hints(...)` with hints read as data."""
        source = node.id if isinstance(node, ast.Name) else node.func.value.id
        if source not in self.ns:
            raise NotData(node, f"this copies `{source}`, which later top-level code rebinds")
        if isinstance(node, ast.Name):
            return self.ns[source]
        if "replace_hints" not in self.table.options or node.args:
            raise NotData(node, "a copy of a kernel is `name = kernel` or, for cuTile, "
                                "`name = kernel.replace_hints(hint=value, ...)`")
        hints = self.options(node, "replace_hints", reader)
        return self.ns[source].replace_hints(**hints)

    def options(self, call: ast.Call, kind: str, reader: LiteralReader) -> dict[str, Any]:
        return definitions.options(call, self.table.options.get(kind, frozenset()), reader)

    # --- kernels --------------------------------------------------------------------------

    def kernel(self, node: ast.FunctionDef, reader: LiteralReader) -> Any:
        function = self.bare_function(node, reader)
        for decorator in reversed(node.decorator_list):
            function = definitions.decorate(decorator, function, reader, self.interpreted)
        return function

    def bare_function(self, node: ast.FunctionDef, reader: LiteralReader) -> types.FunctionType:
        return definitions.bare_function(node, reader, self.module, self.flags)

    # --- bodies ---------------------------------------------------------------------------

    def check_bodies(self) -> list[str]:
        """Check every kernel's body, and every helper one calls where helpers are tile code
        (cuTile's); the helpers to build, in the file's order."""
        pending, done = list(self.kernels.values()), set()
        while pending:
            node = pending.pop()
            if node.name in done:
                continue
            done.add(node.name)
            used = bodies.check_body(node, self.names, self.aliases, self.table,
                                helpers_allowed=self.helpers_are_tile_code)
            pending += [self.names.helpers[h] for h in used - done]
        return [name for name in self.names.helpers if name in done]

    def bind_modules(self) -> None:
        """The imports a kernel may use, looked up by the grader from their spellings."""
        for name, spelled in self.aliases.spelled.items():
            try:
                value = lookup(spelled, self.table)
            except (Unknown, ImportError):
                continue  # a host module (torch, os): never in a kernel's namespace
            if part_of_language(value, spelled, self.table):
                self.ns[name] = value


def _copies_a_kernel(node: ast.expr, kernels: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in kernels
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "replace_hints" and isinstance(node.func.value, ast.Name)
            and node.func.value.id in kernels)


def _step_name(step: tuple[str, ast.AST, LiteralReader]) -> str:
    kind, node, _ = step
    return node.name if kind == "kernel" else node.targets[0].id


class _Skip(Exception):
    """This top-level statement is host code: it is left out (`why`: a constant that is not
    data, said if a kernel uses it)."""

    def __init__(self, why: str = ""):
        super().__init__(why)
        self.why = why


def _bound_names(node: ast.stmt) -> list[str]:
    """The top-level names a statement binds (not the locals of a function)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    names = []
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.append(child.id)
        elif isinstance(child, ast.alias):
            names.append((child.asname or child.name).split(".")[0])
    return names
