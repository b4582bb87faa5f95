"""cuTile kernels built from source, as the replay runs them on a CPU (grader.replay.source):
each launch checked by cuTile's front end (grader.languages.cutile.frontend), then run by
the simulator."""

from __future__ import annotations

import torch

from grader.languages.cutile.build import cutile_parameters


def parameters(kernel) -> list[str]:
    return [n for n, _ in cutile_parameters(kernel)]


def launch(step, kernel, args: tuple, kwargs: dict) -> None:
    import cuda.tile as ct

    # On a CPU the simulator stands in for CUDA's current stream (simulator.install).
    ct.launch(torch.cuda.current_stream(), step.grid, kernel, args)
