"""The cuTile track's record: how the grader names, words and finds cuda.tile (declared as
the `cutile` entry point of `tilecourse.tracks` in pyproject.toml)."""

import re

from grader.tracks.record import Parts, Track, Words

CUTILE = Track(
    name="cutile", title="cuTile", module="cuda.tile",
    imports=re.compile(r"^\s*(import|from)\s+cuda\.tile\b|^\s*from\s+cuda\s+import\s+tile\b",
                       re.M),
    decorator="@ct.kernel",
    words=Words("block", "blocks", "tile indices", "ct.bid",
                "load with a tile index inside the array's tile space",
                "store with a tile index inside the array's tile space", "tile index"),
    nan_fix=("load with `padding_mode=ct.PaddingMode.ZERO` (or NEG_INF before a max), not "
             "UNDETERMINED"),
    extra="cutile", gpu_backend="cutile", cpu_backend="cutile-sim",
    parts=Parts.named_in("grader.languages.cutile"),
    gpu_summary="cuTile kernels compiled by tileiras for the GPU",
    cpu_summary="cuTile kernels run by the grader's simulator on the CPU, block by block",
    cpu_runner="the grader's simulator",
    preload=(),  # cuda.tile is imported by the workers of the cuTile track alone
    auto_rank=0,  # first where its GPU backend runs
)
