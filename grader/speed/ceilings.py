"""The running GPU's ceilings, measured once and cached: what "fraction of the limit" means.

- Memory: a device-to-device copy of 1 GiB (bytes read plus bytes written per second).
- Compute: PyTorch's (cuBLAS) matmul at 8192^3 in each dtype; float32 with TF32 allowed.

These are measured ceilings, not datasheet numbers: a kernel at 1.0 matches the best that
the vendor's own library reaches on this GPU, with these drivers. A case's limit is its
roofline: the longer of moving its bytes at the measured bandwidth and doing its FLOPs at
the measured peak, so a kernel whose FLOPs are few (attention at a short head dimension,
a matmul with a small K) is judged against memory when memory is what binds it.

The cache is keyed by the GPU's name and capability, torch and CUDA. A cached figure is a
claim about the past (measured while another process shared the GPU, it is too low): when a
kernel appears to beat it by more than noise, it is measured again before anything is
concluded (grader.speed.check).
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

    def roofline(self, work: Work, dtype: str) -> Roofline:
        """The least time `work` can take here, and the resource that sets it."""
        memory_s = work.bytes / (self.memory_gbps * 1e9)
        compute_s = work.flops / (self.tflops[dtype] * 1e12) if work.flops else 0.0
        if compute_s > memory_s:
            return Roofline(compute_s, "TFLOP/s", self.tflops[dtype])
        return Roofline(memory_s, "GB/s", self.memory_gbps)


@dataclass(frozen=True)
class Roofline:
    """A case's limit: `seconds` at best, set by the resource measured in `unit`."""

    seconds: float
    unit: str  # "GB/s" (memory binds) or "TFLOP/s" (compute binds)
    ceiling: float  # that resource's measured ceiling, in `unit`

    def fraction(self, seconds: float) -> float:
        """How close a time of `seconds` comes to the limit (1.0: at it)."""
        return self.seconds / seconds

    def achieved(self, seconds: float) -> float:
        """The binding resource's rate at a time of `seconds`, in `unit`."""
        return self.ceiling * self.fraction(seconds)


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


def ceilings(remeasure: bool = False) -> Ceilings:
    """This GPU's ceilings, from the cache or measured now (about 10 seconds); `remeasure`
    replaces the cached figures."""
    major, minor = torch.cuda.get_device_capability()
    key = (f"{torch.cuda.get_device_name()} (sm_{major}{minor}) | torch {torch.__version__} | "
           f"cuda {torch.version.cuda}")
    cached = None if remeasure else cache.lookup(CACHE_FILE, key)
    if cached:
        return Ceilings(**cached)
    found = measure_ceilings()
    cache.remember(CACHE_FILE, key, asdict(found))
    return found
