"""The cuTile a kernel body may name: the reviewed list (grader.replay.kernel_api says how it
is used and how versions are keyed).

The base list is cuda-tile 1.7's; no later version has been reviewed yet. cuTile has no
function that reads the GPU's clock or the multiprocessor a block runs on, and no inline
assembly; what is left out is the host's (launching, compiling, the compiler's errors) and
what orders one launch after another. Every public name of `cuda.tile` is either listed here
or left out in `LEFT_OUT`, with the reason a student reads; tests/languages/test_kernel_api.py
checks both against the installed cuda-tile.
"""

from __future__ import annotations

from grader.replay.kernel_api import KernelApi


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# numpy's dtypes and numbers, which cuTile takes in tile code as NVIDIA's samples write it.
NUMPY_IN_CUTILE = _names("float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 "
                         "uint64 bool_ inf nan pi e")

# --- cuda.tile, by what a kernel does with each group -------------------------------------

# Which block this is, and how many.
BLOCKS = _names("bid num_blocks num_tiles cdiv")
# Reading and writing arrays: by tiles, by gathered indices, and atomics (blocks that share
# memory are the replay's to find: its checks of what each block writes).
MEMORY = _names("""
    load store gather scatter load_advanced_indexing store_advanced_indexing Slice
    PaddingMode
    atomic_add atomic_and atomic_cas atomic_max atomic_min atomic_or atomic_xchg atomic_xor
    MemoryOrder MemoryScope
""")
# Making tiles and changing their shape or type.
SHAPES = _names("""
    arange full zeros ones astile broadcast_to expand_dims reshape permute transpose cat
    extract insert astype bitcast pack_to_bytes unpack_from_bytes where
""")
# Elementwise math, comparisons and bitwise operations on tiles.
ELEMENTWISE = _names("""
    abs add sub mul truediv floordiv mod divmod pow negative maximum minimum
    exp exp2 log log2 sqrt rsqrt sin cos tan sinh cosh tanh atan2 ceil floor isnan
    equal not_equal greater greater_equal less less_equal
    bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_lshift bitwise_rshift
    RoundingMode
""")
# Reductions and scans along an axis.
REDUCTIONS = _names("sum prod max min argmax argmin reduce scan cumsum cumprod")
# Matrix products.
PRODUCTS = _names("mma mma_scaled matmul")
# What the compiler evaluates or checks while it compiles (a `static_eval` expression is
# tile code too: every name in it is checked like the rest of the body), and what a kernel
# prints (output printed while a hidden case runs is withheld from the student).
COMPILE_TIME = _names("""
    Constant static_assert static_eval static_iter static_exception ensure_constant
    assume_divisible_by assert_ print printf
""")
# Types and dtypes.
TYPES = _names("""
    DType Array Tile TiledView ScalarInt64 IndexedWithInt64
    bool_ int8 int16 int32 int64 uint8 uint16 uint32 uint64
    float16 bfloat16 float32 float64 tfloat32
    float8_e4m3fn float8_e5m2 float8_e5m3fnu float8_e8m0fnu float4_e2m1fn
""")

TILE = BLOCKS | MEMORY | SHAPES | ELEMENTWISE | REDUCTIONS | PRODUCTS | COMPILE_TIME | TYPES

API = {
    "cuda": _names("tile"),
    "cuda.tile": TILE,
    "numpy": NUMPY_IN_CUTILE,
}

# --- left out, and why ------------------------------------------------------------------

_ERROR = ("it is an error the compiler raises on the host, not something a kernel uses; "
          "check a condition with ct.static_assert or ct.assert_")
_DECORATOR = ("it is a decorator, written above a `def` at the top level of the file, never "
              "inside a kernel")
_ANNOTATION = ("it describes a kernel's parameters to cuTile's launcher on the host; "
               "annotate a parameter with ct.Constant[int] or ct.Array, or leave it bare")

LEFT_OUT = {
    "cuda.tile.grid_dependency_control_wait":
        "it lets one launch overlap the one before it, and the grader runs launches one "
        "after another; leave it out",
    "cuda.tile.grid_dependency_control_launch_dependents":
        "it lets the next launch start before this one ends, and the grader runs launches "
        "one after another; leave it out",
    "cuda.tile.compiler_timeout": "it sets the compiler's time limit on the host; leave it out",
    "cuda.tile.foreign_pointer_dtype":
        "it makes arrays of the host's memory; a kernel reads only the arrays it is given",
    "cuda.tile.ByTarget":
        "it picks a value per GPU architecture, for the options of @ct.kernel; a kernel "
        "body computes the same on every GPU",
    "cuda.tile.launch": "it launches a kernel from the host, and a kernel launches nothing; "
                        "call a helper function instead",
    "cuda.tile.kernel": _DECORATOR,
    "cuda.tile.function": _DECORATOR,
    "cuda.tile.Scalar": _ANNOTATION,
    "cuda.tile.ArrayAnnotation": _ANNOTATION,
    "cuda.tile.ConstantAnnotation": _ANNOTATION,
    "cuda.tile.ListAnnotation": _ANNOTATION,
    **{f"cuda.tile.{name}": _ERROR for name in (
        "StaticException TileError TileCompilerExecutionError TileCompilerTimeoutError "
        "TileInternalError TileRecursionError TileStaticAssertionError TileStaticEvalError "
        "TileSyntaxError TileTypeError TileUnsupportedFeatureError TileValueError").split()},
}

INSTEAD = ("write it with the ct.* functions the course uses (ct.load, ct.store, ct.where, "
           "ct.sum, ct.max, ct.mma, ct.exp2, ...) or math's numbers (math.inf, math.pi)")

CUTILE_API = KernelApi(distribution="cuda-tile", title="cuTile", base="1.7", names=API,
                       left_out=LEFT_OUT, instead=INSTEAD)
