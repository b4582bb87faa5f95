"""Stage problem: softmax over the last axis of an M x N matrix; read once, written once.
The lesson promises rows wider than one tile and any layout: `rows = "falling_max"` draws
rows whose later tiles have a much lower maximum than the first, and `layout` draws x
transposed or sliced."""

import math

import torch

from grader.problems.evidence import (ROW_RATIO, Cause, Evidence, Experiment, EvidenceFinding,
                                     across_tiles, observed, row_factor)
from grader.problems.base import (Call, Param, Problem, Work, compiled, element_size, in_f32,
                                  laid_out, layout_check, layout_param, misread_strides,
                                  randn)

ROWS = ("random", "falling_max")
# A falling row runs from +FALL to -FALL (plus its random values): whatever the tile width,
# the first tile's maximum is at least FALL above the last tile's, and exp(FALL) overflows
# float32 (exp(89) does), so a kernel that takes a later tile's lower maximum as the row's
# rescales its sum by inf.
FALL = 120.0


def _softmax_last(x):
    return torch.softmax(x, dim=-1)


def _call(p, dtype, gen):
    m, n = p["M"], p["N"]
    x = randn((m, n), torch.float32 if p["rows"] != "random" else dtype, gen, scale=p["scale"])
    if p["rows"] == "falling_max":  # drawn as before, then moved: same draws, other values
        x = (x + torch.linspace(FALL, -FALL, n, device=x.device)).to(dtype)
    return Call((laid_out(x, p["layout"]),))


def _explain(ev: Evidence) -> list[Cause]:
    """What was observed, where no hypothesis of the course (its causes: course.toml) holds:
    rows that do not sum to 1, else where the wrong elements are."""
    sums = ev.got.sum(dim=-1)
    off = torch.isfinite(sums) & ((sums - 1).abs() > 1e-2)
    if not off.any():
        return observed(ev)
    row = int(off.nonzero()[0])
    return [Cause("", f"observed: {int(off.sum())} of {ev.got.shape[0]} rows do not sum to 1 "
                      f"(row {row} sums to {float(sums[row]):.4g})")]


# --- experiments: the course's hypotheses name them (course.toml) -------------------------

def _x(ev: Evidence) -> torch.Tensor | None:
    return ev.call.args[0].float() if ev.call is not None else None


def _column_tile(ev: Evidence) -> tuple[torch.Tensor, int] | None:
    """(x in float32, the column tile) where a row spans more than one tile, else None."""
    x, tile = _x(ev), ev.constant("BLOCK_N", "TILE_N", "BLOCK_SIZE")
    return (x, tile) if x is not None and tile and tile < x.shape[-1] else None


def _no_max_found(ev: Evidence) -> torch.Tensor | None:
    """exp(x) / sum(exp(x)): NaN where exp overflowed (a NaN in the output to explain)."""
    x = _x(ev)
    return _no_max(x) if x is not None and torch.isnan(ev.got).any() else None


def _all_ones(ev: Evidence) -> EvidenceFinding | None:
    """Every element exactly 1: each divided by itself."""
    if bool((ev.got == 1).all()) and ev.got.shape[-1] > 1:
        return EvidenceFinding(how="read the output: every element is exactly 1")
    return None


def _sum_not_rescaled_found(ev: Evidence) -> EvidenceFinding | None:
    tiled = _column_tile(ev)
    return EvidenceFinding(_sum_not_rescaled(*tiled), {"tile": tiled[1]}) if tiled else None


def _block_max_found(ev: Evidence) -> EvidenceFinding | None:
    tiled = _column_tile(ev)
    if tiled is None or not torch.isnan(ev.got).any():
        return None
    return EvidenceFinding(_block_max(*tiled), {"tile": tiled[1]})


def _sum_against_old_max_found(ev: Evidence) -> EvidenceFinding | None:
    x, tile = _x(ev), ev.constant("BLOCK_N", "TILE_N", "BLOCK_SIZE")
    return EvidenceFinding(_sum_against_old_max(x, tile), {"tile": tile}) if x is not None and tile \
        else None


def _zero_padded_found(ev: Evidence) -> EvidenceFinding | None:
    x, tile = _x(ev), ev.constant("BLOCK_N", "TILE_N", "BLOCK_SIZE")
    return EvidenceFinding(_zero_padded(x, tile), {"tile": tile}) if x is not None and tile else None


def _rows_one_apart(ev: Evidence) -> torch.Tensor | None:
    """x read with rows that start one element apart (the row stride left out)."""
    raw = ev.call.args[0] if ev.call is not None else None
    if raw is None or raw.shape[0] < 2:
        return None
    for one_apart in misread_strides(raw, [(raw.stride(1), raw.stride(1))]):
        return _softmax_last(raw.as_strided(raw.shape, one_apart, raw.storage_offset()).float())
    return None


def _rows_of_n_found(ev: Evidence):
    """x read with rows N elements apart (stepped by the number of columns)."""
    raw = ev.call.args[0] if ev.call is not None else None
    for strides in _rows_of_n(raw):
        yield EvidenceFinding(_softmax_last(raw.as_strided(raw.shape, strides,
                                                   raw.storage_offset()).float()),
                      {"strides": strides, "apart": strides[0], "own": tuple(raw.stride())})


def _row_factor_found(ev: Evidence) -> EvidenceFinding | None:
    factor = row_factor(ev)
    return None if factor is None else EvidenceFinding(facts={"factor": factor}, how=ROW_RATIO)


def _several_column_blocks(ev: Evidence) -> EvidenceFinding | None:
    """The experiment behind the probe that replays the kernel on one column block (N within
    the launch's BLOCK_N): the case's rows span several (evidence.across_tiles)."""
    return across_tiles(ev, ev.want.shape[-1], ("BLOCK_N", "TILE_N"), "N")


def _rows_of_n(x: torch.Tensor | None) -> list[tuple[int, int]]:
    """Strides a kernel may wrongly read x with when it steps rows by the number of
    columns: (N, x's column stride) or (N, 1), where they differ from x's and stay in it."""
    if x is None or x.shape[0] < 2:
        return []
    n = x.shape[1]
    return misread_strides(x, [(n, x.stride(1)), (n, 1)])


def _block_max(x: torch.Tensor, tile: int) -> torch.Tensor:
    """The online softmax in float32 with the running max replaced by each tile's own."""
    m = torch.full(x.shape[:-1] + (1,), -torch.inf)
    total = torch.zeros_like(m)
    for start in range(0, x.shape[-1], tile):
        part = x[..., start:start + tile]
        new = part.amax(-1, keepdim=True)
        total = total * torch.exp(m - new) + torch.exp(part - new).sum(-1, keepdim=True)
        m = new
    return torch.exp(x - m) / total


def _no_max(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(-1, keepdim=True)


def _zero_padded(x: torch.Tensor, tile: int) -> torch.Tensor:
    pad = -x.shape[-1] % tile
    m = x.amax(-1, keepdim=True)
    m = torch.maximum(m, torch.zeros_like(m)) if pad else m
    return torch.exp(x - m) / (torch.exp(x - m).sum(-1, keepdim=True) + pad * torch.exp(-m))


def _sum_not_rescaled(x: torch.Tensor, tile: int) -> torch.Tensor:
    m = torch.full(x.shape[:-1] + (1,), -torch.inf)
    total = torch.zeros_like(m)
    for start in range(0, x.shape[-1], tile):
        part = x[..., start:start + tile]
        m = torch.maximum(m, part.amax(-1, keepdim=True))
        total = total + torch.exp(part - m).sum(-1, keepdim=True)
    return torch.exp(x - m) / total


def _sum_against_old_max(x: torch.Tensor, tile: int) -> torch.Tensor:
    """The online softmax in float32 with each tile's exponentials summed against the running
    max from before the tile: the first tile's is -inf, so its exp(x - m) is inf and the sum
    too (every element 0), and NaN where that tile's padding (-inf) meets it (-inf + inf)."""
    m = torch.full(x.shape[:-1] + (1,), -torch.inf)
    total = torch.zeros_like(m)
    for start in range(0, x.shape[-1], tile):
        part = x[..., start:start + tile]
        pad = torch.full(part.shape[:-1] + (tile - part.shape[-1],), -torch.inf)
        new = torch.maximum(m, part.amax(-1, keepdim=True))
        total = total * torch.exp(m - new) + torch.exp(torch.cat([part, pad], -1) - m).sum(
            -1, keepdim=True)
        m = new
    return torch.exp(x - m) / total


def _exp2_everywhere(ev: Evidence) -> torch.Tensor | None:
    """exp2 with no log2(e) in every exponent: the softmax of x * ln 2."""
    return None if ev.call is None else _softmax_last(ev.call.args[0].float() * math.log(2))


def _exp2_in_second_pass(ev: Evidence) -> torch.Tensor | None:
    """The sum taken with exp, the stored values with exp2 and no log2(e): 2^(x - m) / l."""
    if ev.call is None:
        return None
    x = ev.call.args[0].float()
    m = x.amax(-1, keepdim=True)
    return torch.exp2(x - m) / torch.exp(x - m).sum(-1, keepdim=True)


PROBLEM = Problem(
    id="softmax",
    function="softmax",
    signature="softmax(x) -> Tensor",
    params=(
        Param("M", int, doc="rows"),
        Param("N", int, doc="columns (the softmax axis)"),
        Param("scale", float, 1.0, doc="standard deviation of the inputs"),
        layout_param(),
        Param("rows", str, "random", choices=ROWS,
              doc="random: normal values; falling_max: each row also falls linearly from "
                  f"+{FALL:g} to -{FALL:g}, so its later tiles have a much lower maximum"),
    ),
    make_call=_call,
    reference=lambda call: _softmax_last(*in_f32(call).args),
    work=lambda p, dt: Work(2 * p["M"] * p["N"] * element_size(dt)),
    baselines={"torch": lambda c: _softmax_last(*c.args), "torch.compile": compiled(_softmax_last)},
    check=layout_check(("M", "N")),
    explain=_explain,
    experiments={"exp2_without_log2e": _exp2_everywhere,
                 "exp2_without_log2e_when_storing": _exp2_in_second_pass,
                 "no_max_subtraction": _no_max_found,
                 "every_element_one": _all_ones,
                 "sum_not_rescaled": Experiment(_sum_not_rescaled_found, ("tile",)),
                 "tile_max_as_running_max": Experiment(_block_max_found, ("tile",)),
                 "tile_sum_against_old_max": Experiment(_sum_against_old_max_found, ("tile",)),
                 "padding_as_zero": Experiment(_zero_padded_found, ("tile",)),
                 "rows_one_apart": _rows_one_apart,
                 "rows_by_column_count": Experiment(_rows_of_n_found,
                                                    ("strides", "apart", "own")),
                 "row_factor": Experiment(_row_factor_found, ("factor",)),
                 "several_column_blocks": Experiment(_several_column_blocks, ("tile", "tiles"))},
)
