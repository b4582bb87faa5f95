"""The file's kernels built from source, as the CPU backends run them: Triton's interpreter
and the cuTile simulator (grader.replay.kernels builds them; no host code of the file runs).

Both run a kernel body as Python, so each launch is first given to the real compiler's
front end (grader.replay.frontends) with the very arguments it runs with: a kernel the
front end rejects does not run, and one it could not check does not run either.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.replay import frontends
from grader.replay.execute import Launcher
from grader.replay.kernels import KernelFile
from grader.replay.locate import describe
from grader.replay.proposal import Launch, ProposalError
from grader.replay.triton_binary import unwrap


class SourceKernels:
    """`file`'s kernels; `frontend`: check each launch with the real compiler's front end
    (always, where an interpreter runs the kernels)."""

    def __init__(self, file: KernelFile, frontend: bool = True):
        self.file = file
        self.frontend = frontend

    def kernel(self, step: Launch) -> Any:
        return self.file.kernel(step.kernel, step.language)

    def parameters(self, index: int, step: Launch) -> list[str]:
        return PARAMETERS[step.language](self.kernel(step))

    def check(self, index: int, step: Launch, args: tuple, kwargs: dict) -> str | None:
        if not self.frontend:
            return None
        return FRONT_ENDS[step.language](self, step, self.kernel(step), args, kwargs)

    def launcher(self, index: int, step: Launch) -> Launcher:
        kernel, launch = self.kernel(step), LAUNCHERS[step.language]
        return lambda args, kwargs: launch(step, kernel, args, kwargs)

    def describe(self, exc: BaseException) -> str:
        return describe(exc, self.file.path)

    def _check_cutile(self, step: Launch, kernel, args: tuple, kwargs: dict) -> str | None:
        return frontends.cutile(kernel, args)

    def _check_triton(self, step: Launch, kernel, args: tuple, kwargs: dict) -> str | None:
        jit, configs = unwrap(kernel)
        bound = dict(zip(jit.arg_names, args))
        bound.update({k: v for k, v in kwargs.items() if k in jit.arg_names})
        for config in configs or [None]:
            merged = {**bound, **(config.kwargs if config is not None else {})}
            error = frontends.triton(step.kernel, jit.fn, merged, self.file.path,
                                     getattr(jit, "do_not_specialize", ()))
            if error:
                return error
        return None


def _grid(step: Launch, kernel) -> Any:
    if step.grids is None:
        return step.grid
    configs = getattr(kernel, "configs", None) or []
    if len(configs) != len(step.grids):
        raise ProposalError(f"the launch of {step.kernel} gives grids for {len(step.grids)} "
                            f"configurations; its @triton.autotune has {len(configs)}")

    def grid(meta: dict):
        for config, found in zip(configs, step.grids):
            if all(meta.get(k) == v for k, v in config.kwargs.items()):
                return found
        return step.grid

    return grid


def _launch_triton(step: Launch, kernel, args: tuple, kwargs: dict) -> None:
    kernel[_grid(step, kernel)](*args, **kwargs)


def _launch_cutile(step: Launch, kernel, args: tuple, kwargs: dict) -> None:
    import cuda.tile as ct

    # On a CPU the simulator stands in for CUDA's current stream (grader.languages.cutile.simulator's install).
    ct.launch(torch.cuda.current_stream(), step.grid, kernel, args)


def _triton_parameters(kernel) -> list[str]:
    return list(unwrap(kernel)[0].arg_names)


def _cutile_parameters(kernel) -> list[str]:
    from grader.languages.cutile.build import cutile_parameters

    return [n for n, _ in cutile_parameters(kernel)]


# Per track (grader.tracks): how a kernel is checked by its compiler's front end, launched,
# and its parameters named.
FRONT_ENDS = {"triton": SourceKernels._check_triton, "cutile": SourceKernels._check_cutile}
LAUNCHERS = {"triton": _launch_triton, "cutile": _launch_cutile}
PARAMETERS = {"triton": _triton_parameters, "cutile": _cutile_parameters}
