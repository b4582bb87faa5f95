"""Backends: where a stage's kernels run, and how the grader picks one.

A backend names a track (which module of a stage it grades: the Triton or the cuTile one),
the torch device its inputs live on, and a probe that says whether it can run on this
machine and, if not, what to do about it. `auto` picks the best backend that can run here
and records why, so the scorecard can say it.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass
from typing import Callable

import torch

from grader.errors import BackendUnavailable
from grader.languages.cutile import toolchain
from grader.tracks import wing

AUTO = "auto"


@dataclass(frozen=True)
class Backend:
    name: str
    track: str  # the course.toml `modules` key this backend grades
    device: str  # where inputs and outputs live
    summary: str
    probe: Callable[[], str | None]  # None when usable, else why not and the fix
    interpret: bool = False  # Triton's interpreter, or the cuTile simulator, on the CPU

    def prepare(self) -> None:
        """Set up the process (and the grading child it starts) before kernels are loaded."""
        if self.track == "cutile":  # the simulator is the worker's choice, by the plan's device
            if not self.interpret:
                toolchain.apply(toolchain.probe(gpu_arch()))  # e.g. drop a stale CUDA_HOME
        else:
            wing(self.track).prepare(self)


@dataclass(frozen=True)
class Selection:
    backend: Backend
    reason: str


CUTILE_MAJORS = (8, 9, 10, 11, 12)  # compute capabilities cuTile compiles for
# The oldest GPU whose arithmetic has each dtype: sm_75 has no bfloat16 instructions (no
# bf16 tensor cores), so a bf16 case there is not graded rather than failed or passed.
DTYPE_MIN_CAPABILITY = {"bfloat16": (8, 0)}


def gpu_arch() -> str | None:
    """`sm_90` for the GPU in use, None without one."""
    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def gpu_name() -> str:
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"


def dtype_unsupported(dtype: str, device: str) -> str | None:
    """Why cases in `dtype` cannot be graded on this device's GPU (None: they can)."""
    needed = DTYPE_MIN_CAPABILITY.get(dtype)
    if device != "cuda" or needed is None:
        return None
    have = torch.cuda.get_device_capability()
    if have >= needed:
        return None
    short = {"bfloat16": "bf16"}.get(dtype, dtype)
    return (f"{short} needs sm_{needed[0]}{needed[1]}, and {gpu_name()} is "
            f"sm_{have[0]}{have[1]}")


def _cuda_tile_missing() -> str | None:
    if toolchain.cuda_tile_version() is None:
        return f"cuda-tile is not installed. Install it with: {toolchain.INSTALL_FIX}"
    return None


def _probe_cutile() -> str | None:
    if missing := _cuda_tile_missing():
        return missing
    if not torch.cuda.is_available():
        build = "a CPU-only build of PyTorch" if torch.version.cuda is None else "no CUDA GPU"
        return (
            f"cuTile kernels run only on a CUDA GPU, and this machine has {build}. Here they "
            "can be compile-checked with `grade compile`; the Triton track runs on the CPU "
            "with --backend triton-interpret."
        )
    major, minor = torch.cuda.get_device_capability()
    if major not in CUTILE_MAJORS:
        return (
            f"{torch.cuda.get_device_name()} has compute capability {major}.{minor}; cuTile "
            "supports 8.x, 9.x, 10.x, 11.x and 12.x. Use --backend triton."
        )
    found = toolchain.inspect_toolchain()
    if found.tileiras is None:
        return f"tileiras, the cuTile compiler, was not found. Install it with: {toolchain.INSTALL_FIX}"
    result = toolchain.probe(gpu_arch())
    if not result.ok:
        hint = ""
        if found.cuda_home:
            hint = (f" CUDA_HOME={found.cuda_home} (CUDA {found.cuda_home_version or '?'}) may "
                    f"be older than tileiras needs: unset it or point it at {toolchain.TILEIRAS_CUDA}.")
        return (f"tileiras ({found.tileiras}) cannot compile for {gpu_arch()}: "
                f"{result.error}.{hint} Run `grade doctor` for details.")
    return None


def _cutile_note() -> str:
    """Why cuTile grades, and any repair the grader made to the environment."""
    note = f"cuda-tile {toolchain.cuda_tile_version()} compiles for {gpu_arch()}"
    if toolchain.probe(gpu_arch()).drop_cuda_home:
        note += "; CUDA_HOME is ignored for cuTile compiles: its toolkit is too old for tileiras"
    return note


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in [
        Backend("triton", "triton", "cuda", wing("triton").summary("cuda"),
                functools.partial(wing("triton").probe, "cuda")),
        Backend("cutile", "cutile", "cuda", "cuTile kernels compiled by tileiras for the GPU",
                _probe_cutile),
        Backend("cutile-sim", "cutile", "cpu",
                "cuTile kernels run by the grader's simulator on the CPU, block by block",
                _cuda_tile_missing, interpret=True),
        Backend("triton-interpret", "triton", "cpu", wing("triton").summary("cpu"),
                functools.partial(wing("triton").probe, "cpu"), interpret=True),
    ]
}

CHOICES = (AUTO, *BACKENDS)


def select(name: str, track: str | None = None) -> Selection:
    """The backend to grade with: the one named, or for `auto` the best one that runs here
    (for `track`, when given: the tile language the student works in)."""
    if name == AUTO:
        return _auto(track)
    backend = BACKENDS.get(name)
    if backend is None:
        raise BackendUnavailable(f"Unknown backend '{name}'. Choose one of: {', '.join(CHOICES)}.")
    if track and backend.track != track:
        raise BackendUnavailable(f"Backend '{name}' grades the {backend.track} track, not {track}; "
                                 f"leave out --track, or use --backend auto.")
    why_not = backend.probe()
    if why_not:
        raise BackendUnavailable(f"Backend '{name}' cannot run here: {why_not}")
    reason = "chosen with --backend"
    if backend.track == "cutile" and not backend.interpret:
        reason += f"; {_cutile_note()}"
    return Selection(backend, reason)


def _auto(track: str | None = None) -> Selection:
    if track == "cutile":
        if _probe_cutile() is None:
            return Selection(BACKENDS["cutile"], f"{_cutile_note()} on {torch.cuda.get_device_name()}")
        missing = _cuda_tile_missing()
        if missing:
            raise BackendUnavailable(f"The cuTile track cannot be graded here: {missing}")
        cause = ("no CUDA GPU" if not torch.cuda.is_available()
                 else "cuTile cannot run on this GPU; `grade doctor` says why")
        return Selection(BACKENDS["cutile-sim"], f"{cause}, so the grader's simulator runs the "
                         "cuTile kernels on the CPU")
    triton = wing("triton")
    interpret = BACKENDS["triton-interpret"]
    forced = triton.forced()
    if track is None and forced:
        return Selection(interpret, forced)
    if track is None and _probe_cutile() is None:
        return Selection(BACKENDS["cutile"], f"{_cutile_note()} on {torch.cuda.get_device_name()}"
                         " (use --track triton for the Triton track)")
    why_not = BACKENDS["triton"].probe()
    if why_not is None:
        return Selection(BACKENDS["triton"], triton.reason("cuda"))
    missing = interpret.probe()
    if missing:
        raise BackendUnavailable(triton.unavailable(missing))
    return Selection(interpret, triton.reason("cpu"))


def machine_info() -> dict[str, str | None]:
    """Versions and hardware that a result depends on, for the scorecard and the JSON."""
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        **wing("triton").versions(),
        "cuda_tile": toolchain.cuda_tile_version(),
        "gpu": gpu,
        "cuda": torch.version.cuda,
    }
