"""The running GPU's ceilings, measured once and cached: what "fraction of the limit" means.

- Memory: a device-to-device copy of 1 GiB (bytes read plus bytes written per second).
- Compute: PyTorch's (cuBLAS) matmul at 8192^3 in each dtype; float32 with TF32 allowed.

These are measured ceilings, not datasheet numbers: a kernel at 1.0 matches the best that
the vendor's own library reaches on this GPU, with these drivers.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from grader import timing
from grader.problems import Work

CACHE_FILE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tilecourse" / "ceilings.json"
MATMUL_N = 8192
COPY_BYTES = 1 << 30


@dataclass(frozen=True)
class Ceilings:
    gpu: str
    memory_gbps: float
    tflops: dict[str, float]  # dtype name -> matmul TFLOP/s

    def limit(self, work: Work, dtype: str) -> tuple[float, str]:
        """The ceiling that applies to this work: (value, unit)."""
        if work.compute_bound:
            return self.tflops[dtype], "TFLOP/s"
        return self.memory_gbps, "GB/s"


def achieved(work: Work, seconds: float) -> float:
    """GB/s for memory-bound work, TFLOP/s for compute-bound work."""
    return work.flops / seconds / 1e12 if work.compute_bound else work.bytes / seconds / 1e9


def measure_ceilings() -> Ceilings:
    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    copy = timing.measure({"copy": lambda: dst.copy_(src)})["copy"]
    memory_gbps = 2 * COPY_BYTES / (copy.median / 1e3) / 1e9
    del src, dst
    tflops = {}
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        for name, dtype in (("bfloat16", torch.bfloat16), ("float16", torch.float16),
                            ("float32", torch.float32)):
            a = torch.randn(MATMUL_N, MATMUL_N, device="cuda").to(dtype)
            b = torch.randn(MATMUL_N, MATMUL_N, device="cuda").to(dtype)
            t = timing.measure({"mm": lambda: torch.matmul(a, b)})["mm"]
            tflops[name] = 2 * MATMUL_N**3 / (t.median / 1e3) / 1e12
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return Ceilings(torch.cuda.get_device_name(), round(memory_gbps, 1),
                    {k: round(v, 1) for k, v in tflops.items()})


def ceilings() -> Ceilings:
    """This GPU's ceilings, from the cache or measured now (about 10 seconds)."""
    key = f"{torch.cuda.get_device_name()} | torch {torch.__version__} | cuda {torch.version.cuda}"
    try:
        cached = json.loads(CACHE_FILE.read_text())
    except (OSError, ValueError):
        cached = {}
    if key in cached:
        return Ceilings(**cached[key])
    found = measure_ceilings()
    cached[key] = asdict(found)
    try:
        CACHE_FILE.parent.mkdir(parents=True, exist_ok=True)
        CACHE_FILE.write_text(json.dumps(cached, indent=1))
    except OSError:
        pass  # measured again next time
    return found
