"""Causes any stage's output can confirm from the kernels' traffic (grader.replay.traffic)
and launches, before the stage's hypotheses (grader.judge.experiments). Where the
traffic shows a pattern that more than one mistake makes, what was observed is said, and no
cause is named."""

from __future__ import annotations

import math

import torch

from grader.problems.evidence import Cause, Evidence

GRID = "read the launch's grid"
WATCH = "the watch of the kernels' loads and stores saw it"


def from_traffic(ev: Evidence, written: torch.Tensor | None, block: int | None,
                 grids: list[tuple[int, ...]] = ()) -> list[Cause]:
    kinds = {f.get("kind"): f for f in ev.traffic}
    if grids and any(0 in g for g in grids) and (written is None or not written.any()):
        empty = next(g for g in grids if 0 in g)
        return [Cause("grid_short", f"the kernel was launched with the grid {tuple(empty)}: no "
                      "program at all, so nothing was written; the grid rounds the element "
                      "count down to whole blocks, not up", GRID)]
    if "same_elements" in kinds:
        return [Cause("same_tile", "every program wrote one and the same tile: "
                      + kinds["same_elements"]["text"], WATCH)]
    unread = [f for f in ev.traffic if f.get("kind") == "never_read"]
    if unread:
        inputs = len(ev.call.tensors()) if ev.call is not None else None
        if inputs is not None and len(unread) >= inputs:  # no load ran: no pointer to blame
            return [Cause("", "observed (no single cause confirmed): no element of any input "
                          "was read, so no load ran (a loop that runs zero times, a load "
                          "under a condition that is never true)")]
        return [Cause("input_not_read", "an input was never read while the others were: "
                      + unread[0]["text"].split(" (first")[0]
                      + "; check which pointer or array each load is given, and that the "
                      "loop holding its load runs", WATCH)]
    if "load_out_of_bounds" in kinds:
        return [Cause("missing_load_mask", kinds["load_out_of_bounds"]["text"], WATCH)]
    if written is not None and block and _short_prefix(written.reshape(-1), block):
        done = int(written.sum())
        programs = max((math.prod(g) for g in grids), default=None)
        if programs is not None and programs * block <= done:
            return [Cause("grid_short", f"the programs wrote the first {done} elements, whole "
                          f"blocks of {block}, and nothing after: the grid has too few programs "
                          f"({programs} of {block}; it rounds the element count down to whole "
                          "blocks, not up)", GRID)]
        # What the grid covers, where a launch's grid was read: with none, no count to give.
        covers = "" if programs is None else \
            f", though the grid has {programs} programs of {block}"
        if "overlap" in kinds:  # the watch saw several programs store the same elements
            return [Cause("programs_overlap", f"the programs wrote the first {done} elements "
                          f"and nothing after{covers}: several programs stored the same "
                          "elements, so the blocks they take overlap and the last blocks are "
                          "reached by none; each program's offsets must start at its own "
                          "block", WATCH)]
        if programs is None:
            return [Cause("", f"observed (no single cause confirmed): the programs wrote the "
                          f"first {done} elements, whole blocks of {block}, and nothing after")]
        return [Cause("", f"observed (no single cause confirmed): the programs wrote the first "
                      f"{done} elements and nothing after{covers}: some write where another "
                      "one does")]
    return []


def _short_prefix(written: torch.Tensor, block: int) -> bool:
    done = int(written.sum())
    return (0 < done < written.numel() and bool(written[:done].all()) and done % block == 0
            and written.dim() == 1)
