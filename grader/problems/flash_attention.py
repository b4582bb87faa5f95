"""Stage problem: softmax(Q K^T * sm_scale) V per batch and head, optionally causal.
The lesson promises that q, k and v may be views in other layouts: `layout` draws them as a
[B, N, H, D] tensor seen as [B, H, N, D] (what a projection followed by a transpose gives),
as some heads of a larger tensor, or each in a layout of its own (a kernel that reads k or v,
or writes the output, with q's strides is wrong there and right everywhere else)."""

import math

import torch
import torch.nn.functional as F

from grader.problems.evidence import (Cause, Evidence, Experiment, EvidenceFinding, across_tiles,
                                      first_only, observed, row_factor)
from grader.problems.base import (Call, Param, Problem, Work, element_size, in_f32,
                                  misread_strides, randn)


LAYOUTS = ("contiguous", "transposed", "sliced", "mixed")
LAYOUT_DOC = ("how q, k and v are laid out: contiguous; transposed (a [B, N, H, D] tensor "
              "seen as [B, H, N, D]: rows of one head H * D elements apart); sliced (heads 1 "
              "to H of a [B, H + 1, N, D] tensor: batches (H + 1) * N * D elements apart); "
              "mixed (q sliced, k transposed, v contiguous: no two alike, and the output, "
              "made contiguous, unlike q)")
MIXED = ("sliced", "transposed", "contiguous")  # q's, k's and v's layouts under "mixed"


def _drawn(p, dtype, gen, which: int) -> torch.Tensor:
    """q (which = 0), k (1) or v (2) in the case's layout."""
    b, h, n, d = p["B"], p["H"], p["N"], p["D"]
    layout = MIXED[which] if p["layout"] == "mixed" else p["layout"]
    if layout == "transposed":
        return randn((b, n, h, d), dtype, gen).transpose(1, 2)
    if layout == "sliced":
        return randn((b, h + 1, n, d), dtype, gen)[:, 1:]
    return randn((b, h, n, d), dtype, gen)


def _layout_check(params: dict) -> list[str]:
    """A layout case must tell the layout from a contiguous one: transposed needs two heads
    and two rows (else its strides are a contiguous tensor's), sliced two batches, mixed
    all three."""
    layout = params.get("layout", "contiguous")
    needs = {"transposed": ("H", "N"), "sliced": ("B",),
             "mixed": ("B", "H", "N")}.get(layout, ())
    small = [name for name in needs if params[name] < 2]
    if not small:
        return []
    return [f"layout = {layout!r} needs {' and '.join(small)} of at least 2: with fewer, "
            "the inputs' strides are those of contiguous ones, so the case would not test them"]


def _call(p, dtype, gen):
    q, k, v = (_drawn(p, dtype, gen, which) for which in range(3))
    kwargs = {"causal": p["causal"]}
    if p["sm_scale"] is not None:
        kwargs["sm_scale"] = p["sm_scale"]
    return Call((q, k, v), kwargs)


def _sdpa(call, backend=None):
    q, k, v = call.args
    scale = call.kwargs.get("sm_scale")
    causal = call.kwargs["causal"]
    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, backend)):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


def _work(p, dt):
    # Each of q, k, v read once and the output written once; 4*N*N*D flops per head
    # (QK^T and PV), half of them skipped under a causal mask.
    heads = p["B"] * p["H"]
    return Work(4 * heads * p["N"] * p["D"] * element_size(dt),
                4 * heads * p["N"] ** 2 * p["D"] // (2 if p["causal"] else 1))


def _attention(q, k, v, scale: float, causal: bool, shift: int = 0,
               tile: int = 0) -> torch.Tensor:
    """Attention in float32 with a causal mask whose diagonal is moved by `shift` (keys up
    to position i + shift are seen) or reversed (shift None: keys at and after i); `tile`:
    no mask within the key tiles a query tile of that size visits (keys up to its end)."""
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        n = s.shape[-1]
        i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
        hidden = (j >= (i // tile + 1) * tile if tile else
                  j > i + shift if shift is not None else j < i)
        s = s.masked_fill(hidden, -torch.inf)
    return torch.softmax(s, -1) @ v


def _online(q, k, v, scale: float, tile: int, rescale_acc: bool, rescale_sum: bool):
    """The loop over key tiles with one of its two rescalings left out (non-causal)."""
    m = torch.full(q.shape[:-1] + (1,), -torch.inf)
    acc, total = torch.zeros_like(q), torch.zeros_like(m)
    for start in range(0, k.shape[-2], tile):
        s = (q @ k[..., start:start + tile, :].transpose(-1, -2)) * scale
        new = torch.maximum(m, s.amax(-1, keepdim=True))
        alpha, p = torch.exp(m - new), torch.exp(s - new)
        acc = (acc * alpha if rescale_acc else acc) + p @ v[..., start:start + tile, :]
        total = (total * alpha if rescale_sum else total) + p.sum(-1, keepdim=True)
        m = new
    return acc / total


def _explain(ev: Evidence) -> list[Cause]:
    """What was observed, where no hypothesis of the course (its causes: course.toml)
    holds: rows each off by a factor of their own (several mistakes scale whole rows), else
    where the wrong elements are."""
    factor = row_factor(ev) if ev.call is not None else None
    if factor is not None:
        return [Cause("", "observed (no single cause confirmed): each output row is the right "
                      f"answer times a factor of its own (median {factor:.4g})")]
    return observed(ev)


def _undivided(q, k, v, scale: float, causal: bool) -> torch.Tensor:
    """The sum of exp(score - the row's maximum) times v, never divided by the row's sum."""
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.arange(n)[None, :] > torch.arange(n)[:, None], -torch.inf)
    p = torch.exp(s - s.amax(-1, keepdim=True))
    return p @ v


def _inputs(ev: Evidence):
    q, k, v = (t.float() for t in ev.call.args)
    scale = ev.call.kwargs.get("sm_scale") or 1 / math.sqrt(q.shape[-1])
    return q, k, v, scale, ev.call.kwargs["causal"]


# --- experiments: the course's hypotheses name them (course.toml) -------------------------

def _causal_shifted(shift: int):
    """The causal mask's diagonal moved by `shift`: keys up to the query's position + shift."""
    def recompute(ev: Evidence) -> torch.Tensor | None:
        if ev.call is None or not ev.call.kwargs["causal"]:
            return None
        q, k, v, scale, _ = _inputs(ev)
        return _attention(q, k, v, scale, True, shift)
    return recompute


def _unmasked_within_key_tiles(ev: Evidence) -> torch.Tensor | None:
    """Every key of the key tiles a query tile visits seen, none masked within them."""
    rows = ev.constant("BLOCK_M", "TILE_M")
    if ev.call is None or not ev.call.kwargs["causal"] or not rows:
        return None
    q, k, v, scale, _ = _inputs(ev)
    return _attention(q, k, v, scale, True, tile=rows)


def _rescale_left_out(rescale_acc: bool, rescale_sum: bool):
    """The loop over key tiles without one of its rescalings (non-causal, several tiles)."""
    def recompute(ev: Evidence) -> torch.Tensor | None:
        tile = ev.constant("BLOCK_N", "TILE_N")
        if ev.call is None or ev.call.kwargs["causal"] or not tile:
            return None
        q, k, v, scale, _ = _inputs(ev)
        return _online(q, k, v, scale, tile, rescale_acc, rescale_sum) \
            if tile < k.shape[-2] else None
    return recompute


def _misread(x: torch.Tensor) -> list[tuple[int, ...]]:
    """Strides a kernel may wrongly read a [B, H, N, D] view with, where they differ from its
    own and stay inside its storage: its rows D apart (its batch and head strides kept), or
    every stride a contiguous tensor's."""
    b, h, n, d = x.shape
    return misread_strides(x, [(x.stride(0), x.stride(1), d, 1), (h * n * d, n * d, d, 1)])


def _inputs_misread(ev: Evidence):
    """q, k and v each read with the same wrong strides (those of _misread)."""
    if ev.call is None:
        return
    q, k, v = ev.call.args
    for strides in _misread(q):
        if all(strides in _misread(t) for t in (k, v)):
            seen = [t.as_strided(t.shape, strides, t.storage_offset()).float() for t in (q, k, v)]
            _, _, _, scale, causal = _inputs(ev)
            yield EvidenceFinding(_attention(*seen, scale, causal),
                          {"strides": strides, "own": tuple(q.stride())})


def _not_divided(ev: Evidence) -> torch.Tensor | None:
    return None if ev.call is None else _undivided(*_inputs(ev))


def _scale_as(changed):
    """Attention with the scale changed as a mistake changes it: exp2 without log2(e)
    (every exponent ln 2 times too small), exp of scores that hold log2(e) (log2(e) times
    too large), the scale applied twice or not at all."""
    def recompute(ev: Evidence) -> torch.Tensor | None:
        if ev.call is None:
            return None
        q, k, v, scale, causal = _inputs(ev)
        return _attention(q, k, v, changed(scale), causal)
    return recompute


def _padded_keys(every: bool):
    """The keys past N of the last key tile (zeros where a load padded them) seen with a
    score of 0, as if they were keys: `every` one of them (no mask keeps them out of the
    softmax), or the first alone, at position N (a bound that keeps one key too many).
    Without a causal mask only: with one, which padded keys a query sees depends on it."""
    def recompute(ev: Evidence) -> torch.Tensor | None:
        cols = ev.constant("BLOCK_N", "TILE_N")
        if ev.call is None or not cols or ev.call.kwargs["causal"]:
            return None
        q, k, v, scale, _ = _inputs(ev)
        n = k.shape[-2]
        pad = -(-n // cols) * cols - n
        if not pad or (not every and pad == 1):  # (one padded key: every one of them)
            return None
        s = torch.cat([(q @ k.transpose(-1, -2)) * scale,
                       q.new_zeros(*q.shape[:-1], pad if every else 1)], -1)
        return torch.softmax(s, -1)[..., :n] @ v
    return recompute


def _visited(ev: Evidence):
    """(q, k, v, scale, causal, i, j, end, cols): the inputs, each query's position i and
    each key's j, and where the key tiles the loop visits for query i end (whole tiles of
    cols: with a causal mask, those that start before its query tile's end); None where the
    launch's tile sizes are not known."""
    rows, cols = ev.constant("BLOCK_M", "TILE_M"), ev.constant("BLOCK_N", "TILE_N")
    if ev.call is None or not rows or not cols:
        return None
    q, k, v, scale, causal = _inputs(ev)
    n = k.shape[-2]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    last = (i // rows + 1) * rows if causal else torch.full_like(i, n)
    return q, k, v, scale, causal, i, j, -(-last.clamp_max(n) // cols) * cols, cols


def _causal_variant(ev: Evidence, kept) -> torch.Tensor | None:
    """Attention whose causal mask keeps the keys `kept(i, j, key tile)` says, within the key
    tiles the online loop visits."""
    seen = _visited(ev)
    if seen is None or not seen[4]:
        return None
    q, k, v, scale, _, i, j, end, cols = seen
    seen = (j < end) & kept(i, j, cols)
    out = torch.softmax(((q @ k.transpose(-1, -2)) * scale).masked_fill(~seen, -torch.inf),
                        -1) @ v
    # The loop starts at key tile 0: a row with no key kept there has a running maximum of
    # -inf, and -inf - (-inf) makes it NaN for good.
    lost = ~seen[:, :cols].any(-1)
    return out.masked_fill(lost[:, None], torch.nan)


def _last_key_tile(ev: Evidence) -> EvidenceFinding | None:
    """Each query's last key tile alone (the keys it may see there): what the earlier key
    tiles added to the running sum and the accumulator is lost. A query that may see no key
    of its last tile is NaN: its running maximum is -inf, and -inf - (-inf) is NaN."""
    seen = _visited(ev)
    if seen is None or ev.want.shape[-2] <= seen[-1]:
        return None  # one key tile: nothing before it to lose
    q, k, v, scale, causal, i, j, end, cols = seen
    n = k.shape[-2]
    kept = (j >= (end.clamp_max(n) - 1) // cols * cols) & (j <= i if causal else j < n)
    s = ((q @ k.transpose(-1, -2)) * scale).masked_fill(~kept, -torch.inf)
    return EvidenceFinding(torch.softmax(s, -1) @ v, {"tile": cols})


def _masked_scores_zero(ev: Evidence) -> torch.Tensor | None:
    """Every score a mask switches off given 0, not -inf, in the key tiles the loop visits:
    the keys after the query and the padding past N (a key of zeros, whose value row is 0)
    each take a share exp(0 - max) of the row's sum. Causal cases only: without a causal
    mask this is every padded key seen (_padded_keys)."""
    seen = _visited(ev)
    if seen is None or not seen[4]:
        return None
    q, k, v, scale, _, i, j, end, cols = seen
    n = k.shape[-2]
    pad = -(-n // cols) * cols - n
    s = torch.cat([(q @ k.transpose(-1, -2)) * scale, q.new_zeros(*q.shape[:-1], pad)], -1)
    j = torch.arange(n + pad)[None, :]
    s = torch.where((j <= i) & (j < n), s, 0.0).masked_fill(j >= end, -torch.inf)
    return torch.softmax(s, -1) @ torch.cat([v, v.new_zeros(*v.shape[:-2], pad, v.shape[-1])], -2)


def _several_key_tiles(ev: Evidence) -> EvidenceFinding | None:
    """The experiment behind the probe that replays the kernel on one key tile (N within
    the launch's BLOCK_N): the case spans several (evidence.across_tiles). Without a causal
    mask only (with one, a shorter N also moves the diagonal through the tiles), and where
    rows of the first query tile are wrong: N within one key tile is within one query tile
    too, and a fault in how the query tiles are indexed leaves the first one right."""
    rows = ev.constant("BLOCK_M", "TILE_M")
    if ev.call is None or ev.call.kwargs["causal"] or not rows or \
            not ev.bad[..., :rows, :].any():
        return None
    return across_tiles(ev, ev.want.shape[-2], ("BLOCK_N", "TILE_N"), "N")


def _mask_inverted(ev: Evidence) -> torch.Tensor | None:
    """The causal comparison reversed: keys at and after the query."""
    return _causal_variant(ev, lambda i, j, cols: j >= i)


def _mask_tile_local(ev: Evidence) -> torch.Tensor | None:
    """The causal mask compares the query's position with the key's offset within its key
    tile (0 .. BLOCK_N - 1), not its position."""
    return _causal_variant(ev, lambda i, j, cols: j % cols <= i)


PROBLEM = Problem(
    id="flash_attention",
    function="flash_attention",
    signature="flash_attention(q, k, v, causal=False, sm_scale=None) -> Tensor",
    params=(
        Param("B", int, doc="batch"),
        Param("H", int, doc="heads"),
        Param("N", int, doc="sequence length"),
        Param("D", int, doc="head dimension"),
        Param("causal", bool, False),
        Param("sm_scale", float, None, doc="softmax scale; default 1/sqrt(D)"),
        Param("layout", str, "contiguous", doc=LAYOUT_DOC, choices=LAYOUTS),
    ),
    make_call=_call,
    reference=lambda call: _sdpa(in_f32(call)),
    work=_work,
    baselines={"torch": _sdpa, "sdpa-flash": lambda c: _sdpa(c, "FLASH_ATTENTION")},
    check=_layout_check,
    explain=_explain,
    experiments={"exp2_without_log2e": _scale_as(lambda scale: scale * math.log(2)),
                 "exp_with_log2e": _scale_as(lambda scale: scale / math.log(2)),
                 "padded_keys_seen": _padded_keys(every=True),
                 "one_padded_key_seen": _padded_keys(every=False),
                 "scale_twice": _scale_as(lambda scale: scale ** 2),
                 "scale_missing": _scale_as(lambda scale: 1.0),
                 "causal_mask_inverted": _mask_inverted,
                 "causal_mask_tile_local": _mask_tile_local,
                 "unmasked_within_key_tiles": _unmasked_within_key_tiles,
                 "diagonal_masked": _causal_shifted(-1), "next_key_seen": _causal_shifted(1),
                 "accumulator_not_rescaled": _rescale_left_out(False, True),
                 "sum_not_rescaled": _rescale_left_out(True, False),
                 "nothing_rescaled": _rescale_left_out(False, False),
                 "not_divided": _not_divided,
                 "last_key_tile_only": Experiment(_last_key_tile, ("tile",)),
                 "masked_scores_zero": _masked_scores_zero,
                 "several_key_tiles": Experiment(_several_key_tiles, ("tile", "tiles")),
                 "first_pair_only": Experiment(lambda ev: first_only(ev, 2), ("others",)),
                 "inputs_misread": Experiment(_inputs_misread, ("strides", "own"))},
)
