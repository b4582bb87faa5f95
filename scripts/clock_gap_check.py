"""Why the grader's clock and do_bench disagree: the two methods taken apart, one factor at a time.

scripts/benchmark.py times every row twice, by grader.timing.measure and by Triton's
do_bench, and marks gaps above 3%. The two methods differ in two ways:

- the flush: grader.timing reads a buffer of twice the L2 (leaving clean lines); do_bench
  zeroes 256 MB (leaving L2 full of dirty lines that the timed call writes back);
- the order: grader.timing interleaves the implementations call by call and synchronises
  every ten rounds; do_bench runs one implementation at a time, 25 ms of back-to-back calls
  without a flush first, then every timed call after a flush.

Here each shape's implementations are timed by one loop in the four combinations (reading
or zeroing flush; interleaved or one at a time), next to both real methods, so each gap
splits into a flush part and an order part. Each call is timed the same way in all four:
flush, start event, call, end event, median of the calls; the reading-interleaved cell
should match grader.timing and the zeroing-one-at-a-time cell do_bench. The SM clock and the board power
are sampled every 20 ms through NVML while each cell runs, so that a gap that follows the
clock shows as one.

Usage:  python -m scripts clockgap [--only STAGE] [--repeats N] [--rounds R]
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

from grader import timing
from scripts import common
from scripts.benchmark import callables, do_bench_ms, references, shape_label, shapes

CELLS = ("read-interleaved", "zero-interleaved", "read-alone", "zero-alone")
WARMUP_MS = 25.0  # do_bench's warm-up: back-to-back calls without a flush, before the repeats
ZEROED_BYTES = 256 << 20  # do_bench's flush: this many bytes zeroed before every call


class GpuMonitor:
    """SM clock (MHz), board power (W) and clock-limit reasons, sampled in a thread through
    NVML (libnvidia-ml, by ctypes: the GPU machine has no pynvml). Without NVML it records
    nothing and says so."""

    # nvmlClocksEventReasons bits that slow the SM clock under load
    REASONS = {0x4: "power cap", 0x8: "hardware slowdown", 0x20: "thermal (software)",
               0x40: "thermal (hardware)", 0x80: "power brake"}

    def __init__(self, interval: float = 0.02):
        self.samples: list[tuple[float, int, float, int]] = []  # (time, MHz, W, reasons)
        self.interval = interval
        self.missing = ""
        try:
            self.nvml = ctypes.CDLL("libnvidia-ml.so.1")
            try:  # the name since driver 535; the older one is kept as an alias
                self._reasons = self.nvml.nvmlDeviceGetCurrentClocksEventReasons
            except AttributeError:
                self._reasons = self.nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            self.handle = ctypes.c_void_p()
            if self.nvml.nvmlInit_v2() or self.nvml.nvmlDeviceGetHandleByIndex_v2(
                    torch.cuda.current_device(), ctypes.byref(self.handle)):
                raise OSError("NVML did not start")
            self._read()  # every function it needs is there
        except (OSError, AttributeError) as exc:
            self.missing = f"no clock readings ({exc})"
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _read(self) -> tuple[int, float, int]:
        clock, power, reasons = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        self.nvml.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(clock))  # 1: SM clock
        self.nvml.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(power))  # milliwatts
        self._reasons(self.handle, ctypes.byref(reasons))
        return clock.value, power.value / 1e3, reasons.value

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), *self._read()))
            time.sleep(self.interval)

    def window(self, start: float, end: float) -> str:
        """Mean SM clock and power between two monotonic times, and every reason seen."""
        if self.missing:
            return self.missing
        inside = [s for s in self.samples if start <= s[0] <= end]
        if not inside:
            return "no sample"
        reasons = 0
        for s in inside:
            reasons |= s[3]
        named = [name for bit, name in self.REASONS.items() if reasons & bit]
        return (f"{statistics.mean(s[1] for s in inside):.0f} MHz, "
                f"{statistics.mean(s[2] for s in inside):.0f} W"
                + (f" ({', '.join(named)})" if named else ""))

    def stop(self) -> None:
        if not self.missing:
            self._stop.set()
            self._thread.join()


def timed(fn, flush, count: int) -> list:
    """`count` calls of fn, each after a flush, between CUDA events (not yet read)."""
    pairs = []
    for _ in range(count):
        flush()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    return pairs


def alone(fn, flush, repeats: int, estimate_ms: float) -> list[float]:
    """do_bench's order with the flush given: WARMUP_MS of calls back to back, then the
    timed calls one after another, one synchronisation at the end."""
    for _ in range(max(1, int(WARMUP_MS / estimate_ms))):
        fn()
    pairs = timed(fn, flush, repeats)
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in pairs]


def factorial(candidates: dict, repeats: int, rounds: int, monitor: GpuMonitor):
    """ms per implementation per cell (median over calls, then over rounds; the cells run in
    the opposite order every other round), and the clock readings of each cell."""
    clocks: dict[tuple[str, str], str] = {}
    device = torch.device("cuda", torch.cuda.current_device())
    reading = timing.L2Flush(device)
    zeroed = torch.empty(ZEROED_BYTES // 4, dtype=torch.int32, device=device)
    flushes = {"read": reading, "zero": zeroed.zero_}
    # grader.timing as benchmark.py runs it (it stops once settled: often after its 20
    # repeats, a short burst of load), then held to as many calls as the cells make.
    start = time.monotonic()
    anchor = timing.measure(candidates, timing.Budget(seconds=1.0))
    clocks[("grader.timing", "*")] = monitor.window(start, time.monotonic())
    start = time.monotonic()
    held = timing.measure(candidates, timing.Budget(seconds=1.0, min_repeats=repeats))
    clocks[("grader.timing, held", "*")] = monitor.window(start, time.monotonic())
    estimate = {name: s.median for name, s in anchor.items()}
    figures = {cell: {name: [] for name in candidates} for cell in CELLS}
    for r in range(rounds):
        for cell in CELLS if r % 2 == 0 else reversed(CELLS):
            flush = flushes[cell.split("-")[0]]
            if cell.endswith("interleaved"):
                start = time.monotonic()
                rounds_of = timing.Budget(seconds=0.0, min_repeats=repeats, max_repeats=repeats)
                for name, found in timing.measure(candidates, rounds_of, flush).items():
                    figures[cell][name].append(found.median)
                clocks[(cell, "*")] = monitor.window(start, time.monotonic())
                continue
            for name, fn in candidates.items():
                start = time.monotonic()
                figures[cell][name].append(statistics.median(alone(fn, flush, repeats, estimate[name])))
                clocks[(cell, name)] = monitor.window(start, time.monotonic())
    ms = {cell: {name: statistics.median(v) for name, v in per.items()} for cell, per in figures.items()}
    ms["grader.timing"] = estimate
    ms["grader.timing, held"] = {name: s.median for name, s in held.items()}
    start = time.monotonic()
    ms["do_bench"] = {name: do_bench_ms(fn) for name, fn in candidates.items()}
    clocks[("do_bench", "*")] = monitor.window(start, time.monotonic())
    return ms, clocks


def report(label: str, ms: dict, clocks: dict) -> list[str]:
    """Markdown rows: one per implementation, ms in each cell, then the two parts of the gap."""
    names = list(ms["grader.timing"])
    lines = [f"\n### {label}\n",
             "| implementation | grader.timing | same, held | do_bench | " + " | ".join(CELLS)
             + " | flush (zero/read, interleaved) | order (alone/interleaved, reading) |"
             " vs torch: read-interleaved / zero-alone / do_bench |",
             "|---" * (len(CELLS) + 7) + "|"]
    for name in names:
        cells = [ms[c][name] for c in ("grader.timing", "grader.timing, held", "do_bench", *CELLS)]
        flush = ms["zero-interleaved"][name] / ms["read-interleaved"][name] - 1
        order = ms["read-alone"][name] / ms["read-interleaved"][name] - 1
        ratios = [ms[c]["torch"] / ms[c][name] for c in ("read-interleaved", "zero-alone", "do_bench")]
        lines.append(f"| {name} | " + " | ".join(f"{v:.4f}" for v in cells)
                     + f" | {100 * flush:+.1f}% | {100 * order:+.1f}% | "
                     + " / ".join(f"{v:.3f}x" for v in ratios) + " |")
    lines.append("")
    if len(set(clocks.values())) == 1 and next(iter(clocks.values())).startswith("no clock"):
        return lines + [next(iter(clocks.values()))]
    lines.append("Clock and power while each cell ran (grader.timing, interleaved cells and "
                 "do_bench: all implementations together):")
    for (cell, name), reading in clocks.items():
        lines.append(f"- {cell}{'' if name == '*' else ', ' + name}: {reading}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="stage id (repeatable); default: "
                        "matmul, flash_attention and softmax")
    parser.add_argument("--repeats", type=int, default=100, help="timed calls per implementation per cell")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--markdown", type=Path, help="also write the tables there")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("clock gap check: not run: needs a GPU")
        return 1
    course = common.course()
    monitor = GpuMonitor()
    lines = [f"# {torch.cuda.get_device_name()}, torch {torch.__version__}: ms per call "
             f"(median of {args.repeats} calls, median of {args.rounds} rounds)"]
    print(lines[0], flush=True)
    try:
        for stage_id in args.only or ["matmul", "flash_attention", "softmax"]:
            stage = course.select(stage_id)
            kernels = references(course, stage, ["triton", "cutile"])
            for params, dtype in shapes(stage):
                candidates, wrong = callables(stage, kernels, params, dtype)
                for line in wrong:
                    print(f"  WRONG {stage.id} {dtype}: {line}", flush=True)
                ms, clocks = factorial(candidates, args.repeats, args.rounds, monitor)
                rows = report(f"{stage.id} {shape_label(params)} {dtype}", ms, clocks)
                print("\n".join(rows), flush=True)
                lines += rows
    finally:
        monitor.stop()
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
