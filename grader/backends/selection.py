"""Backends: where a stage's kernels run, and how the grader picks one.

A backend names a track (which module of a stage it grades: the Triton or the cuTile one),
the torch device its inputs live on, and a probe that says whether it can run on this
machine and, if not, what to do about it. Each track has two, named in its record
(grader.tracks): one on a CUDA GPU, one on the CPU. Its backends part probes and prepares
them; this module words them, from the record's words and the part's facts. `auto` picks the best backend that can run here and records why, so the scorecard
can say it.

PyTorch is imported when a question needs it, not with this module: the command line builds
its options from these names, and `grade --help` has no use for PyTorch (1-2 s to import).
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from dataclasses import dataclass
from typing import Callable

from grader.errors import BackendUnavailable
from grader.tracks import AUTO_ORDER, TRACKS, Track, wing

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
        wing(self.track).backends.prepare(self)


@dataclass(frozen=True)
class Selection:
    backend: Backend
    reason: str


# The oldest GPU whose arithmetic has each dtype: sm_75 has no bfloat16 instructions (no
# bf16 tensor cores), so a bf16 case there is not graded rather than failed or passed.
DTYPE_MIN_CAPABILITY = {"bfloat16": (8, 0)}


# The device files of a GPU that PyTorch could use on Linux: NVIDIA's driver, WSL2's GPU,
# AMD's (a ROCm build of PyTorch answers for it as CUDA).
GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/kfd")


def cuda_available() -> bool:
    """Whether PyTorch has a CUDA GPU here. A Linux machine with no GPU device file has none,
    which is known without importing PyTorch; anywhere else PyTorch is asked, as it is
    wherever it is imported already (the answer is then free, and the one it gives)."""
    if ("torch" not in sys.modules and sys.platform == "linux"
            and not any(os.path.exists(device) for device in GPU_DEVICES)):
        return False
    import torch

    return torch.cuda.is_available()


def gpu_arch() -> str | None:
    """`sm_90` for the GPU in use, None without one."""
    if not cuda_available():
        return None
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def no_gpu() -> str | None:
    """What this machine has instead of a CUDA GPU PyTorch can use, for a probe's message
    ("no CUDA GPU", "a CPU-only build of PyTorch"); None where it has one."""
    if cuda_available():
        return None
    import torch

    return "a CPU-only build of PyTorch" if torch.version.cuda is None else "no CUDA GPU"


def gpu_name() -> str:
    if not cuda_available():
        return "no GPU"
    import torch

    return torch.cuda.get_device_name()


def dtype_unsupported(dtype: str, device: str) -> str | None:
    """Why cases in `dtype` cannot be graded on this device's GPU (None: they can)."""
    needed = DTYPE_MIN_CAPABILITY.get(dtype)
    if device != "cuda" or needed is None:
        return None
    import torch

    have = torch.cuda.get_device_capability()
    if have >= needed:
        return None
    short = {"bfloat16": "bf16"}.get(dtype, dtype)
    return (f"{short} needs sm_{needed[0]}{needed[1]}, and {gpu_name()} is "
            f"sm_{have[0]}{have[1]}")


def _backend(track: Track, device: str) -> Backend:
    name = track.gpu_backend if device == "cuda" else track.cpu_backend
    probe = functools.partial(_probe, track, device)
    return Backend(name, track.name, device, track.summary(device), probe,
                   interpret=device == "cpu")


def _probe(track: Track, device: str) -> str | None:
    if device == "cuda" and track.parts.gpu is None:
        return f"the {track.title} track has no GPU backend: use --backend {track.cpu_backend}"
    return wing(track).backends.probe(device)


def _reason(track: Track, device: str) -> str:
    """Why `auto` grades `track` on `device`."""
    if device == "cuda":
        facts = wing(track).backends.gpu_facts()
        return "; ".join([f"CUDA GPU found: {gpu_name()}", *facts])
    cause = ("no usable CUDA GPU" if not cuda_available() else
             f"the {track.title} track cannot run on this GPU; `grade doctor` says why")
    return f"{cause}, so {track.cpu_runner} runs the {track.title} kernels on the CPU"


def _forced(track: Track) -> str | None:
    """Why the environment asks `auto` for the track's CPU backend; None: it does not."""
    if track.forced_by is None:
        return None
    variable, value = track.forced_by
    return f"{variable}={value} is set in the environment" if os.environ.get(variable) == value \
        else None


# Every track's GPU backend, then every track's CPU backend.
BACKENDS: dict[str, Backend] = {
    b.name: b for b in (_backend(t, d) for d in ("cuda", "cpu") for t in TRACKS.values())}

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
    facts = [] if backend.interpret else wing(backend.track).backends.gpu_facts()
    return Selection(backend, "; ".join(["chosen with --backend", *facts]))


def _auto(track: str | None = None) -> Selection:
    if track is None:
        for record in TRACKS.values():
            forced = _forced(record)  # the environment asks for a CPU backend
            if forced:
                return Selection(BACKENDS[record.cpu_backend], forced)
        *first, last = (TRACKS[name] for name in AUTO_ORDER)
        for record in first:
            gpu = BACKENDS[record.gpu_backend]
            if _runs(gpu):
                return Selection(gpu, f"{_reason(record, 'cuda')} (use --track "
                                      f"{last.name} for the {last.title} track)")
        track = last.name
    record = TRACKS[track]
    gpu, cpu = BACKENDS[record.gpu_backend], BACKENDS[record.cpu_backend]
    if _runs(gpu):
        return Selection(gpu, _reason(record, "cuda"))
    missing = cpu.probe()
    if missing:
        raise BackendUnavailable(f"The {record.title} track cannot be graded here: {missing}")
    return Selection(cpu, _reason(record, "cpu"))


def _runs(gpu: Backend) -> bool:
    """Whether a GPU backend runs here. Every one needs a CUDA GPU: where there is none, its
    probe (whose message would ask PyTorch what build it is) is not needed."""
    return cuda_available() and gpu.probe() is None


def machine_info() -> dict[str, str | None]:
    """Versions and hardware that a result depends on, for the scorecard and the JSON."""
    import torch

    gpu = torch.cuda.get_device_name() if cuda_available() else None
    versions = {k: v for track in TRACKS.values() for k, v in wing(track).backends.versions().items()}
    return {"python": platform.python_version(), "torch": torch.__version__, **versions,
            "gpu": gpu, "cuda": torch.version.cuda}
