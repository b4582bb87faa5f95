"""The file's kernels built from source, as the CPU backends run them: Triton's interpreter
and the cuTile simulator (grader.replay.kernels builds them; no host code of the file runs).

Both run a kernel body as Python, so each launch is first given to the real compiler's
front end (the language's wing: grader.tracks.Wing.front_end) with the very arguments it
runs with: a kernel the front end rejects does not run, and one it could not check does
not run either.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.replay import frontends
from grader.replay.execute import Launcher
from grader.replay.kernels import KernelFile
from grader.replay.locate import describe
from grader.replay.proposal import Launch
from grader.tracks import wing


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
        return FRONT_ENDS[step.language](step, self.kernel(step), args, kwargs, self.file.path)

    def launcher(self, index: int, step: Launch) -> Launcher:
        kernel, launch = self.kernel(step), LAUNCHERS[step.language]
        return lambda args, kwargs: launch(step, kernel, args, kwargs)

    def describe(self, exc: BaseException) -> str:
        return describe(exc, self.file.path)


def _check_cutile(step: Launch, kernel, args: tuple, kwargs: dict, path) -> str | None:
    return frontends.cutile(kernel, args)


def _launch_cutile(step: Launch, kernel, args: tuple, kwargs: dict) -> None:
    import cuda.tile as ct

    # On a CPU the simulator stands in for CUDA's current stream (grader.languages.cutile.simulator's install).
    ct.launch(torch.cuda.current_stream(), step.grid, kernel, args)


def _cutile_parameters(kernel) -> list[str]:
    from grader.languages.cutile.build import cutile_parameters

    return [n for n, _ in cutile_parameters(kernel)]


# Per track (grader.tracks): how a kernel is checked by its compiler's front end, launched,
# and its parameters named.
FRONT_ENDS = {"triton": wing("triton").front_end, "cutile": _check_cutile}
LAUNCHERS = {"triton": wing("triton").launch, "cutile": _launch_cutile}
PARAMETERS = {"triton": wing("triton").parameters, "cutile": _cutile_parameters}
