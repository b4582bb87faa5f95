"""Where a process's timed calls put their tensors in GPU memory, moved on purpose.

Where a timed call's inputs and output lie can move its time: on an H100, a 4096^3 bf16
Triton matmul took 0.180-0.182 ms or 0.195-0.198 ms by where they lay, and cuBLAS's
0.175-0.177 or 0.190-0.193 ms on the same tensors (BENCHMARKS.md). Within one process
PyTorch's caching allocator hands a trial's calls the blocks the previous calls freed, so a
trial can time one placement of its tensors and the next trial, on the other side or in
another process, another one: a reference's speed-up moved by up to 2.7% over five
gradings while each trial looked steady. Two moves spread a trial over placements, on
both sides (the grader's baseline and the replay):

- before each call's inputs are drawn, grader.timing.run_batch allocates a spacer of a
  random size, held until the call has run, so each call's tensors lie at other offsets;
- every few batches (grader.speed.trial.MOVE_EVERY) `Placements.move` gives the process's
  unused cached memory back to the driver and takes a ballast of a random number of pages
  before anything else: the next batches' tensors are allocated anew, behind it. The
  batch after a move, which does the allocating, is not counted.
"""

from __future__ import annotations

import random

import torch

# Spacers: at least the allocator's smallest large-pool request (smaller ones come from
# another pool and move nothing), at most PLACEMENT_SPREAD more, in its 512-byte steps.
PLACEMENT_MIN = 1 << 20
PLACEMENT_SPREAD = 64 << 20
PLACEMENT_STEP = 512
BALLAST_PAGES = 128  # at most, of the driver's 2 MiB pages


class Placements:
    """Where one process's timed calls put their tensors: a spacer of a random size per
    call, and a ballast of a random size per move."""

    def __init__(self, device: "torch.device | str"):
        self.device = torch.device(device)
        self.random = random.Random()  # seeded by the operating system, per process
        self.ballast: torch.Tensor | None = None

    def __call__(self) -> torch.Tensor:
        steps = self.random.randrange(PLACEMENT_SPREAD // PLACEMENT_STEP + 1)
        return torch.empty(PLACEMENT_MIN + steps * PLACEMENT_STEP, dtype=torch.uint8,
                           device=self.device)

    def move(self) -> None:
        """The next batches' tensors in other memory (a GPU only): the unused cache given
        back to the driver, then a ballast of 0 to BALLAST_PAGES pages taken first."""
        if self.device.type != "cuda":
            return
        self.ballast = None
        torch.cuda.empty_cache()
        pages = self.random.randrange(BALLAST_PAGES + 1)
        self.ballast = torch.empty(pages << 21, dtype=torch.uint8, device=self.device)
