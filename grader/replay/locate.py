"""Where in the student's file an error points, for the message the student reads.

Two kinds of error carry that place differently:

- an error raised while Python runs the student's code (the interpreter running a kernel
  line, a host line of the wrapper) has the line in its traceback, possibly in a cause:
  Triton's interpreter raises its own error from the one the kernel's line raised;
- a compile error (on a GPU, or in the CPU's compile check) is raised from the launch line,
  but names the kernel line itself. That line is the one to show. Triton's carries the
  kernel's source and the AST node that failed, numbered from the kernel's `def`; cuTile's
  (TileError) a `loc` with the file and line.

An error inside a helper the kernel calls (a `@triton.jit` function, a cuTile tile
function) is shown at the helper's line, with its own reason, and the lines that called it
below: Triton wraps a helper's compile error in one at the call site that has no reason of
its own, and a traceback through a helper holds the call's frame above the helper's.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path

from grader.tracks import TRACKS, wing


_CALLS = 5  # the most lines of calls shown under an error's line


def describe(exc: BaseException, path: Path, max_lines: int = 25) -> str:
    """`Type (at file, line N: its source): message`, at the kernel line a compile error
    names, else at the deepest frame in the student's file over the chain of causes; below
    it, the lines of the file that called the function holding that line."""
    located = _compiled(exc, path)
    if located:
        place, calls = located[-1][0], [found for found, _ in reversed(located[:-1])]
        if len(located) > 1:  # the call sites' errors say where, the helper's says why
            exc = located[-1][1]
    else:
        frames = _frames(exc, path)
        place, calls = (frames[-1], frames[-2::-1]) if frames else (None, [])
    called = "".join(f"\n  called from line {lineno} of {path.name}"
                     + (f": {source}" if source else "") for lineno, source in calls[:_CALLS])
    if len(calls) > _CALLS:  # a recursion, say: the nearest calls tell where
        called += f"\n  ... and {len(calls) - _CALLS} calls before those"
    where = ""
    if place is not None:
        lineno, source = place
        where = f" (at {path.name}, line {lineno}" + (f": {source}" if source else "") + ")"
    if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None:
        exc = exc.__cause__  # its message is only the repr of the cause
    if internal(exc):
        # The simulator's or the interpreter's own failure: its message is about their code,
        # not the student's. Say which line of the kernel could not be run, and why in
        # words about that line.
        line = f"line {place[0]} of {path.name}" + (f" (`{place[1]}`)" if place[1] else "") \
            if place else f"a line of {path.name}"
        return (f"{line} could not be run: an operation on it was given values of a kind or "
                "shape it does not take (check the tiles, arrays, indices and constants that "
                f"line passes; {type(exc).__name__} in the "
                f"{_runtime(exc) or 'kernel language'}){called}")
    text = _reason(exc) if located else str(exc).strip()
    lines = text.splitlines()
    if len(lines) > max_lines:
        text = "\n".join(lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)"])
    return (f"{type(exc).__name__}{where}: {text}" if text else f"{type(exc).__name__}{where}") \
        + called


def _reason(exc: BaseException) -> str:
    """A compile error's message without the places this module words itself: cuTile's
    TileError prints its `loc` and call sites, with the paths of the grader's scratch
    folder, after its `message`."""
    bare = getattr(exc, "message", None)
    if getattr(exc, "loc", None) is not None and isinstance(bare, str) and bare.strip():
        return bare.strip()
    text = str(exc).strip()
    if hasattr(exc, "error_message") and not exc.error_message:
        # Triton's error at the student's line says only where: the reason is a cause raised
        # in Triton's own code (a tl.max given an axis its tile does not have, say).
        root = _root(exc)
        if root is not exc and str(root).strip():
            return f"{text}\n{type(root).__name__}: {str(root).strip()}"
    return text


def _root(exc: BaseException) -> BaseException:
    """The innermost error of `exc`'s chain of causes."""
    seen = {id(exc)}
    while (cause := exc.__cause__ or exc.__context__) is not None and id(cause) not in seen:
        seen.add(id(cause))
        exc = cause
    return exc


def message(exc: BaseException, limit: int = 3000) -> str:
    """`Type: message`, cut at `limit` characters."""
    return f"{type(exc).__name__}: {str(exc).strip()[:limit]}"


def rejection(exc: BaseException, path: Path | None) -> str:
    """A compiler's rejection of a kernel, at the line of `path` it names where it names one."""
    return describe(exc, path, max_lines=40) if path else message(exc)


_STUDENT_FACING = ("SimulatorError", "SimulatorUnsupported", "SimulatorAttributeError",
                   "CompilationError", "SourceError")
_INTERNAL_TYPES = (AttributeError, KeyError, AssertionError, IndexError, TypeError, NameError,
                   UnboundLocalError, RecursionError)


def internal(exc: BaseException) -> bool:
    """Whether `exc` is a failure inside the grader or a kernel language's runtime (the cuTile
    simulator, Triton's interpreter), rather than an error they raise on purpose, worded for
    the student."""
    if type(exc).__name__ in _STUDENT_FACING or not isinstance(exc, _INTERNAL_TYPES):
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    deepest = Path(frames[-1].filename).as_posix()
    return "/grader/" in deepest or _runtime(exc) is not None


def _runtime(exc: BaseException) -> str | None:
    """How a message names the runtime of a kernel language (its interpreter or simulator)
    that `exc` was raised in, if it was raised in one."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    deepest = Path(frames[-1].filename).as_posix()
    return next((named for track in TRACKS.values()
                 if (named := wing(track).cpu.runtime(deepest)) is not None), None)


def _compiled(exc: BaseException, path: Path) -> list[tuple[tuple[int, str], BaseException]]:
    """Each line of `path` that the errors of `exc`'s chain name, with the error naming it,
    from the outermost (the kernel's call of a helper) to the innermost (the line that
    failed)."""
    found, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for place in _named_lines(exc, path):
            if not found or found[-1][0] != place:
                found.append((place, exc))
        exc = exc.__cause__ or exc.__context__
    return found


def _named_lines(exc: BaseException, path: Path) -> list[tuple[int, str]]:
    """The lines of `path` one compile error names, outermost first: cuTile's `loc` and the
    call sites it came through; Triton's `node` within `src` (a helper's error is a cause
    of its call site's)."""
    places, loc = [], getattr(exc, "loc", None)  # cuTile
    while loc is not None and len(places) < 64:
        line = getattr(loc, "line", None)
        if isinstance(line, int) and Path(str(getattr(loc, "filename", ""))) == path:
            places.insert(0, (line, _source_line(path, line)))
        loc = getattr(loc, "call_site", None)
    node, src = getattr(exc, "node", None), getattr(exc, "src", None)  # Triton
    lineno = getattr(node, "lineno", None)
    if isinstance(src, str) and isinstance(lineno, int):
        found = _in_file(src, lineno, path)
        places += [found] if found else []
    return places


def _in_file(src: str, lineno: int, path: Path) -> tuple[int, str] | None:
    """The file line of line `lineno` of the kernel source `src` (its `def` is line 1),
    found by matching the source against the file, so a kernel defined twice or a file
    edited since it was loaded points nowhere rather than at the wrong line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    kernel = src.splitlines()
    if not kernel or not 0 < lineno <= len(kernel):
        return None
    starts = [i for i, line in enumerate(lines) if line.strip() == kernel[0].strip()]
    for start in starts:
        if all(start + k < len(lines) and lines[start + k].strip() == kernel[k].strip()
               for k in range(lineno)):
            return start + lineno, lines[start + lineno - 1].strip()
    return None


def _source_line(path: Path, lineno: int) -> str:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""


def _frames(exc: BaseException, path: Path) -> list[tuple[int, str]]:
    """The frames in `path` of the innermost error of the chain that has any, outermost
    first: the last is the line that failed, those above it the calls that led there."""
    found, seen = [], set()
    while exc is not None and id(exc) not in seen:  # from the outermost error to its causes
        seen.add(id(exc))
        frames = [(f.lineno, (f.line or "").strip())
                  for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
        found = frames or found
        exc = exc.__cause__ or exc.__context__
    return found


@dataclass(frozen=True)
class Source:
    """The student's file, to quote a kernel line."""

    lines: tuple[str, ...]
    name: str

    def at(self, line: int | None) -> str:
        if line is None or not 0 < line <= len(self.lines):
            return f"in {self.name}"
        return f"line {line} (`{self.lines[line - 1].strip()}`)"
