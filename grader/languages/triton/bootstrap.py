"""Triton in a worker, before the submission is loaded (grader.sandbox.worker)."""

from __future__ import annotations

import os


def bind(role: str, device: str) -> None:
    """Import Triton first (in the mode the backend set); in the replay, start the front
    end's helper where the interpreter runs the kernels; where the GPU does (the replay and
    its builders), give tensor descriptors their scratch memory and make Triton's driver."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return  # the submission's own import then says what is missing
    if role == "child":
        return
    if os.environ.get("TRITON_INTERPRET") == "1":
        from grader.languages.triton.frontend import start_helper

        try:
            start_helper()  # its imports overlap loading the kernels
        except OSError:
            pass  # the first launch tries again, and says why it cannot check
    if device != "cpu":
        _scratch_for_descriptors(device)
        _driver_ready()


def warm() -> None:
    """In a template, where kernels run on the GPU: the compiler's modules imported, and the
    digest of Triton itself computed, which every compile's cache key holds and which its
    first compile in each process computed again (its sources and its 400-500 MB library
    read and hashed: 0.4 s of each builder's first build). Kept for the process's life, so
    a fork of the template has it. Reading files only: no CUDA, nothing of a submission."""
    if os.environ.get("TRITON_INTERPRET") != "0":  # set so by the Triton GPU backend alone
        return
    import triton.compiler.code_generator  # noqa: F401

    try:
        from triton.runtime.cache import triton_key
    except ImportError:  # where an older Triton kept it
        from triton.compiler.compiler import triton_key
    triton_key()


def _driver_ready() -> None:
    """Triton's GPU driver made now, before the process says it is ready: making it compiles
    Triton's C utilities in a fresh cache (each process has its own), about a second that
    the stage's first case waited for in the replay. (A driver that cannot be made is left
    to the first launch, which reports it.)"""
    try:
        from triton.runtime import driver

        driver.active.get_current_target()
    except Exception:  # noqa: BLE001 - reported by the launch that needs it
        pass


def _scratch_for_descriptors(device: str) -> None:
    """Triton kernels that make tensor descriptors need global scratch memory, which a
    wrapper would give with triton.set_allocator: the replay gives it for every kernel."""
    import torch
    import triton

    def scratch(size: int, alignment: int, stream) -> torch.Tensor:  # noqa: ARG001
        return torch.empty(size, dtype=torch.int8, device=device)

    if hasattr(triton, "set_allocator"):
        triton.set_allocator(scratch)
