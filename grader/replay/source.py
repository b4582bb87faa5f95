"""The file's kernels built from source, as the CPU backends run them: Triton's interpreter
and the cuTile simulator (grader.replay.kernels builds them; no host code of the file runs).

Both run a kernel body as Python, so each launch is first given to the real compiler's
front end (the language's CPU runner part: grader.tracks.contract.CpuRunner.front_end)
with the very arguments it runs with: a kernel the front end rejects does not run, and one
it could not check does not run either.
"""

from __future__ import annotations

from typing import Any

from grader.replay import arguments
from grader.replay.execute import Launcher
from grader.replay.kernels import KernelFile
from grader.replay.locate import describe
from grader.replay.proposal import Launch, ProposalError
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
        return wing(step.language).reader.parameters(self.kernel(step))

    def rejection(self, index: int, step: Launch, args: tuple, kwargs: dict) -> str | None:
        wrong = arguments.check_arguments(self.file.path, step.kernel, wing(step.language).reader,
                                self.kernel(step), len(args), kwargs)
        if wrong:
            raise ProposalError(wrong)
        if not self.frontend:
            return None
        return wing(step.language).cpu.front_end(step, self.kernel(step), args, kwargs,
                                                 self.file.path)

    def launcher(self, index: int, step: Launch) -> Launcher:
        kernel, runner = self.kernel(step), wing(step.language).cpu
        return lambda args, kwargs: runner.launch(step, kernel, args, kwargs)

    def describe(self, exc: BaseException) -> str:
        return describe(exc, self.file.path)
