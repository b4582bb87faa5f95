"""Tuning sweep: variants of the references' TUNE places, timed against the reference and
PyTorch in one run; one table per speed case.

Issue #16 wants the references at the hardware limit. A variant is the reference file with
a few lines of its tuned blocks rewritten (a tile shape, warps, stages, an occupancy hint:
what a student would try at the same TUNE places), so every variant below is an edit a
reader can apply by hand. For each speed case of the stages named, the reference, its
variants and PyTorch's implementations are timed together by grader.timing.measure (the
grader's clock: CUDA events, L2 flushed before every call, calls interleaved, median); every
output is checked against the float32 reference first, and a wrong one is reported, not
timed. Rows are sorted by time, with the fraction of the case's roofline limit and the
speed-up over the reference.

A variant whose lines are no longer in the reference fails loudly (tests/test_speed.py
checks every one on the CPU), so the sweep cannot rot into timing copies of the reference.

Usage:  python scripts/sweep.py [--only STAGE] [--track T] [--seconds S] [--list]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.course import load_course  # noqa: E402


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
    warps = "    options = dict(num_warps=min(32, max(4, BLOCK_N * x.element_size() // 2048)))\n"
    for w in (8, 16, 32):
        add("triton", "softmax", f"num_warps={w}", (warps, f"    options = dict(num_warps={w})\n"))
    add("triton", "softmax", "1 KiB of row per warp", (warps, warps.replace("2048", "1024")))
    add("triton", "softmax", "4 KiB of row per warp", (warps, warps.replace("2048", "4096")))
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

    # Triton matmul: tiles and stages, warps, group size.
    config = "            BLOCK_M, BLOCK_N, BLOCK_K, num_stages = 128, 256, 64, 4\n"
    for m, n, k, s in ((128, 256, 64, 3), (256, 128, 64, 3), (256, 128, 64, 4),
                       (128, 128, 64, 4), (128, 128, 64, 5), (128, 256, 32, 5)):
        add("triton", "matmul", f"{m}x{n}x{k}, {s} stages",
            (config, f"            BLOCK_M, BLOCK_N, BLOCK_K, num_stages = {m}, {n}, {k}, {s}\n"))
    group = "    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages = 128, 128, 32, 8, 3\n"
    for g in (4, 16):
        add("triton", "matmul", f"GROUP_M={g}", (group, group.replace(" 8, 3\n", f" {g}, 3\n")))

    # Triton attention: tile shape, warps, stages (causal needs BLOCK_M a multiple of BLOCK_N).
    tiles = "    BLOCK_M, BLOCK_N = 64, 64\n    options = dict(num_warps=4, num_stages=3)\n"
    for m, n, w, s in ((128, 64, 8, 3), (128, 64, 4, 3), (128, 64, 8, 2), (128, 128, 8, 3),
                       (128, 32, 4, 3), (64, 64, 4, 2), (64, 64, 4, 4), (64, 32, 4, 3)):
        add("triton", "flash_attention", f"{m}x{n}, {w} warps, {s} stages",
            (tiles, f"    BLOCK_M, BLOCK_N = {m}, {n}\n"
                    f"    options = dict(num_warps={w}, num_stages={s})\n"))

    # cuTile softmax: the widest one-tile row, the two-pass tile, the occupancy hint.
    hint = "softmax_kernel_4_per_sm = softmax_kernel.replace_hints(occupancy=4)\n"
    one = "    if N <= 32768:\n"
    two = "        TILE_N, one_tile = 16384, False\n"
    pick = "    kernel = softmax_kernel_4_per_sm if TILE_N <= 8192 else softmax_kernel\n"
    for o in (2, 8):
        add("cutile", "softmax", f"occupancy={o} up to 8192", (hint, hint.replace("=4", f"={o}")))
    for cap, width in ((16384, 4096), (16384, 8192), (8192, 4096), (8192, 8192)):
        add("cutile", "softmax", f"one tile up to {cap}, then tiles of {width}",
            (one, f"    if N <= {cap}:\n"), (two, f"        TILE_N, one_tile = {width}, False\n"))
    add("cutile", "softmax", "one tile up to 16384, tiles of 4096, occupancy=4 for every width",
        (one, "    if N <= 16384:\n"), (two, "        TILE_N, one_tile = 4096, False\n"),
        (pick, "    kernel = softmax_kernel_4_per_sm\n"))
    add("cutile", "softmax", "occupancy=2 for every width",
        (hint, hint.replace("=4", "=2")), (pick, "    kernel = softmax_kernel_4_per_sm\n"))

    # cuTile bias+GELU: tile shape per dtype, occupancy.
    shape = "    TILE_M, TILE_N = (1, 1024) if x.element_size() == 4 else (2, 2048)\n"
    for fp32, half in (((1, 1024), (1, 2048)), ((1, 1024), (4, 2048)), ((1, 1024), (2, 4096)),
                       ((1, 1024), (4, 1024)), ((2, 1024), (8, 1024)), ((1, 2048), (1, 4096))):
        add("cutile", "fused_gelu", f"fp32 {fp32[0]}x{fp32[1]}, half {half[0]}x{half[1]}",
            (shape, f"    TILE_M, TILE_N = {fp32} if x.element_size() == 4 else {half}\n"))
    for o in (4, 16):
        add("cutile", "fused_gelu", f"occupancy={o}",
            ("@ct.kernel(occupancy=8)\n", f"@ct.kernel(occupancy={o})\n"))

    # cuTile matmul: tiles, occupancy, group size.
    mm = "        TILE_M, TILE_N, TILE_K = 128, 128, 64\n"
    for m, n, k in ((128, 256, 64), (256, 128, 64), (128, 128, 32), (128, 64, 64)):
        add("cutile", "matmul", f"{m}x{n}x{k}", (mm, f"        TILE_M, TILE_N, TILE_K = {m}, {n}, {k}\n"))
    for o in (1, 3):
        add("cutile", "matmul", f"occupancy={o}", ("@ct.kernel(occupancy=2)\n", f"@ct.kernel(occupancy={o})\n"))
    add("cutile", "matmul", "128x256x64, occupancy=1",
        (mm, "        TILE_M, TILE_N, TILE_K = 128, 256, 64\n"),
        ("@ct.kernel(occupancy=2)\n", "@ct.kernel(occupancy=1)\n"))
    for g in (4, 16):
        add("cutile", "matmul", f"GROUP_M={g}", ("    GROUP_M = 8\n", f"    GROUP_M = {g}\n"))

    # cuTile attention: tile shape and occupancy.
    at = "    TILE_M, TILE_N = 64, 64\n"
    for o in (2, 3, 5):
        add("cutile", "flash_attention", f"64x64, occupancy={o}",
            ("@ct.kernel(occupancy=4)\n", f"@ct.kernel(occupancy={o})\n"))
    for m, n, o in ((128, 64, 2), (128, 64, 1), (64, 128, 2), (128, 128, 1)):
        add("cutile", "flash_attention", f"{m}x{n}, occupancy={o}",
            (at, f"    TILE_M, TILE_N = {m}, {n}\n"),
            ("@ct.kernel(occupancy=4)\n", f"@ct.kernel(occupancy={o})\n"))
    return out


VARIANTS = _variants()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="stage id (repeatable)")
    parser.add_argument("--track", action="append", choices=["triton", "cutile"])
    parser.add_argument("--seconds", type=float, default=1.5, help="timing budget per case")
    parser.add_argument("--list", action="store_true", help="print the variants and stop")
    args = parser.parse_args()
    course = load_course(ROOT / "course.toml")
    chosen = [v for v in VARIANTS if (not args.only or v.stage in args.only)
              and (not args.track or v.track in args.track)]
    if args.list:
        for v in chosen:
            print(f"{v.track:<7} {v.stage:<16} {v.label}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for track in args.track or ["triton", "cutile"]:
            for stage in course.stages:
                mine = [v for v in chosen if v.track == track and v.stage == stage.id]
                if mine and stage.speed:
                    sweep(course, stage, track, mine, Path(tmp), args.seconds)
    return 0


def sweep(course, stage, track, variants: list[Variant], tmp: Path, seconds: float) -> None:
    import torch

    from grader import timing
    from grader.judge.compare import compare
    from grader.problems import DTYPES
    from grader.sandbox.submission import Submission
    from grader.speed import ceilings

    problem = stage.problem
    path = course.module_path(stage, track, solutions=True)
    reference = path.read_text(encoding="utf-8")
    kernels = {"reference": Submission(path, problem.function)}
    for i, variant in enumerate(variants):
        module = tmp / f"{track}_{stage.id}_{i}.py"
        module.write_text(variant.source(reference), encoding="utf-8")
        kernels[variant.label] = Submission(module, problem.function)
    for submission in kernels.values():
        submission.load()
    limits = ceilings.ceilings()
    for case in stage.speed.cases:
        call = problem.draw(case.params, case.dtype, case.seed, device="cuda")
        expected = problem.reference(call)
        candidates = {}
        for name, submission in kernels.items():
            fn = submission.bound(call.args, call.kwargs)
            try:
                verdict = compare(fn(), expected, DTYPES[case.dtype], "cuda",
                                  stage.tolerance[case.dtype])
            except Exception as exc:  # noqa: BLE001 - a variant that fails is a finding
                print(f"  FAILED {track} {stage.id} {case.id} {name}: {exc}"[:300], flush=True)
                continue
            if verdict.passed:
                candidates[name] = fn
            else:
                print(f"  WRONG {track} {stage.id} {case.id} {name}: {verdict.summary}", flush=True)
        candidates.update({name: (lambda b=b: b(call)) for name, b in problem.baselines.items()})
        samples = timing.measure(candidates, timing.Budget(seconds=seconds))
        roofline = limits.roofline(problem.work(case.params, DTYPES[case.dtype]), case.dtype)
        ref_ms = samples["reference"].median if "reference" in samples else float("nan")
        print(f"{track} {stage.id} {case.id}:", flush=True)
        for name, s in sorted(samples.items(), key=lambda item: item[1].median):
            print(f"  {name:<58} {s.median:>8.4f} ms  {100 * roofline.fraction(s.median / 1e3):>4.0f}% "
                  f"of limit  {ref_ms / s.median:>5.3f}x reference  IQR {100 * s.spread:.1f}%",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
