"""Stage problem: C = A @ B, A of M x K and B of K x N; 2MNK flops, each matrix moved once.
The lesson promises that transposed or sliced inputs work as they are: `layout` draws A and
B so."""

import torch

from grader.problems.evidence import Evidence, Experiment, EvidenceFinding, across_tiles, observed
from grader.problems.base import (Call, Param, Problem, Work, element_size, f32, layout_check,
                                  layout_param, randn_2d)


def _call(p, dtype, gen):
    m, n, k = p["M"], p["N"], p["K"]
    return Call((randn_2d(m, k, p["layout"], dtype, gen), randn_2d(k, n, p["layout"], dtype, gen)))


def _reference(call):
    a, b = call.args
    # Exact float32 products: TF32 would hide the error budget we grant fp32 submissions.
    return torch.matmul(f32(a), f32(b))


def _work(p, dt):
    m, n, k = p["M"], p["N"], p["K"]
    return Work((m * k + k * n + m * n) * element_size(dt), 2 * m * n * k)


MISREAD = ("unread", "never_read", "load_between_rows", "load_out_of_bounds")
# How deep in K one MMA instruction of 16-bit inputs goes: a GPU rounds a 16-bit accumulator
# after each (the CPU backends round it so too: grader.languages.*).
MMA_K = 16


def mma_accumulated(a: torch.Tensor, b: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
    """acc + a @ b as a GPU's MMA instructions make it: a float32 accumulator rounded once, a
    float16 one after every MMA_K of K (one instruction's depth: the error grows with K
    whatever K a tile takes in one call); each step summed in float64, so that an element's
    value depends on its row, its column and K only, not on its place in the tile."""
    depth = max(a.shape[-1], 1)
    step = depth if acc.dtype == torch.float32 else MMA_K
    total = acc
    for k in range(0, depth, step):
        product = torch.matmul(a[..., k:k + step].double(), b[..., k:k + step, :].double())
        total = (total.double() + product).float().to(acc.dtype)
    return total


# --- experiments: the course's hypotheses name them (course.toml) -------------------------

def _k_tiles(ev: Evidence):
    """(a, b, K tile) in float32 where the case has more than one K tile, else None."""
    tile = ev.constant("BLOCK_K", "TILE_K")
    if ev.call is None or not tile:
        return None
    a, b = (f32(t) for t in ev.call.args)
    return (a, b, tile) if tile < a.shape[1] else None


def _added_twice(ev: Evidence) -> torch.Tensor | None:
    """Each step adds the accumulator to itself as well as the product: acc = 2 acc + A_t B_t."""
    tiles = _k_tiles(ev)
    if tiles is None:
        return None
    a, b, tile = tiles
    acc = torch.zeros(a.shape[0], b.shape[1])
    for start in range(0, a.shape[1], tile):
        acc = 2 * acc + a[:, start:start + tile] @ b[start:start + tile]
    return acc


def _last_k_tile(ev: Evidence) -> torch.Tensor | None:
    """Each step replaces the accumulator by its product: only the last K tile's is left."""
    tiles = _k_tiles(ev)
    if tiles is None:
        return None
    a, b, tile = tiles
    last = (a.shape[1] - 1) // tile * tile
    return a[:, last:] @ b[last:]


def _first_k_tile_repeated(ev: Evidence) -> EvidenceFinding | None:
    """The loop over K loads the first K tile at every step: its product, once per K tile."""
    tiles = _k_tiles(ev)
    if tiles is None:
        return None
    a, b, tile = tiles
    count = -(-a.shape[1] // tile)
    return EvidenceFinding(a[:, :tile] @ b[:tile] * count, {"tile": tile, "tiles": count})


def _k_loop_short(ev: Evidence):
    """The loop over K stops early: the product of its first K tiles alone, for each count
    short of all of them."""
    tiles = _k_tiles(ev)
    if tiles is None:
        return
    a, b, tile = tiles
    count = -(-a.shape[1] // tile)
    for done in range(1, count):
        yield EvidenceFinding(a[:, :done * tile] @ b[:done * tile],
                      {"done": done, "tiles": count, "tile": tile})


def _k_step_in_elements(ev: Evidence):
    """The loop over K moves a pointer BLOCK_K elements in memory each step, not BLOCK_K
    steps of its stride along K (B's, A's, or both): at step t it reads its tile's elements
    t * BLOCK_K places further on in memory. Tried for each input where that differs from
    the right step (a stride along K other than 1) and lands on the input's own elements."""
    tiles = _k_tiles(ev)
    if tiles is None:
        return
    tile = tiles[2]
    a, b = ev.call.args
    for shifted in ("B", "A", "A and B"):
        if ("A" in shifted and a.stride(1) == 1) or ("B" in shifted and b.stride(0) == 1):
            continue  # the same as the right step
        steps = range(0, a.shape[1], tile)
        a_tiles = [_tile_read(a, 1, start, tile, "A" in shifted) for start in steps]
        b_tiles = [_tile_read(b, 0, start, tile, "B" in shifted) for start in steps]
        if any(t is None for t in a_tiles + b_tiles):
            continue  # some read lands off the input's elements: nothing to predict
        out = sum(x @ y for x, y in zip(a_tiles, b_tiles))
        along = " and ".join(f"{tile} {unit}" for name, unit in (("A", "columns of A"),
                                                                 ("B", "rows of B"))
                             if name in shifted)
        yield EvidenceFinding(out.float(), {"tile": tile, "inputs": shifted, "along": along})


def _tile_read(x: torch.Tensor, axis: int, start: int, tile: int, shifted: bool):
    """The K tile of the 2-D input `x` (K along `axis`) at `start`, in float64, lanes past K
    zero; `shifted`: read `start` elements further on in memory from the first tile's
    places instead. None where such a read is not an element of `x`."""
    k = x.shape[axis]
    lanes = torch.arange(tile).clamp_max(k - 1)
    inside = torch.arange(tile) + start < k
    inside = inside[None, :] if axis == 1 else inside[:, None]
    values = x.double()
    if not shifted:
        return values.index_select(axis, (lanes + start).clamp_max(k - 1)) * inside
    # Where each element of x lies in memory, and what lies at each such place.
    rows, cols = x.shape
    places = (x.storage_offset() + torch.arange(rows)[:, None] * x.stride(0)
              + torch.arange(cols)[None, :] * x.stride(1))
    held = torch.zeros(int(places.max()) + 1, dtype=torch.float64)
    known = torch.zeros(held.shape, dtype=torch.bool)
    held[places.flatten()], known[places.flatten()] = values.flatten(), True
    read = places.index_select(axis, lanes) + start
    inside = inside.expand_as(read)
    within = read < held.numel()
    read = read.clamp_max(held.numel() - 1)
    if not bool((known[read] & within)[inside].all()):
        return None
    return torch.where(inside, held[read], torch.zeros((), dtype=torch.float64))


def _half_accumulated(ev: Evidence):
    """The running sum kept in the 16-bit input dtype, each tile's product added exact,
    rounded once, or made in that dtype too (a dot whose own output is 16-bit, rounded
    every MMA_K as a GPU's instructions round it); or the dot handed the 16-bit sum itself
    (rounded every MMA_K, whatever the tile)."""
    tile = ev.constant("BLOCK_K", "TILE_K")
    if ev.call is None or not tile or ev.dtype not in (torch.float16, torch.bfloat16):
        return
    a, b = (f32(t) for t in ev.call.args)
    tried = [(tile, "exact"), (tile, "once"), (tile, "in steps")]
    tried += [(MMA_K, "exact")] if tile > MMA_K else []
    for step, product in tried:
        yield EvidenceFinding(_half_accumulator(a, b, step, ev.dtype, product),
                      {"dtype": str(ev.dtype).removeprefix("torch.")})


def _inputs_misread(ev: Evidence) -> EvidenceFinding | None:
    """The watch saw the loads miss parts of the inputs, and every element is wrong."""
    if ev.call is None or not any(f.get("kind") in MISREAD for f in ev.traffic) \
            or not bool(ev.bad.all()):
        return None
    return EvidenceFinding(how="the watch of the loads saw them miss parts of the inputs (its "
                       "findings above), and every element is wrong")


def _several_k_tiles(ev: Evidence) -> EvidenceFinding | None:
    """The experiment behind the probe that replays the kernel on one K tile (K within the
    launch's BLOCK_K): the case spans several (evidence.across_tiles). A shorter K changes
    nothing else: M and N, and so every tile of C, stay."""
    return None if ev.call is None else \
        across_tiles(ev, ev.call.args[0].shape[1], ("BLOCK_K", "TILE_K"), "K")


def _zeros(ev: Evidence) -> torch.Tensor:
    """The accumulator as it was made: no product ever added to it."""
    return torch.zeros_like(ev.want)


def _half_accumulator(a, b, tile: int, dtype, product: str) -> torch.Tensor:
    """The running sum kept in `dtype`, a tile of K at a time; each tile's product added
    `product`: "exact" (float32), rounded to `dtype` "once", or made "in steps" of MMA_K,
    its own sum rounded to `dtype` after each."""
    # Sums in float64, rounded (by way of float32) where the kernel rounds: as the CPU
    # backends compute a dot (grader.languages.*), so that the roundings to 16 bits fall alike.
    a, b = a.double(), b.double()
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=dtype)
    for start in range(0, a.shape[1], tile):
        a_part, b_part = a[:, start:start + tile], b[start:start + tile]
        if product == "in steps":
            part = torch.zeros_like(acc)
            for k in range(0, a_part.shape[1], MMA_K):
                part = (part.double() + a_part[:, k:k + MMA_K] @ b_part[k:k + MMA_K]) \
                    .float().to(dtype)
            part = part.double()
        else:
            part = a_part @ b_part
            part = part.float().to(dtype).double() if product == "once" else part
        acc = (acc.double() + part).float().to(dtype)
    return acc.float()


PROBLEM = Problem(
    id="matmul",
    function="matmul",
    signature="matmul(a, b) -> Tensor",
    params=(Param("M", int), Param("N", int), Param("K", int), layout_param()),
    make_call=_call,
    reference=_reference,
    work=_work,
    baselines={"torch": lambda c: torch.matmul(*c.args)},
    check=layout_check(("M", "K"), ("K", "N")),
    explain=observed,
    experiments={"accumulator_added_twice": _added_twice, "last_k_tile_only": _last_k_tile,
                 "accumulator_unchanged": _zeros,
                 "first_k_tile_repeated": Experiment(_first_k_tile_repeated, ("tile", "tiles")),
                 "k_loop_short": Experiment(_k_loop_short, ("done", "tiles", "tile")),
                 "accumulator_in_input_dtype": Experiment(_half_accumulated, ("dtype",)),
                 "k_step_in_elements": Experiment(_k_step_in_elements,
                                                   ("tile", "inputs", "along")),
                 "inputs_misread": _inputs_misread,
                 "several_k_tiles": Experiment(_several_k_tiles, ("tile", "tiles"))},
)
