"""What the real compilers say about a kernel that, on a CPU, only an interpreter ran.

Triton's interpreter and the cuTile simulator run a kernel body as Python, so a body that
calls PyTorch on the host (or anything else no GPU compiler accepts) would run there. Each
kernel launched on a CPU is therefore also given to the real compiler's front end, which
needs no GPU:

- Triton: the kernel is lowered to Triton IR for an sm_80 GPU (`triton`);
- cuTile: the kernel is lowered to Tile IR bytecode, architecture-independent, which is
  what tileiras would then compile (`cutile`).

Either returns the compiler's message when it rejects the kernel (None when it accepts it),
and is asked once per kernel and signature. `Unavailable` says that this Triton or
cuda-tile offers no front end the grader knows how to call: the check is then not made, and
grading says so.
"""

from __future__ import annotations

import inspect
import io
import json
import os
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

from grader.replay.locate import describe

# This module imports neither torch nor the grader's torch-using modules at the top: the
# Triton helper below starts from it, and needs Triton alone (a second of start-up saved).

TRITON_TARGET = ("cuda", 80, 32)  # backend, compute capability, warp size
_TRITON_TYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
                 "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
                 "bool": "i1"}
_checked: dict[tuple, str | None] = {}


class Unavailable(Exception):
    """The front end of this compiler version cannot be called the way the grader knows."""


def _message(exc: BaseException, limit: int = 3000) -> str:
    return f"{type(exc).__name__}: {str(exc).strip()[:limit]}"


# --- Triton --------------------------------------------------------------------------------
#
# In interpreter mode, `triton.jit` and triton.language's own @jit functions make interpreted
# functions, which Triton's code generator cannot lower; and the interpreter patches the
# language while it runs. So kernels are lowered in a helper process of the replay that
# imports Triton in compiler mode and rebuilds the file's kernels from the same source, the
# same way (grader.replay.kernels: no host code of the file runs there either), by name.

_helper = None


def triton(name: str, fn, bound: dict, path: Path, unspecialized=()) -> str | None:
    """Lower the top-level Triton kernel `name` of `path` (whose Python function is `fn`) to
    Triton IR for sm_80, with the arguments of one launch (`bound`: name -> value)."""
    signature, constexprs = {}, {}
    unspecialized = set(unspecialized or ())
    for index, (param_name, param) in enumerate(inspect.signature(fn).parameters.items()):
        value = bound.get(param_name, param.default)
        if "constexpr" in str(param.annotation) or value is None:
            signature[param_name], constexprs[param_name] = "constexpr", constant_json(value)
        elif type(value) is int and value == 1 and not unspecialized & {index, param_name}:
            # Triton's JIT compiles an integer argument equal to 1 as the constant 1 (a unit
            # stride), and some code compiles only so: a tensor descriptor's last stride.
            signature[param_name], constexprs[param_name] = "constexpr", 1
        else:
            signature[param_name] = _triton_type(value)
    key = ("triton", str(path), name, json.dumps([signature, constexprs]))
    if key not in _checked:
        request = (str(path), name, signature, constexprs)
        try:
            _checked[key] = start_triton_helper().lower(*request)
        except _HelperStopped:
            try:  # once more, in a new helper
                _checked[key] = start_triton_helper().lower(*request)
            except _HelperStopped as exc:
                _checked[key] = f"the compile check could not run: its process stopped ({exc})"
    return _checked[key]


def start_triton_helper() -> "_TritonHelper":
    """The helper process (one at a time): the replay starts it early, so that its imports
    overlap the replay's own work."""
    global _helper
    if _helper is None or _helper.process.poll() is not None:
        _helper = _TritonHelper()
    return _helper


def constant_json(value):
    """A constexpr value as JSON (a number, bool, string or None; a Triton dtype by name), to
    hand to another process; `constant_value` reads it back."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str) and type(value).__name__ in ("dtype", "pointer_type"):
        return {"dtype": name}  # a tl.float16 passed as a constexpr
    raise Unavailable(f"a constexpr argument of type {type(value).__name__} cannot be handed "
                      "to the compiler")


def _triton_type(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        if dtype not in _TRITON_TYPES:
            return "*unsupported"  # the front end rejects it, naming the parameter
        return "*" + _TRITON_TYPES[dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return "unsupported"


_HELPER_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
                "from grader.replay.frontends import serve_triton; serve_triton(int(sys.argv[2]))")


class _HelperStopped(Exception):
    """The helper died or broke off while it was asked something."""


class _TritonHelper:
    """The helper process, started on the first Triton launch of a child."""

    def __init__(self):
        parent, child = socket.socketpair()
        env = {**os.environ, "TRITON_INTERPRET": "0"}
        root = str(Path(__file__).resolve().parents[2])
        self.process = subprocess.Popen([sys.executable, "-I", "-c", _HELPER_BOOT, root,
                                         str(child.fileno())], pass_fds=[child.fileno()],
                                        env=env, stdin=subprocess.DEVNULL)
        child.close()
        self.sock = parent
        self.unavailable: str | None = None
        self._probed = False
        from grader import protocol

        protocol.send(parent, {"sys_path": sys.path})

    def _ask(self, request: dict) -> dict:
        from grader import protocol

        try:
            protocol.send(self.sock, request)
            return protocol.receive(self.sock, time.monotonic() + 300).header
        except (OSError, EOFError, TimeoutError, protocol.ProtocolError) as exc:
            self.process.kill()
            self.process.wait()  # so that start_triton_helper sees it gone
            self.sock.close()
            raise _HelperStopped(repr(exc)) from None

    def lower(self, path: str, name: str, signature: dict, constexprs: dict) -> str | None:
        if not self._probed:  # the first question waits for its imports and a tiny kernel
            self._probed = True
            self.unavailable = self._ask({"probe": True}).get("unavailable")
        if self.unavailable:
            raise Unavailable(self.unavailable)
        return self._ask({"path": path, "kernel": name, "signature": signature,
                          "constexprs": constexprs}).get("error")


def serve_triton(fd: int) -> None:
    """The helper's loop: lower the kernels it is asked for; never called by hand."""
    from grader.replay import kernels
    from grader import protocol

    sock = socket.socket(fileno=fd)
    sys.path[:] = protocol.receive(sock).header["sys_path"]
    modules = {}
    while True:
        try:
            request = protocol.receive(sock).header
        except EOFError:
            return
        if request.get("probe"):
            try:
                error = _lower_triton(_probe_kernel(), {"x": "*fp32", "B": "constexpr"}, {"B": 16})
                reply = {"unavailable": error} if error else {}
            except Unavailable as exc:
                reply = {"unavailable": str(exc)}
            protocol.send(sock, reply)
            continue
        try:
            path = request["path"]
            if path not in modules:
                modules[path] = kernels.load(Path(path), "triton").namespace
            jit = modules[path][request["kernel"]]
            while hasattr(jit, "configs") or not hasattr(jit, "arg_names"):
                jit = jit.fn  # the JIT function under an autotuner
            constexprs = {k: constant_value(v) for k, v in request["constexprs"].items()}
            reply = {"error": _lower_triton(jit, request["signature"], constexprs, Path(path))}
        except kernels.SourceError as exc:
            reply = {"error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - told to the student as the check's failure
            reply = {"error": f"the module could not be compiled for a GPU: {_message(exc)}"}
        protocol.send(sock, reply)


def constant_value(value):
    if isinstance(value, dict) and set(value) == {"dtype"}:
        import triton.language as tl

        return getattr(tl, value["dtype"])
    return value


def _probe_kernel():
    import triton
    import triton.language as tl

    def probe(x, B: tl.constexpr):
        offsets = tl.arange(0, B)
        tl.store(x + offsets, tl.load(x + offsets) * 2)

    return triton.jit(probe)


def _lower_triton(jit, signature: dict, constexprs: dict, path: Path | None = None) -> str | None:
    """Triton's front end on one kernel: None, or its message (in the helper process), at
    the kernel line of `path` it rejected."""
    try:
        from triton._C.libtriton import ir
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from triton.compiler.compiler import make_backend
    except ImportError as exc:
        raise Unavailable(f"this Triton has no front end the grader can call ({exc})") from None
    if "constexprs" not in inspect.signature(ASTSource.__init__).parameters:
        raise Unavailable("this Triton's front end takes other arguments (Triton 3.4 or newer "
                          "is needed for the compile check on a CPU)")
    target = GPUTarget(*TRITON_TARGET)
    try:
        source = ASTSource(fn=jit, signature=signature, constexprs=constexprs)
        backend = make_backend(target)
        with warnings.catch_warnings():  # notices about option defaults are not the student's
            warnings.simplefilter("ignore")
            options = backend.parse_options({})
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        source.make_ir(target, options, backend.get_codegen_implementation(options),
                       backend.get_module_map(), context)
    except TypeError as exc:
        if "make_ir" in str(exc) or "positional argument" in str(exc):
            raise Unavailable(f"this Triton's front end takes other arguments ({exc})") from None
        return _rejection(exc, path)
    except Exception as exc:  # noqa: BLE001 - the compiler's rejection is the answer
        return _rejection(exc, path)
    return None


def _rejection(exc: BaseException, path: Path | None) -> str:
    return describe(exc, path, max_lines=40) if path else _message(exc)


# --- cuTile --------------------------------------------------------------------------------


def cutile(kernel, args: tuple) -> str | None:
    """Lower a simulated cuTile kernel to Tile IR bytecode with the arguments of a launch."""
    from grader.languages.cutile.build import signatures

    try:
        from cuda.tile.compilation import export_kernel
    except ImportError as exc:
        raise Unavailable(f"this cuda-tile has no export_kernel ({exc})") from None
    try:
        (found, sigs), = signatures([(kernel, args)]).values()
    except Exception as exc:  # noqa: BLE001 - arguments cuTile has no type for
        return _message(exc)
    key = ("cutile", id(found), repr(sigs))
    if key not in _checked:
        try:
            export_kernel(found, sigs, io.BytesIO(), gpu_code=None,
                          output_format="tileir_bytecode")
            _checked[key] = None
        except Exception as exc:  # noqa: BLE001 - the compiler's rejection is the answer
            filename = getattr(getattr(exc, "loc", None), "filename", None)
            _checked[key] = _rejection(exc, Path(filename) if filename else None)
    return _checked[key]
