"""What Triton's compiler says about a kernel that, on a CPU, only its interpreter ran.

The interpreter runs a kernel body as Python, so a body that calls PyTorch on the host (or
anything else no GPU compiler accepts) would run there; and it ignores a launch's options
(`num_warps=3` runs). So each launch run on a CPU is first compiled, as a GPU backend would
compile it, for TARGET (sm_90, the GPU the course's speed is graded on), which needs no GPU
(`check`): with the launch's own constexpr values and signature and its own options
(`num_warps`, `num_stages`, `num_ctas`, `maxnreg`, `enable_fp_fusion`; under an autotuner,
each configuration's), through the stages of Triton's pipeline that decide the program
(CPU_STAGES: Triton IR, and its GPU form, whose passes read the options). The compiler's
message when it refuses the launch, None when it builds it, asked once per kernel,
signature and options. The program the interpreter then runs is this one:
the same source, rebuilt the same way, with the same values. `Unavailable`
(grader.tracks) says that this Triton offers no compiler the grader knows how to call: the
check is then not made, and grading says so.

In interpreter mode, `triton.jit` and triton.language's own @jit functions make interpreted
functions, which Triton's code generator cannot lower; and the interpreter patches the
language while it runs. So kernels are compiled in a helper process of the replay that
imports Triton in compiler mode and rebuilds the file's kernels from the same source, the
same way (grader.replay.kernels: no host code of the file runs there either), by name.
"""

from __future__ import annotations

import inspect
import json
import os
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from grader.replay.locate import message, rejection
from grader.tracks import Unavailable

# This module imports neither torch nor the grader's torch-using modules at the top: the
# helper below starts from it, and needs Triton alone (a second of start-up saved).

TARGET = ("cuda", 90, 32)  # backend, compute capability, warp size
# The stages of Triton's pipeline run on a CPU: Triton IR and its GPU form (TTGIR), whose
# passes lay the program out by the launch's options. The stages after them (LLVM IR, PTX,
# the cubin by ptxas) took the references' Triton grading from 8.5 s to 22 s on two cores
# (1.1 s more for these two); they are the GPU's builder's, which also reads the machine
# code they make (grader.replay.machine_code).
CPU_STAGES = ("ttir", "ttgir")
_TYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
          "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
          "bool": "i1"}
_checked: dict[tuple, str | None] = {}
_helper = None


def front_end_check(name: str, fn, bound: dict, path: Path, unspecialized=(), options: dict | None = None,
          arch: int = TARGET[1]) -> str | None:
    """Compile the top-level Triton kernel `name` of `path` (whose Python function is `fn`)
    for sm_`arch`, with the arguments of one launch (`bound`: name -> value) and its compile
    `options` (num_warps=..., as the launch or the autotuner's configuration gives them)."""
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
            signature[param_name] = _type(value)
    options = {k: v for k, v in (options or {}).items() if v is not None}
    key = (str(path), name, json.dumps([signature, constexprs, options, arch], sort_keys=True))
    if key not in _checked:
        request = (str(path), name, signature, constexprs, options, arch)
        try:
            _checked[key] = start_helper().lower(*request)
        except _HelperStopped:
            try:  # once more, in a new helper
                _checked[key] = start_helper().lower(*request)
            except _HelperStopped as exc:
                _checked[key] = f"the compile check could not run: its process stopped ({exc})"
    found = _checked[key]
    if isinstance(found, dict):  # the launch's options, refused: said at the launch's line
        from grader.replay.arguments import at_launch

        return at_launch(path, name, found["options"])
    return found


def start_helper() -> "_Helper":
    """The helper process (one at a time): the replay starts it early, so that its imports
    overlap the replay's own work."""
    global _helper
    if _helper is None or _helper.process.poll() is not None:
        _helper = _Helper()
    return _helper


def unwrap(kernel) -> tuple[Any, list | None]:
    """(the JIT function under an autotuner, the autotuner's configurations or None)."""
    configs = getattr(kernel, "configs", None)
    while not hasattr(kernel, "arg_names") or hasattr(kernel, "configs"):
        kernel = kernel.fn
    return kernel, configs


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


def constant_value(value):
    if isinstance(value, dict) and set(value) == {"dtype"}:
        import triton.language as tl

        return getattr(tl, value["dtype"])
    return value


def _type(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        if dtype not in _TYPES:
            return "*unsupported"  # the front end rejects it, naming the parameter
        return "*" + _TYPES[dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return "unsupported"


_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
         "from grader.languages.triton.frontend import serve; serve(int(sys.argv[2]))")


class _HelperStopped(Exception):
    """The helper died or broke off while it was asked something."""


class _Helper:
    """The helper process, started on the first Triton launch of a replay."""

    def __init__(self):
        parent, child = socket.socketpair()
        env = {**os.environ, "TRITON_INTERPRET": "0"}
        root = str(Path(__file__).resolve().parents[3])
        self.process = subprocess.Popen([sys.executable, "-I", "-c", _BOOT, root,
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
            self.process.wait()  # so that start_helper sees it gone
            self.sock.close()
            raise _HelperStopped(repr(exc)) from None

    def lower(self, path: str, name: str, signature: dict, constexprs: dict, options: dict,
              arch: int) -> str | dict | None:
        """None, the compiler's message, or {"options": message} for refused options."""
        if not self._probed:  # the first question waits for its imports and a tiny kernel
            self._probed = True
            self.unavailable = self._ask({"probe": True}).get("unavailable")
        if self.unavailable:
            raise Unavailable(self.unavailable)
        reply = self._ask({"path": path, "kernel": name, "signature": signature,
                           "constexprs": constexprs, "options": options, "arch": arch})
        if isinstance(reply.get("options"), str):
            return {"options": reply["options"]}
        return reply.get("error")


def serve(fd: int) -> None:
    """The helper's loop: lower the kernels it is asked for; never called by hand."""
    from grader import protocol
    from grader.replay import kernels

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
                error = _lower(_probe_kernel(), {"x": "*fp32", "B": "constexpr"}, {"B": 16})
                reply = {"unavailable": error["error"]} if error.get("error") else {}
            except Unavailable as exc:
                reply = {"unavailable": str(exc)}
            protocol.send(sock, reply)
            continue
        try:
            path = request["path"]
            if path not in modules:
                modules[path] = kernels.load(Path(path), "triton").namespace
            jit, _ = unwrap(modules[path][request["kernel"]])  # under an autotuner
            constexprs = {k: constant_value(v) for k, v in request["constexprs"].items()}
            reply = _lower(jit, request["signature"], constexprs, Path(path),
                           request.get("options") or {}, int(request.get("arch", TARGET[1])))
        except kernels.SourceError as exc:
            reply = {"error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - told to the student as the check's failure
            reply = {"error": f"the module could not be compiled for a GPU: {message(exc)}"}
        protocol.send(sock, reply)


def _probe_kernel():
    import triton
    import triton.language as tl

    def probe(x, B: tl.constexpr):
        offsets = tl.arange(0, B)
        tl.store(x + offsets, tl.load(x + offsets) * 2)

    return triton.jit(probe)


def _lower(jit, signature: dict, constexprs: dict, path: Path | None = None,
           options: dict | None = None, arch: int = TARGET[1]) -> dict:
    """Triton's compiler on one kernel, in the helper process: {} where it builds it,
    {"error": its message, at the kernel line of `path`}, or {"options": why the launch's
    options are refused}."""
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
    target = GPUTarget(TARGET[0], arch, TARGET[2])
    backend = make_backend(target)
    with warnings.catch_warnings():  # notices about option defaults are not the student's
        warnings.simplefilter("ignore")
        try:
            parsed = backend.parse_options(dict(options or {}))
        except (AssertionError, ValueError, TypeError) as exc:
            shown = ", ".join(f"{k}={v!r}" for k, v in sorted((options or {}).items()))
            return {"options": f"Triton's compiler refuses to build the kernel with {shown} "
                               f"for sm_{arch}: {message(exc)}"}
        try:
            source = ASTSource(fn=jit, signature=signature, constexprs=constexprs)
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            module = source.make_ir(target, parsed, backend.get_codegen_implementation(parsed),
                                    backend.get_module_map(), context)
        except TypeError as exc:
            if "make_ir" in str(exc) or "positional argument" in str(exc):
                raise Unavailable(f"this Triton's front end takes other arguments ({exc})") \
                    from None
            return {"error": rejection(exc, path)}
        except Exception as exc:  # noqa: BLE001 - the compiler's rejection is the answer
            return {"error": rejection(exc, path)}
        try:
            _compile(backend, parsed, source, module)
        except Exception as exc:  # noqa: BLE001 - the compiler's rejection is the answer
            return {"error": rejection(exc, path)}
    return {}


def _compile(backend, options, source, module) -> None:
    """The front end's module through the backend's CPU_STAGES, as a GPU backend compiles a
    launch (the passes that read num_warps, num_ctas and num_stages among them)."""
    stages: dict = {}
    backend.add_stages(stages, options, source.language)
    metadata: dict = {}
    for name in CPU_STAGES:
        module = stages[name](module, metadata)
