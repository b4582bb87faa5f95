"""Causes any stage's output can confirm from the kernels' traffic (grader.replay.traffic),
before the problem's own checks (grader.problems.<problem>.explain)."""

from __future__ import annotations

import torch

from grader.problems.evidence import Cause, Evidence


def from_traffic(ev: Evidence, written: torch.Tensor | None, block: int | None,
                 grids: list[tuple[int, ...]] = ()) -> list[Cause]:
    kinds = {f.get("kind"): f for f in ev.traffic}
    if grids and any(0 in g for g in grids) and (written is None or not written.any()):
        empty = next(g for g in grids if 0 in g)
        return [Cause("grid_short", f"the kernel was launched with the grid {tuple(empty)}: no "
                      "program at all, so nothing was written; the grid rounds the element "
                      "count down to whole blocks, not up")]
    if "same_elements" in kinds:
        return [Cause("same_tile", "every program wrote one and the same tile: "
                      + kinds["same_elements"]["text"])]
    if "never_read" in kinds:
        return [Cause("input_not_read", "an input was never read: "
                      + kinds["never_read"]["text"].split(" (first")[0]
                      + "; check which pointer or array each load is given")]
    if "load_out_of_bounds" in kinds:
        return [Cause("missing_load_mask", kinds["load_out_of_bounds"]["text"])]
    if written is not None and block and _short_prefix(written.reshape(-1), block):
        done = int(written.sum())
        return [Cause("grid_short", f"the programs wrote the first {done} elements, whole "
                      f"blocks of {block}, and nothing after: the grid has too few programs "
                      "(it rounds the element count down to whole blocks, not up)")]
    return []


def _short_prefix(written: torch.Tensor, block: int) -> bool:
    done = int(written.sum())
    return (0 < done < written.numel() and bool(written[:done].all()) and done % block == 0
            and written.dim() == 1)
