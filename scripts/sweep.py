"""Tuning sweep: variants of the references' TUNE places, timed against the reference and
PyTorch in one run; one table per shape.

It looks for what brings the references nearer the hardware limit. A variant is the
reference file with a few lines of its tuned blocks rewritten (a tile shape, warps, stages,
an occupancy hint: what a student would try at the same TUNE places), so every variant below
is an edit a reader can apply by hand. For each shape of the stages named (their speed
cases, then the shapes scripts/benchmark.py adds: matmul 8192^3, attention at D = 64), the
reference, its variants and PyTorch's implementations are timed together by
grader.timing.measure (the grader's clock: CUDA events, L2 flushed before every call, calls
interleaved, median); every output is checked against the float32 reference first, and a
wrong one is reported, not timed. Rows are sorted by time, with the fraction of the case's
roofline limit and the speed-up over the reference.

A variant whose lines are no longer in the reference fails loudly (tests/speed/test_speed.py
checks every one on the CPU), so the sweep cannot rot into timing copies of the reference.

Usage:  python -m scripts sweep [--only STAGE] [--track T] [--label TEXT] [--seconds S]
        [--list] [--reference-last]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from scripts import common


@dataclass(frozen=True)
class Variant:
    stage: str
    track: str
    label: str
    edits: tuple[tuple[str, str], ...]  # (a line of the reference, what replaces it)

    def source(self, reference: str) -> str:
        for old, new in self.edits:
            if reference.count(old) != 1:
                raise ValueError(f"{self.track} {self.stage} variant '{self.label}': the line "
                                 f"{old.strip()!r} is not in the reference exactly once")
            reference = reference.replace(old, new)
        return reference


def _variants() -> list[Variant]:
    out: list[Variant] = []

    def add(track, stage, label, *edits):
        out.append(Variant(stage, track, label, tuple(edits)))

    # Triton softmax: warps per row, and the widest one-block row.
    warps = "    options = dict(num_warps=min(32, max(4, BLOCK_N * x.element_size() // per_warp)))\n"
    for w in (8, 16, 32):
        add("triton", "softmax", f"num_warps={w}", (warps, f"    options = dict(num_warps={w})\n"))
    per_warp = "    per_warp = 2048 if x.element_size() == 4 else 4096\n"
    for fp32, half in ((2048, 2048), (4096, 4096), (2048, 8192), (1024, 4096)):
        add("triton", "softmax", f"{fp32 // 1024} KiB of an fp32 row per warp, {half // 1024} KiB of 16-bit",
            (per_warp, f"    per_warp = {fp32} if x.element_size() == 4 else {half}\n"))
    block = "    BLOCK_N = min(triton.next_power_of_2(N), 32768 if x.is_cuda else 4096)\n"
    for cap in (8192, 16384):
        add("triton", "softmax", f"blocks of at most {cap}", (block, block.replace("32768", str(cap))))

    # Triton bias+GELU: tile shape and warps.
    tile = "    BLOCK_M, BLOCK_N = 32, 128\n"
    for m, n in ((64, 128), (16, 256), (32, 256), (8, 512), (4, 1024), (2, 2048)):
        add("triton", "fused_gelu", f"{m}x{n}", (tile, f"    BLOCK_M, BLOCK_N = {m}, {n}\n"))
    launch = "        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,\n    )\n"
    for w in (2, 8):
        add("triton", "fused_gelu", f"32x128, num_warps={w}",
            (launch, f"        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps={w},\n    )\n"))

    # Triton matmul, the pointer kernel (which the reference keeps for GPUs before Hopper and
    # for layouts a tensor descriptor cannot take): tiles and stages, warps, group size.
    pointer_only = ("    if hopper and aligned and a.element_size() == 2:\n",
                    "    if False:  # the pointer kernel only\n")
    add("triton", "matmul", "the pointer kernel (the previous reference)", pointer_only)
    config = "            BLOCK_M, BLOCK_N, BLOCK_K, num_stages = 128, 256, 64, 4\n"
    for m, n, k, s in ((128, 256, 64, 3), (256, 128, 64, 3), (256, 128, 64, 4),
                       (128, 128, 64, 4), (128, 128, 64, 5), (128, 256, 32, 5)):
        add("triton", "matmul", f"pointers: {m}x{n}x{k}, {s} stages", pointer_only,
            (config, f"            BLOCK_M, BLOCK_N, BLOCK_K, num_stages = {m}, {n}, {k}, {s}\n"))
    group = "    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages = 128, 128, 32, 8, 3\n"
    for g in (4, 16):
        add("triton", "matmul", f"pointers: GROUP_M={g}", pointer_only,
            (group, group.replace(" 8, 3\n", f" {g}, 3\n")))

    # Triton matmul, the persistent kernel through tensor descriptors (Hopper and later):
    # its tiles, group size, persistence, flattening and warp specialization.
    tma = "            BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, PROGRAMS=programs,\n"
    tiles = "        programs = min(sms, triton.cdiv(M, 128) * triton.cdiv(N, 256))\n"
    stages = "            num_warps=8, num_stages=3,\n"
    for g in (4, 16):
        add("triton", "matmul", f"descriptors: GROUP_M={g}",
            (tma, tma.replace("GROUP_M=8", f"GROUP_M={g}")))
    add("triton", "matmul", "descriptors: 128x128x64, 4 stages",
        (tma, tma.replace("BLOCK_N=256", "BLOCK_N=128")),
        (tiles, tiles.replace("256", "128")), (stages, stages.replace("=3", "=4")))
    add("triton", "matmul", "descriptors: one program per tile (not persistent)",
        (tiles, "        programs = triton.cdiv(M, 128) * triton.cdiv(N, 256)\n"))
    loop = ("    for tile in tl.range(tl.program_id(axis=0), tiles_m * tiles_n, PROGRAMS, "
            "flatten=True):\n")
    add("triton", "matmul", "descriptors: the tile loop not flattened",
        (loop, loop.replace("flatten=True", "flatten=False")))
    add("triton", "matmul", "descriptors: warp-specialized",
        (loop, loop.replace("flatten=True", "flatten=True, warp_specialize=True")))

    # Triton attention: tile shape, warps, stages; at D = 128 on Hopper the reference loads K
    # and V through tensor descriptors, elsewhere (D = 64 here) by pointers.
    pointers = "        BLOCK_M, BLOCK_N = 64, 64\n        options = dict(num_warps=4, num_stages=3)\n"
    for m, n, w, s in ((64, 128, 4, 3), (64, 64, 8, 3), (64, 64, 4, 4), (128, 64, 8, 3),
                       (128, 128, 8, 3), (32, 64, 4, 3)):
        add("triton", "flash_attention", f"D=64 by pointers: {m}x{n}, {w} warps, {s} stages",
            (pointers, f"        BLOCK_M, BLOCK_N = {m}, {n}\n"
                       f"        options = dict(num_warps={w}, num_stages={s})\n"))
    described = ("        BLOCK_M, BLOCK_N = 128, 128\n"
                 "        options = dict(num_warps=8, num_stages=3, KV_DESCRIPTORS=True)\n")
    for m, n, w, s in ((64, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (64, 128, 4, 3)):
        add("triton", "flash_attention", f"D=128 by descriptors: {m}x{n}, {w} warps, {s} stages",
            (described, f"        BLOCK_M, BLOCK_N = {m}, {n}\n"
                        f"        options = dict(num_warps={w}, num_stages={s}, KV_DESCRIPTORS=True)\n"))
    add("triton", "flash_attention", "D=128 by pointers, 128x128, 8 warps, 3 stages",
        (described, described.replace(", KV_DESCRIPTORS=True", "")))
    add("triton", "flash_attention", "D=128 by pointers, 64x64, 4 warps (the path D = 64 takes)",
        ("    if D == 128 and hopper and rows:\n", "    if False:  # pointer loads at every head size\n"))

    # Triton attention on Hopper: the key loop warp-specialized (producer warps load K and V
    # while consumer warp groups compute), as Triton's own attention tutorial does.
    loop = "    for start_n in range(lo, hi, BLOCK_N):\n"
    specialized = "    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=True):\n"
    add("triton", "flash_attention", "D=128 by descriptors, warp-specialized key loop",
        (loop, specialized))
    add("triton", "flash_attention", "D=128 by descriptors, warp-specialized key loop, 2 stages",
        (loop, specialized),
        (described, described.replace("num_stages=3", "num_stages=2")))

    # Triton attention: the products' arithmetic. The rescaled accumulator as tl.dot's own
    # accumulator (the add inside the tensor-core instruction); the scale applied to every
    # score before the max (the plain kernel's form) instead of inside the exponent.
    add("triton", "flash_attention", "acc as the dot's accumulator",
        ("        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)\n",
         "        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])\n"))
    add("triton", "flash_attention", "scores scaled before the max (the plain form)",
        ("        s = tl.dot(q, kt)  # raw scores: Step 3 applies the scale inside the exponent\n",
         "        s = tl.dot(q, kt) * qk_scale\n"),
        ("        m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)\n",
         "        m_new = tl.maximum(m_i, tl.max(s, axis=1))\n"),
        ("        p = tl.exp2(s * qk_scale - m_new[:, None])\n",
         "        p = tl.exp2(s - m_new[:, None])\n"))

    # A copy of a reference that differs only in a comment: how far apart the clock puts two
    # identical kernels timed side by side (the reference's file versus a copy elsewhere).
    add("triton", "softmax", "the reference, copied",
        ("    row = tl.program_id(axis=0)\n    x_row",
         "    row = tl.program_id(axis=0)  # copied\n    x_row"))

    # cuTile softmax: the widest one-tile row and the hints of each kernel copy. A copy with
    # other hints is made once, next to the reference's own: one made in the wrapper is a
    # new kernel every call, prepared again each time (a sweep of such copies times that,
    # not the configuration).
    one = "    if N <= 32768:\n"
    hint = "softmax_kernel_4_per_sm = softmax_kernel.replace_hints(occupancy=4)\n"
    half = ("softmax_kernel_8_warps_4_per_sm = "
            "softmax_kernel.replace_hints(occupancy=4, num_worker_warps=8)\n")
    wide = "softmax_kernel_8_warps = softmax_kernel.replace_hints(num_worker_warps=8)\n"
    add("cutile", "softmax", "one tile up to 16384, two passes beyond (the previous reference)",
        (one, "    if N <= 16384:\n"))
    for o in (2, 3, 6):
        add("cutile", "softmax", f"occupancy={o} for tiles up to 8192", (hint, hint.replace("=4", f"={o}")))
    for o in (2, 8):
        add("cutile", "softmax", f"16-bit rows: 8 worker warps, occupancy={o}",
            (half, half.replace("=4", f"={o}")))
    # A row split over the blocks of a cluster (num_ctas): each block holds part of the
    # tile, so a 32768-wide fp32 row needs fewer registers per block.
    for hints in ("num_ctas=2, num_worker_warps=8", "num_ctas=4", "num_ctas=4, num_worker_warps=8",
                  "num_ctas=8"):
        add("cutile", "softmax", f"rows over 8192: {hints}",
            (wide, wide.replace("num_worker_warps=8", hints)))

    # cuTile bias+GELU: tile shape per dtype, occupancy.
    shape = "    TILE_M, TILE_N = (1, 1024) if x.element_size() == 4 else (4, 2048)\n"
    for fp32, half in (((1, 1024), (2, 2048)), ((1, 1024), (2, 4096)), ((1, 1024), (8, 2048)),
                       ((1, 1024), (4, 4096)), ((2, 2048), (4, 2048)), ((4, 1024), (4, 2048))):
        add("cutile", "fused_gelu", f"fp32 {fp32[0]}x{fp32[1]}, half {half[0]}x{half[1]}",
            (shape, f"    TILE_M, TILE_N = {fp32} if x.element_size() == 4 else {half}\n"))
    for o in (4, 16):
        add("cutile", "fused_gelu", f"occupancy={o}",
            ("@ct.kernel(occupancy=8)\n", f"@ct.kernel(occupancy={o})\n"))

    # cuTile matmul: tiles, occupancy, group size.
    mm = "        TILE_M, TILE_N, TILE_K = 128, 128, 64\n"
    for m, n, k in ((128, 128, 32), (128, 64, 64)):  # 128x256 and 256x128 spill (16x slower)
        add("cutile", "matmul", f"{m}x{n}x{k}", (mm, f"        TILE_M, TILE_N, TILE_K = {m}, {n}, {k}\n"))
    for o in (1, 3):
        add("cutile", "matmul", f"occupancy={o}", ("@ct.kernel(occupancy=2)\n", f"@ct.kernel(occupancy={o})\n"))
    for g in (4, 16):
        add("cutile", "matmul", f"GROUP_M={g}", ("    GROUP_M = 8\n", f"    GROUP_M = {g}\n"))

    # cuTile attention: tile shape and occupancy, per head size (each copy made once, at
    # import, next to the reference's own).
    copy = "flash_attention_kernel_2_per_sm = flash_attention_kernel.replace_hints(occupancy=2)\n"
    d128 = "        TILE_M, TILE_N, kernel = 64, 128, flash_attention_kernel_2_per_sm\n"
    d64 = "        TILE_M, TILE_N, kernel = 64, 64, flash_attention_kernel\n"

    def other(o):
        return (copy, copy + f"flash_attention_kernel_other = "
                             f"flash_attention_kernel.replace_hints(occupancy={o})\n")

    for m, n, o in ((64, 128, 1), (64, 128, 3), (64, 128, 4), (64, 256, 1), (64, 256, 2),
                    (32, 128, 4), (64, 64, 4)):
        add("cutile", "flash_attention", f"D=128: {m}x{n}, occupancy={o}", other(o),
            (d128, f"        TILE_M, TILE_N, kernel = {m}, {n}, flash_attention_kernel_other\n"))
    for m, n, o in ((64, 64, 3), (64, 64, 6), (64, 128, 3), (32, 64, 8)):
        add("cutile", "flash_attention", f"D=64: {m}x{n}, occupancy={o}", other(o),
            (d64, f"        TILE_M, TILE_N, kernel = {m}, {n}, flash_attention_kernel_other\n"))
    # cuTile attention: how early the K and V loads are issued (the latency hints).
    kload = "order=(0, 1, 3, 2), padding_mode=zero, latency=2)"
    vload = "padding_mode=zero, latency=4).reshape((TILE_N, HEAD_DIM))"
    for kl, vl in ((2, 2), (1, 2), (3, 3), (2, 8)):
        add("cutile", "flash_attention", f"latency K={kl}, V={vl}",
            (kload, kload.replace("=2)", f"={kl})")), (vload, vload.replace("=4)", f"={vl})")))

    # --- Second round (Hopper structure): more warps per block, one read per row, TMA and
    # persistent programs. Each is a whole kernel or hint added next to the reference's.

    # cuTile: num_worker_warps=8 asks for two warp groups per block (256 threads instead
    # of 128), so a tile twice as large fits the registers without spilling (checked with
    # cuobjdump -res-usage on the sm_90 cubin: 256 x 128 matmul tiles 218 registers, no
    # stack; 128-row attention tiles 237-245). The softmax reference uses it already.
    mm_hint = "@ct.kernel(occupancy=2)\n"
    for m, n, k in ((256, 128, 64), (128, 256, 64), (128, 128, 64), (256, 128, 32)):
        add("cutile", "matmul", f"{m}x{n}x{k}, 8 worker warps, occupancy=1",
            (mm_hint, "@ct.kernel(occupancy=1, num_worker_warps=8)\n"),
            (mm, f"        TILE_M, TILE_N, TILE_K = {m}, {n}, {k}\n"))
    for d, line in ((128, d128), (64, d64)):
        for m, n in ((128, 64), (128, 128)):
            add("cutile", "flash_attention", f"D={d}: {m}x{n}, 8 worker warps, occupancy=1",
                (copy, copy + "flash_attention_kernel_8_warps = "
                              "flash_attention_kernel.replace_hints(occupancy=1, num_worker_warps=8)\n"),
                (line, f"        TILE_M, TILE_N, kernel = {m}, {n}, flash_attention_kernel_8_warps\n"))

    # Triton softmax: the reference loads a row that fits one block once (its second
    # kernel); against it, the two-pass kernel for every row (the previous reference), and
    # persistent programs that walk rows, the next row's load issued while this one
    # computes (tl.range's num_stages).
    add("triton", "softmax", "two passes for every row (the previous reference)",
        ("    if N <= BLOCK_N:\n", "    if False:  # the two-pass kernel only\n"))
    persistent = '__all__ = ["softmax"]\n' + """

@triton.jit
def softmax_persistent_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_xm, stride_om,
                              BLOCK_N: tl.constexpr, STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=-float("inf"))
        x = x.to(tl.float32)
        p = tl.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
        y = p * (1.0 / tl.sum(p, axis=0))
        tl.store(out_ptr + row * stride_om + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
"""
    row_launch = "        softmax_row_kernel[(M,)](\n"
    for k, stages in ((2, 2), (4, 2), (8, 2), (4, 3)):
        label = f"one load per row, persistent {k} programs per SM, {stages} stages"
        add("triton", "softmax", label,
            ('__all__ = ["softmax"]\n', persistent),
            (row_launch,
             "        if x.is_cuda and x.stride(1) == 1 and out.stride(1) == 1:\n"
             "            sms = torch.cuda.get_device_properties(x.device).multi_processor_count\n"
             f"            softmax_persistent_kernel[(min(M, {k} * sms),)](\n"
             "                x, out, M, N, x.stride(0), out.stride(0),\n"
             f"                BLOCK_N=BLOCK_N, STAGES={stages}, **options)\n"
             "            return out\n" + row_launch))

    return out


VARIANTS = _variants()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="stage id (repeatable)")
    parser.add_argument("--track", action="append", choices=["triton", "cutile"])
    parser.add_argument("--label", action="append",
                        help="only the variants whose label contains this text (repeatable)")
    parser.add_argument("--seconds", type=float, default=1.5, help="timing budget per case")
    parser.add_argument("--list", action="store_true", help="print the variants and stop")
    parser.add_argument("--reference-last", action="store_true",
                        help="load and time the reference after its variants (is the first "
                             "one loaded timed differently?)")
    args = parser.parse_args()
    course = common.course()
    chosen = [v for v in VARIANTS if (not args.only or v.stage in args.only)
              and (not args.track or v.track in args.track)
              and (not args.label or any(text in v.label for text in args.label))]
    if args.list:
        for v in chosen:
            print(f"{v.track:<7} {v.stage:<16} {v.label}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for track in args.track or ["triton", "cutile"]:
            for stage in course.stages:
                mine = [v for v in chosen if v.track == track and v.stage == stage.id]
                if mine and stage.speed:
                    sweep(course, stage, track, mine, Path(tmp), args.seconds, args.reference_last)
    return 0


def sweep(course, stage, track, variants: list[Variant], tmp: Path, seconds: float,
          reference_last: bool = False) -> None:
    from grader import timing
    from grader.judge.compare import Expected, compare
    from grader.sandbox.outcomes import Outcome
    from grader.problems import DTYPES
    from grader.sandbox.submission import Submission
    from grader.speed import ceilings
    from scripts.benchmark import shape_label, shapes  # benchmark's shapes, course.toml's first

    problem = stage.problem
    path = course.module_path(stage, track, solutions=True)
    reference = path.read_text(encoding="utf-8")
    kernels = {} if reference_last else {"reference": Submission(path, problem.function)}
    for i, variant in enumerate(variants):
        module = tmp / f"{track}_{stage.id}_{i}.py"
        module.write_text(variant.source(reference), encoding="utf-8")
        kernels[variant.label] = Submission(module, problem.function)
    if reference_last:
        kernels["reference"] = Submission(path, problem.function)
    for submission in kernels.values():  # loaded, and later timed, in this order
        submission.load()
    limits = ceilings.ceilings()
    for params, dtype in shapes(stage):
        label = f"{shape_label(params)} {dtype}"
        call = problem.draw(params, dtype, 0, device="cuda")
        expected = problem.reference(call)
        candidates = {}
        for name, submission in kernels.items():
            fn = submission.bound(call.args, call.kwargs)
            try:
                verdict = compare(Outcome(output=fn()), Expected(expected, DTYPES[dtype], "cuda",
                                                           stage.tolerance[dtype]))
            except Exception as exc:  # noqa: BLE001 - a variant that fails is a finding
                print(f"  FAILED {track} {stage.id} {label} {name}: {exc}"[:300], flush=True)
                continue
            if verdict.passed:
                candidates[name] = fn
            else:
                print(f"  WRONG {track} {stage.id} {label} {name}: {verdict.summary}", flush=True)
        candidates.update({name: (lambda b=b: b(call)) for name, b in problem.baselines.items()})
        samples = timing.measure(candidates, timing.Budget(seconds=seconds))
        roofline = limits.roofline(problem.work(params, DTYPES[dtype]), dtype)
        ref_ms = samples["reference"].median if "reference" in samples else float("nan")
        print(f"{track} {stage.id} {label}:", flush=True)
        for name, s in sorted(samples.items(), key=lambda item: item[1].median):
            print(f"  {name:<58} {s.median:>8.4f} ms  {100 * roofline.fraction(s.median / 1e3):>4.0f}% "
                  f"of limit  {ref_ms / s.median:>5.3f}x reference  IQR {100 * s.spread:.1f}%",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
