"""The running GPU's ceilings, measured once and cached: what "fraction of the limit" means.

- Memory: a device-to-device copy of 1 GiB (bytes read plus bytes written per second).
- Compute: PyTorch's (cuBLAS) matmul at 8192^3 in each dtype; float32 with TF32 allowed.

These are measured ceilings, not datasheet numbers: a kernel at 1.0 matches the best that
the vendor's own library reaches on this GPU, with these drivers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from grader import cache, timing
from grader.problems import DTYPES, Work

CACHE_FILE = cache.ROOT / "ceilings.json"
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
    tflops = {}
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        for name, dtype in DTYPES.items():
            a = torch.randn(MATMUL_N, MATMUL_N, device="cuda").to(dtype)
            b = torch.randn(MATMUL_N, MATMUL_N, device="cuda").to(dtype)
            t = timing.measure({"mm": lambda a=a, b=b: torch.matmul(a, b)})["mm"]
            tflops[name] = 2 * MATMUL_N**3 / (t.median / 1e3) / 1e12
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return Ceilings(torch.cuda.get_device_name(), round(memory_gbps, 1),
                    {k: round(v, 1) for k, v in tflops.items()})


def ceilings() -> Ceilings:
    """This GPU's ceilings, from the cache or measured now (about 10 seconds)."""
    key = f"{torch.cuda.get_device_name()} | torch {torch.__version__} | cuda {torch.version.cuda}"
    cached = cache.lookup(CACHE_FILE, key)
    if cached:
        return Ceilings(**cached)
    found = measure_ceilings()
    cache.remember(CACHE_FILE, key, asdict(found))
    return found
