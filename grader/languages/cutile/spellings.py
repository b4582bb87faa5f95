"""What a cuTile kernel file may spell where the replay reads it (grader.replay.spellings
says what each field of the table means)."""

from __future__ import annotations

from grader.languages.cutile.kernel_api import CUTILE_API, NUMPY_IN_CUTILE
from grader.replay.spellings import Spellings

CUTILE = Spellings(
    track="cutile", package="cuda.tile", api="ct.*",
    math="math's numbers (math.inf, math.pi)", math_functions=False,
    modules=frozenset({"cuda", "cuda.tile", "numpy"}),
    steps={"cuda": frozenset({"tile"}), "numpy": NUMPY_IN_CUTILE},
    builtins=frozenset({"range", "len", "min", "max", "int", "float", "bool", "abs", "divmod",
                        "print", "slice", "tuple"}),
    host_only=frozenset({"cuda.tile.launch", "cuda.tile.kernel", "cuda.tile.function",
                         "cuda.tile.compilation", "cuda.tile.tune", "cuda.tile.launch_extended"}),
    decorators={"cuda.tile.kernel": "kernel", "cuda.tile.function": "function"},
    annotations=frozenset({"cuda.tile.Constant", "cuda.tile.Array", "cuda.tile.Scalar",
                           "cuda.tile.Tile", "cuda.tile.ScalarInt64", "int", "float", "bool"}),
    constant_types=frozenset({"int", "float", "bool"}),
    homes=("cuda.tile", "numpy"),
    hidden=frozenset({"get_raw_memory", "foreign_pointer", "from_foreign"}),  # host memory
    dtype_class="cuda.tile.DType",
    options={"kernel": frozenset({"num_ctas", "occupancy", "opt_level", "num_worker_warps"}),
             "function": frozenset({"host", "tile"}),
             "replace_hints": frozenset({"num_ctas", "occupancy", "opt_level",
                                         "num_worker_warps"})},
    shown="@ct.kernel, @ct.function",
    short={"cuda.tile.": "ct."},
    constant="cuda.tile.Constant",
    kernel_api=CUTILE_API,
)
