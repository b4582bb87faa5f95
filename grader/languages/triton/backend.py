"""Where Triton runs, as the grading process sees it (the backends part of the Triton track,
grader.tracks.contract.BackendProbe): on a CUDA GPU, or in its interpreter on the CPU; the probe
of each, and the interpreter's mode set before a kernel is loaded."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys

from grader.backends.selection import gpu_name, no_gpu
from grader.errors import BackendUnavailable

# Colab's free T4 (sm_75) is the oldest GPU graded: Triton runs there.
MIN_CAPABILITY = (7, 5)


def missing() -> str | None:
    if importlib.util.find_spec("triton") is None:
        return (
            "Triton is not installed. Install it with `pip install triton` "
            "(Triton ships wheels for Linux; on macOS or Windows use WSL2, Colab or a Linux box)."
        )
    return None


def cuda_missing() -> str | None:
    instead = no_gpu()
    if instead:
        return (f"needs a CUDA GPU, and this machine has {instead}. "
                "Use --backend triton-interpret to run kernels on the CPU.")
    import torch  # a GPU is here: PyTorch was asked already

    major, minor = torch.cuda.get_device_capability()
    if (major, minor) < MIN_CAPABILITY:
        name = gpu_name()
        return (f"{name} has compute capability {major}.{minor}; the course's Triton kernels "
                "need 7.5 (a T4) or newer.")
    return None


def probe(device: str) -> str | None:
    return missing() or (cuda_missing() if device == "cuda" else None)


def prepare(backend) -> None:
    # Triton reads TRITON_INTERPRET when a kernel is decorated, so it must be set before a
    # submission is imported, and set to 0 for the GPU so a stray export cannot slow it.
    wanted = "1" if backend.interpret else "0"
    current = os.environ.get("TRITON_INTERPRET", "0")
    if "triton" in sys.modules and current != wanted:
        # triton.language's own helpers were decorated in the other mode at import time.
        raise BackendUnavailable(
            f"Triton was imported with TRITON_INTERPRET={current} before the grader set up "
            f"the {backend.name} backend. Set TRITON_INTERPRET={wanted} before importing "
            "triton, or run `grade` in a fresh process."
        )
    os.environ["TRITON_INTERPRET"] = wanted


def versions() -> dict[str, str | None]:
    return {"triton": _version()}


def _version() -> str | None:
    try:
        # Read from the metadata: importing triton here would fix its interpreter mode.
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None
