"""Timing GPU code the way kernel engineers do, side by side with a baseline.

Two loops: `measure` times trusted code in one process (the GPU's ceilings, the benchmark
script); `run_batch` is one batch of a submission's timed calls, each on fresh inputs, in
the sandboxed child or, for its baseline, in the grader (grader/speed/trial.py judges them; with
`digest`, the child commits to its outputs). What follows holds for both.

- CUDA events around each call, read back in batches, so the timed region holds GPU work
  and launch overhead but not Python bookkeeping or synchronisation.
- Warm-up calls first: they absorb JIT compilation and autotuning.
- The L2 cache is flushed (a buffer twice its size is read) before every timed call, so
  no call profits from data a previous call left in L2, and none pays for it either: a
  read leaves L2 holding clean lines, so the write-back of what the previous call (or the
  flush) wrote happens during the flush, not inside the next timed call, as it would after
  a flush that zeroes its buffer. The flush is enqueued before the
  start event, which keeps the GPU busy while the CPU launches the timed call (in
  `run_batch`, which synchronises before each call, with a short GPU sleep after it).
- Candidates are interleaved, call by call in `measure` (in an order that rotates every
  round, so that none is always the first after a synchronisation), batch by batch in a
  trial, so drift of clocks, temperature or neighbours on a shared GPU hits both alike;
  verdicts use ratios.
- Repeats go on until the interquartile range of every candidate is within `rel_spread` of
  its median (after `min_repeats`), or until the time budget or `max_repeats` runs out.
- The median is the figure reported.

`SampleClock` hands the measured samples to pytest-benchmark (see grader/checks/test_speed.py),
which keeps, summarises and compares them; the measurement itself happens here.
"""

from __future__ import annotations

import gc
import math
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

BATCH = 10  # timed calls per candidate between synchronisations

# Bound at import, before any submission is loaded: a submission that patches
# torch.cuda.Event or its elapsed_time cannot change what is measured here.
_Event = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_synchronize = torch.cuda.synchronize
_sleep = torch.cuda._sleep

# GPU clock cycles of work queued ahead of each timed call in `run_batch` (about 0.1 ms at
# H200 clocks): the device is idle after its synchronisation, and without it the start
# event would fire while the CPU is still launching the call, so the host's launch overhead
# (Triton's is tens of microseconds) would count as kernel time. Measured on the H200: a
# 0.18 ms Triton matmul read 10 to 14% slower graded than timed back to back (BENCHMARKS.md).
HEADROOM_CYCLES = 200_000


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector held off, as timeit holds it off: a full collection
    in a process that imported PyTorch and Triton took 65-70 ms on the CPU machine
    (BENCHMARKS.md), and one that fell inside one side's batch (in the grader or the replay)
    would count against it as work its calls did not show. The collections put off run
    after the batch."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


# How soon a thread that waits for the interpreter gets it from one that holds it, while a
# batch is timed: Python's default is 5 ms, and the grader's other threads (the memory
# ceiling's measurements) could hold the timing thread back that long each time it wakes,
# for the reply of the replay's batch or after a synchronisation of the baseline's.
QUICK_SWITCH_SECONDS = 1e-4


@contextmanager
def quick_switches():
    """The interpreter handed between this process's threads every QUICK_SWITCH_SECONDS
    while a batch is timed; the interval before, after it. (A process times one batch at a
    time: `grade batch` grades each submission in a process of its own.)"""
    before = sys.getswitchinterval()
    if before <= QUICK_SWITCH_SECONDS:  # within a batch already
        yield
        return
    sys.setswitchinterval(QUICK_SWITCH_SECONDS)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def synchronize() -> None:
    """Wait for all work on the GPU (the function bound before any submission loaded)."""
    _synchronize()


@dataclass
class Samples:
    """Per-call times of one candidate, in milliseconds."""

    times_ms: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def spread(self) -> float:
        """Interquartile range over the median: 0.02 means the middle half lies within 2%."""
        if len(self.times_ms) < 4:
            return float("inf")
        q1, _, q3 = statistics.quantiles(self.times_ms, n=4)
        return (q3 - q1) / self.median


def speedup_error(student: list[float], baseline: list[float]) -> float:
    """The relative standard error of a speed-up, judged by the batches' own speed-ups (each
    baseline batch over the student batch timed next to it, so that drift common to both
    cancels); infinite below four batches."""
    return median_error([b / s for s, b in zip(student, baseline)])


def median_error(values: list[float]) -> float:
    """The standard error of the median of `values` relative to it: 1.2533 sigma / sqrt(n)
    for normal noise, with sigma estimated robustly as IQR / 1.349 (one wild batch does not
    hold a trial up); infinite below four values."""
    if len(values) < 4:
        return math.inf
    q1, median, q3 = statistics.quantiles(values, n=4)
    return 1.2533 * (q3 - q1) / 1.349 / math.sqrt(len(values)) / median


@dataclass(frozen=True)
class Budget:
    seconds: float = 5.0  # wall time for the timed loop of one comparison
    warmup: int = 3
    min_repeats: int = 20
    max_repeats: int = 1000
    rel_spread: float = 0.03


class L2Flush:
    """Reading a buffer twice the size of L2 evicts whatever the last call left there,
    dirty lines included, and leaves only clean lines behind (nothing to write back)."""

    def __init__(self, device: "torch.device | str"):
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 << 20
        # float32 in, float32 out: the sum reads the buffer where it lies (an int32 buffer
        # summed into int64 would first be copied, writing a temporary twice its size).
        self.buffer = torch.zeros(2 * l2 // 4, dtype=torch.float32, device=device)
        self.sink = torch.zeros((), dtype=torch.float32, device=device)  # no allocation per flush

    def __call__(self) -> None:
        torch.sum(self.buffer, dim=0, out=self.sink)


def measure(candidates: dict[str, Callable[[], object]], budget: Budget = Budget(),
            flush: Callable[[], None] | None = None) -> dict[str, Samples]:
    """Time each zero-argument callable on the current CUDA device, interleaved, with `flush`
    before every call (default: L2Flush; scripts compare other flushes through it)."""
    if flush is None:
        flush = L2Flush(torch.device("cuda", torch.cuda.current_device()))
    for fn in candidates.values():
        for _ in range(budget.warmup):
            fn()
    _synchronize()
    samples = {name: Samples() for name in candidates}
    names = list(candidates)
    rounds = 0
    deadline = time.perf_counter() + budget.seconds
    while True:
        events = {name: [] for name in candidates}
        for _ in range(BATCH):
            # The order rotates every round: in a fixed one, the first candidate would
            # always be the first call after a synchronisation and always follow the last.
            shift = rounds % len(names)
            rounds += 1
            for name in names[shift:] + names[:shift]:
                fn = candidates[name]
                flush()
                start, end = _Event(enable_timing=True), _Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                events[name].append((start, end))
        _synchronize()
        for name, pairs in events.items():
            samples[name].times_ms += [_elapsed_time(s, e) for s, e in pairs]
        repeats = len(next(iter(samples.values())).times_ms)
        settled = all(s.spread <= budget.rel_spread for s in samples.values())
        if repeats >= budget.max_repeats or (repeats >= budget.min_repeats and settled):
            break
        if time.perf_counter() > deadline and repeats >= budget.min_repeats:
            break
    return samples


def run_batch(prepare: Callable[[int], Any], call: Callable[[Any], Any], count: int,
              flush: Callable[[], None],
              place: Callable[[], Any] = lambda: None) -> tuple[list[float], list[Any]]:
    """`count` timed calls, each on inputs `prepare(i)` made just before it, outside the timed
    region, after `place()` (grader.placement: the inputs lie elsewhere each call); returns
    the CUDA-event time of each call in ms, and the outputs.

    Before each call the whole device is synchronised, so no work of an earlier call (on any
    stream) runs on into the next one, unseen by its events but not by a wall clock. The
    inputs, the L2 flush and a short GPU sleep (HEADROOM_CYCLES) are enqueued before the
    start event: the GPU is busy with them while the CPU launches the timed call, as it is
    with earlier calls when calls run back to back.
    """
    events, outputs = [], []
    for i in range(count):
        _synchronize()
        spacer = place()  # noqa: F841 - held until the call has run: the inputs go elsewhere
        inputs = prepare(i)
        flush()
        _sleep(HEADROOM_CYCLES)
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        start.record()
        outputs.append(call(inputs))
        end.record()
        events.append((start, end))
    _synchronize()
    return [_elapsed_time(s, e) for s, e in events], outputs


def digest(tensor: torch.Tensor, key: int) -> int:
    """A keyed checksum of every bit of `tensor`: the sum of its 32-bit words times a
    sequence of odd numbers drawn from `key` (each product wrapping at 32 bits), as a
    64-bit integer. Integer sums do not depend on the order of a reduction, so it is the
    same number in every process that computes it; and without the exact bits of the
    tensor, there is no cheaper way to it than computing them. Two kernels per output: the
    weights are drawn once per key and size (a trial's outputs all share both), so that the
    work around the timed calls is small and steady, and the grader's clock resolves what
    the calls hide."""
    data = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
    if data.numel() % 4:
        padded = torch.zeros((data.numel() + 3) // 4 * 4, dtype=torch.uint8, device=data.device)
        padded[: data.numel()] = data
        data = padded
    words = data.view(torch.int32)
    return int((words * _weights(key, words.numel(), words.device)).sum(dtype=torch.int64))


_drawn: dict[tuple[int, int, str], torch.Tensor] = {}  # the last weights drawn, only


def _weights(key: int, count: int, device: torch.device) -> torch.Tensor:
    wanted = (key, count, str(device))
    if wanted not in _drawn:
        _drawn.clear()  # one trial at a time: keep one sequence, not one per size ever seen
        generator = torch.Generator(device=device).manual_seed(key)
        weights = torch.randint(-(2**31), 2**31 - 1, (count,), generator=generator,
                                device=device, dtype=torch.int32)
        # Odd weights: multiplying by an odd number is one-to-one modulo 2**32, so a change
        # to any one word (its top bit too) changes its product.
        _drawn[wanted] = weights.bitwise_or_(1)
    return _drawn[wanted]


class SampleClock:
    """A pytest-benchmark timer that plays back samples measured beforehand, one per round.

    pytest-benchmark reads its timer before and after each round's target; `advance` (the
    target) moves this clock by the next sample, so the durations it records are exactly
    the CUDA-event times measured by `measure`. pytest-benchmark takes the timer when the
    check module is imported (its marker), so the check module holds one clock and `play`s
    each case's samples on it.
    """

    def __init__(self):
        self.play([])

    def play(self, times_ms: list[float]) -> None:
        """Start over on these samples (milliseconds)."""
        self.times_s = [t / 1e3 for t in times_ms]
        self.now = 0.0
        self.index = 0

    def advance(self) -> None:
        self.now += self.times_s[self.index]
        self.index += 1

    def __call__(self) -> float:
        return self.now

    def __repr__(self) -> str:  # how pytest-benchmark's JSON names its timer
        return "grader.timing.SampleClock"

