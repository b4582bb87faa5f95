"""Where cuTile runs, as the grading process sees it (the backends part of the cuTile track,
grader.tracks.contract.BackendProbe): on a CUDA GPU its kernels are compiled by tileiras, on the
CPU the grader's simulator runs them; the probe of each, the repair of the environment
before a compile, and the facts the GPU backend's reason adds."""

from __future__ import annotations

from grader.backends.selection import gpu_arch, gpu_name, no_gpu
from grader.languages.cutile import toolchain

MAJORS = (8, 9, 10, 11, 12)  # compute capabilities cuTile compiles for


def missing() -> str | None:
    if toolchain.cuda_tile_version() is None:
        return f"cuda-tile is not installed. Install it with: {toolchain.INSTALL_FIX}"
    return None


def gpu_missing() -> str | None:
    instead = no_gpu()
    if instead:
        return (f"cuTile kernels run only on a CUDA GPU, and this machine has {instead}. Here "
                "they can be compile-checked with `grade compile`; the Triton track runs on the "
                "CPU with --backend triton-interpret.")
    import torch  # a GPU is here: PyTorch was asked already

    major, minor = torch.cuda.get_device_capability()
    if major not in MAJORS:
        return (
            f"{gpu_name()} has compute capability {major}.{minor}; cuTile "
            "supports 8.x, 9.x, 10.x, 11.x and 12.x. Use --backend triton."
        )
    found = toolchain.inspect_toolchain()
    if found.tileiras is None:
        return ("tileiras, the cuTile compiler, was not found. Install it with: "
                f"{toolchain.INSTALL_FIX}")
    result = toolchain.probe(gpu_arch())
    if not result.ok:
        hint = ""
        if found.cuda_home:
            hint = (f" CUDA_HOME={found.cuda_home} (CUDA {found.cuda_home_version or '?'}) may "
                    "be older than tileiras needs: unset it or point it at "
                    f"{toolchain.TILEIRAS_CUDA}.")
        return (f"tileiras ({found.tileiras}) cannot compile for {gpu_arch()}: "
                f"{result.error}.{hint} Run `grade doctor` for details.")
    return None


def probe(device: str) -> str | None:
    return missing() or (gpu_missing() if device == "cuda" else None)


def prepare(backend) -> None:
    # The simulator is the worker's choice, by the plan's device; a compile for the GPU
    # needs the toolchain's repair first (a stale CUDA_HOME dropped, say).
    if not backend.interpret:
        toolchain.apply(toolchain.probe(gpu_arch()))


def gpu_facts() -> list[str]:
    """The compiler and its target, and any repair the grader made to the environment."""
    found = [f"cuda-tile {toolchain.cuda_tile_version()} compiles for {gpu_arch()}"]
    if toolchain.probe(gpu_arch()).drop_cuda_home:
        found.append("CUDA_HOME is ignored for cuTile compiles: its toolkit is too old for "
                     "tileiras")
    return found


def versions() -> dict[str, str | None]:
    return {"cuda_tile": toolchain.cuda_tile_version()}


def readable() -> list[str]:
    import os
    import shutil

    tileiras = shutil.which("tileiras")
    # Its toolchain's folder: tileiras finds ptxas and libnvvm beside its bin/.
    return [os.path.dirname(os.path.dirname(os.path.realpath(tileiras)))] if tileiras else []
