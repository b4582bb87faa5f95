"""The processes that run student code (started by grader.sandbox.confined, never by hand).

Each takes its output file and its plan from the grader, confines itself
(grader.sandbox.privileges), binds what it relies on, says which protections are in force,
and only then answers requests, one at a time. A spare (grader.sandbox.spares) is a fork of
a template that imported what every worker needs (WARM_IMPORTS) and ran nothing else.
Nothing of the submission is read before the plan. Its role decides which requests it
answers: each role is one class, kept with the grader's side of the same process
(grader.sandbox.roles lists them).
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import tempfile

from grader import protocol
from grader.sandbox import privileges, processes
from grader.tracks import TRACKS, wing

# What every worker imports, whatever its role and plan (a spare, while it waits). A role's
# own module is not among them: once the rest is warm it takes a few milliseconds to import.
WARM_IMPORTS = ("torch", *(m for t in TRACKS.values() for m in t.preload),
                "grader.problems", "grader.timing", "grader.replay.poison",
                "grader.replay.execute", "grader.sandbox.launches", "grader.sandbox.submission")
# Each role's class, by the module that holds it (grader.sandbox.roles lists them).
ROLES = {"child": ("grader.sandbox.child", "ChildWorker"),
         "replay": ("grader.sandbox.replayer", "ReplayWorker"),
         "builder": ("grader.sandbox.builder", "BuilderWorker")}


def _warm() -> None:
    for name in WARM_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - imported again once confined, its error seen then
            pass
    for track in TRACKS:
        try:
            wing(track).worker.warm()
        except Exception:  # noqa: BLE001 - each worker then does the work itself
            pass


def _cuda_initialised() -> bool:
    """Whether this process initialised the CUDA driver. A driver that is not loaded is not
    initialised; a loaded one answers CUDA_ERROR_NOT_INITIALIZED (3) until cuInit."""
    import ctypes

    try:
        driver = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    count = ctypes.c_int(0)
    return driver.cuDeviceGetCount(ctypes.byref(count)) != 3


def _bind_before_student_code(track: str, role: str, device: str) -> None:
    """Import what grading relies on, and the kernel language with its hooks, before the
    submission can touch them (the language's worker part says what it binds, by role and device)."""
    import torch  # noqa: F401

    from grader import problems, timing  # noqa: F401
    from grader.replay import poison  # noqa: F401
    from grader.sandbox import launches, submission  # noqa: F401

    if track in TRACKS:
        wing(track).worker.bind(role, device)
    if role == "child":
        launches.install()  # the replay runs kernels; the child only proposes launches
    elif device != "cpu":
        _context(device)


def _context(device: str) -> None:
    """The replay's or a builder's CUDA context, made before it says it is ready: the grader
    asks it nothing until the stage's first case is built, and the context is made while it
    waits. (One that cannot be made is left to the first request, which reports it.)"""
    import torch

    try:
        torch.empty(1, device=device)
    except Exception:  # noqa: BLE001 - reported by the request that needs the GPU
        pass


def _worker(role: str, track: str):
    """The class that answers `role`'s requests, its module alone imported (once confined:
    each module is the grader's side of its process as well)."""
    module, name = ROLES[role]
    return getattr(importlib.import_module(module), name)(track)


def main(fd: int, start: str = "cold") -> None:
    """`start`: "cold", a worker wanted at once, imports only once confined; "template"
    imports first, then forks spares on request (grader.sandbox.spares), each of which goes
    on here with its imports done, waiting for its plan."""
    processes.die_with_parent()  # a template waits unconfined: it must not outlive the grader
    if start == "template":
        _warm()
        if _cuda_initialised():  # its copies could not use the GPU: the grader starts each
            os._exit(processes.TEMPLATE_DECLINED)
        fd = processes.serve_copies(socket.socket(fileno=fd))
    sock = socket.socket(fileno=fd)
    _, fds, _, _ = socket.recv_fds(sock, len(processes.OUTPUT_FD_TAG), 1)
    os.dup2(fds[0], 1)  # from now on, what this process prints goes to its output file
    os.dup2(fds[0], 2)
    os.close(fds[0])
    sys.stdout.reconfigure(line_buffering=True)  # a killed child keeps what it printed
    plan = protocol.receive(sock).header
    os.environ.clear()
    os.environ.update(plan["env"])
    tempfile.tempdir = None  # read again from TMPDIR, the scratch folder
    os.chdir(plan["cwd"])
    processes.single_threaded(sock)
    try:
        protections = privileges.confine(privileges.PrivilegePlan.from_json(plan["plan"]))
    except privileges.StartRefused as exc:  # before any student code: the grader's words
        protocol.send(sock, {"id": 0, "status": "refused", "value": str(exc)})
        return
    # Started with -I (nothing from the environment or the working folder on sys.path, since
    # the bootstrap runs as root); now the grader's own sys.path, behind the package root.
    sys.path[:] = list(dict.fromkeys([sys.path[0], *plan["sys_path"]]))
    sys.dont_write_bytecode = True
    _bind_before_student_code(plan["track"], plan.get("role", "child"), plan["device"])
    from grader.sandbox.submission import SubmissionError

    protocol.send(sock, {"id": 0, "status": "ready",
                         "protections": privileges.protections_json(protections)})
    worker = _worker(plan.get("role", "child"), plan["track"])
    while True:
        try:
            message = protocol.receive(sock)
        except EOFError:
            return
        request, tensors = message.header, {}
        try:
            extra = {"tensors": message.tensors} if message.tensors else {}
            value, tensors = getattr(worker, request["op"])(**request["args"], **extra)
            reply = {"status": "ok", "value": value}
        except SubmissionError as exc:
            reply = {"status": "submission-error", "value": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a broken request is the parent's to report
            reply = {"status": "error", "value": f"{type(exc).__name__}: {exc}"}
        protocol.send(sock, {"id": request["id"], **reply}, tensors,
                      on_device=request.get("on_device") is True)
