"""Where an error points (grader.replay.locate): an error inside a helper the kernel calls is
shown at the helper's line, with its own reason, and the lines that called it below."""

from __future__ import annotations

from dataclasses import dataclass

from grader.replay.locate import describe

HELPER_FILE = """import triton
import triton.language as tl


@triton.jit
def cube(z):
    return z ** 3


@triton.jit
def kern(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = cube(x)
    tl.store(x_ptr + offs, y, mask=offs < n)
"""


class CompilationError(Exception):
    """What Triton's compiler raises: the function's source from its `def`, the AST node
    that failed (numbered from there), and a reason, or none where it only says where a
    helper that failed was called (its cause is the helper's error)."""

    def __init__(self, src: str, lineno: int, reason: str | None):
        lines = src.splitlines()[:lineno]
        super().__init__("\n".join([f"at {lineno}:4:", *lines, *([reason] if reason else [])]))
        self.src, self.node = src, type("Node", (), {"lineno": lineno})()
        self.error_message = reason


def _function(source: str, name: str) -> str:
    start = source.index(f"def {name}")
    end = source.find("\n\n\n", start)
    return source[start:] if end < 0 else source[start:end]


def test_a_compile_error_in_a_helper_is_shown_at_the_helpers_line_with_its_reason(tmp_path):
    path = tmp_path / "stage.py"
    path.write_text(HELPER_FILE, encoding="utf-8")
    reason = "unsupported operand type(s) for **: 'tensor' and 'int'"
    try:
        try:
            raise CompilationError(_function(HELPER_FILE, "cube"), 2, reason)
        except CompilationError as inner:  # Triton wraps it at the call, with no reason
            raise CompilationError(_function(HELPER_FILE, "kern"), 4, None) from inner
    except CompilationError as exc:
        text = describe(exc, path)
    assert text.startswith("CompilationError (at stage.py, line 7: return z ** 3): ")
    assert reason in text
    assert text.endswith("\n  called from line 14 of stage.py: y = cube(x)")


def test_an_error_of_one_kernel_line_names_no_call(tmp_path):
    path = tmp_path / "stage.py"
    path.write_text(HELPER_FILE, encoding="utf-8")
    text = describe(CompilationError(_function(HELPER_FILE, "kern"), 3, "bad load"), path)
    assert text.startswith("CompilationError (at stage.py, line 13: x = tl.load(")
    assert "called from" not in text


def test_a_compile_error_whose_reason_is_raised_in_triton_itself_shows_that_reason(tmp_path):
    """tl.max given an axis its tile lacks: Triton's error at the kernel line says only where,
    its cause is an error in Triton's own code (not the student's file), whose cause says why."""
    path = tmp_path / "stage.py"
    path.write_text(HELPER_FILE, encoding="utf-8")
    library = "def max(input, axis):\n    return core.reduce(input, axis)\n"
    try:
        try:
            try:
                raise ValueError("invalid axis 1. Expected -1 <= axis < 1")
            except ValueError as why:
                raise CompilationError(library, 2, str(why)) from why
        except CompilationError as inner:
            raise CompilationError(_function(HELPER_FILE, "kern"), 3, None) from inner
    except CompilationError as exc:
        text = describe(exc, path)
    assert text.startswith("CompilationError (at stage.py, line 13: x = tl.load(")
    assert text.endswith("\nValueError: invalid axis 1. Expected -1 <= axis < 1")


@dataclass
class Loc:  # cuTile's: a line of a file, and the call it was inlined through
    line: int
    filename: str
    call_site: "Loc | None" = None


class TileError(Exception):
    """What cuTile's compiler raises: its `message`, and a `str` that appends the places
    (with the paths of the grader's scratch folder)."""

    def __init__(self, message: str, loc: Loc):
        super().__init__(message)
        self.message, self.loc = message, loc

    def __str__(self):
        return f"{self.message}\n    \"/tmp/scratch/stage.py\", line {self.loc.line}"


def test_a_cutile_error_in_a_helper_names_the_helper_line_and_its_call(tmp_path):
    path = tmp_path / "stage.py"
    path.write_text("def helper(a, b):\n    return a + b[:, None]\n\n\n"
                    "def kernel(a, b):\n    c = helper(a, b)\n", encoding="utf-8")
    loc = Loc(2, str(path), call_site=Loc(6, str(path)))
    text = describe(TileError("Shapes are not broadcastable: (32, 64), (64, 1)", loc), path)
    assert text == ("TileError (at stage.py, line 2: return a + b[:, None]): Shapes are not "
                    "broadcastable: (32, 64), (64, 1)\n"
                    "  called from line 6 of stage.py: c = helper(a, b)")  # no scratch paths


def test_a_run_error_in_a_helper_names_the_helper_line_and_its_call(tmp_path):
    """The interpreter and the simulator run a helper as Python: the traceback holds the
    kernel's call above the helper's line."""
    path = tmp_path / "k.py"
    path.write_text("def helper(t):\n    raise ValueError('shapes (4,) and (8,) differ')\n\n\n"
                    "def kernel(t):\n    return helper(t)\n", encoding="utf-8")
    scope: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)  # noqa: S102
    try:
        scope["kernel"](None)
    except ValueError as exc:
        text = describe(exc, path)
    assert text == ("ValueError (at k.py, line 2: raise ValueError('shapes (4,) and (8,) "
                    "differ')): shapes (4,) and (8,) differ\n"
                    "  called from line 6 of k.py: return helper(t)")


def test_a_deep_recursion_shows_its_nearest_calls_only(tmp_path):
    path = tmp_path / "k.py"
    path.write_text("def down(n):\n    return down(n + 1)\n", encoding="utf-8")
    scope: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)  # noqa: S102
    try:
        scope["down"](0)
    except RecursionError as exc:
        text = describe(exc, path)
    assert text.count("called from line 2 of k.py") == 5
    assert text.splitlines()[-1].startswith("  ... and ") and len(text.splitlines()) < 12
