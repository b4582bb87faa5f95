"""cuTile kernels built from source, as the replay runs them on a CPU (the CPU runner part of
the cuTile track, grader.tracks.contract.CpuRunner): each launch checked by cuTile's front
end (grader.languages.cutile.frontend), then run by the simulator under the grader's watch."""

from __future__ import annotations

from pathlib import Path

import torch

_SIMULATOR = Path(__file__).resolve().parent / "simulator"


def launch(step, kernel, args: tuple, kwargs: dict) -> None:
    import cuda.tile as ct

    # On a CPU the simulator stands in for CUDA's current stream (simulator.install).
    ct.launch(torch.cuda.current_stream(), step.grid, kernel, args)


def front_end(step, kernel, args: tuple, kwargs: dict, path: Path) -> str | None:
    from grader.languages.cutile.frontend import front_end_check

    return front_end_check(kernel, args)


def watch(watch, launch, grid: tuple[int, int, int], notes: dict):
    from grader.languages.cutile.watch import hooks

    return hooks(watch, launch, grid, notes)


def runtime(filename: str) -> str | None:
    return "cuTile simulator" if Path(filename).resolve().parent == _SIMULATOR else None
