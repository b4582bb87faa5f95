"""What a Triton kernel file may spell where the replay reads it (grader.replay.spellings
says what each field of the table means)."""

from __future__ import annotations

from grader.languages.triton.kernel_api import TRITON_API
from grader.replay.spellings import Spellings

TRITON = Spellings(
    track="triton", package="triton", api="tl.*",
    modules=frozenset({"triton", "triton.language", "triton.language.math",
                       "triton.language.extra", "triton.language.extra.cuda",
                       "triton.language.extra.cuda.libdevice",
                       "triton.language.extra.libdevice"}),
    steps={"triton": frozenset({"language", "cdiv", "next_power_of_2"})},
    builtins=frozenset({"range", "len", "min", "max", "int", "float", "print"}),
    host_only=frozenset({"triton.jit", "triton.autotune", "triton.heuristics"}),
    decorators={"triton.jit": "jit", "triton.autotune": "autotune",
                "triton.heuristics": "heuristics",
                "triton.constexpr_function": "constexpr_function",
                "triton.language.constexpr_function": "constexpr_function"},
    annotations=frozenset({"triton.language.constexpr", "triton.language.tensor", "int",
                           "float", "bool", "str"}),
    constant_types=frozenset(),
    homes=("triton.language", "triton._C.libtriton"),
    hidden=frozenset({"handle"}),  # the interpreter's numpy array behind a tensor
    launch_options=frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg",
                              "enable_fp_fusion"}),
    dtype_class="triton.language.dtype",
    wrapper="triton.language.constexpr",
    options={"jit": frozenset({"do_not_specialize", "do_not_specialize_on_alignment", "debug",
                               "noinline"}),
             "autotune": frozenset({"configs", "key", "reset_to_zero", "restore_value",
                                    "warmup", "rep", "cache_results", "use_cuda_graph"})},
    refused={"heuristics": "@triton.heuristics takes functions, which the grader does not "
                           "run: compute the value in your wrapper and pass it to the kernel "
                           "as an argument",
             "constexpr_function": "a constexpr function runs Python while the kernel "
                                   "compiles, which the grader does not allow: compute the "
                                   "value in your wrapper and pass it to the kernel as a "
                                   "tl.constexpr argument"},
    called=frozenset({"autotune"}),
    shown="@triton.jit, @triton.autotune(configs=[...])",
    short={"triton.language.": "tl."},
    kernel_api=TRITON_API,
)
