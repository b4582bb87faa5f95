"""The Triton a kernel body may name: the reviewed list (grader.replay.kernel_api says how it
is used and how versions are keyed).

The base list is Triton 3.6's (the GPU machines'); `CHANGES` says what 3.9 (the CPU
machines') adds and removes. Every public name of a module below is either listed here or
left out in `LEFT_OUT`, with the reason a student reads; tests/languages/test_kernel_api.py
checks both against the installed Triton.
"""

from __future__ import annotations

from grader.replay.kernel_api import Change, KernelApi


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- triton.language, by what a kernel does with each group ------------------------------

# Which program this is, and the loops and index ranges of tile code.
PROGRAMS = _names("program_id num_programs arange range static_range cdiv swizzle2d")
# Reading and writing memory: pointers and masks, block pointers, tensor descriptors (TMA),
# and atomics (programs of one launch that share memory are the replay's to find: its
# checks of what each program writes, grader.replay.traffic).
MEMORY = _names("""
    load store
    make_block_ptr advance
    make_tensor_descriptor load_tensor_descriptor store_tensor_descriptor
    atomic_add atomic_and atomic_cas atomic_max atomic_min atomic_or atomic_xchg atomic_xor
""")
# Making tiles and changing their shape.
SHAPES = _names("""
    full zeros zeros_like cast where clamp
    broadcast broadcast_to expand_dims reshape view ravel permute trans flip
    cat join split interleave gather
""")
# Elementwise math on tiles (the same functions as tl.math's, below).
ELEMENTWISE = _names("""
    abs add sub mul fdiv div_rn umulhi fma maximum minimum PropagateNan
    exp exp2 log log2 sqrt sqrt_rn rsqrt sin cos erf floor ceil sigmoid softmax
    map_elementwise
""")
# Reductions, scans and sorting along an axis.
REDUCTIONS = _names("""
    sum max min argmax argmin reduce reduce_or xor_sum histogram
    associative_scan cumsum cumprod sort topk
""")
# Matrix products.
PRODUCTS = _names("dot dot_scaled")
# Random numbers, drawn from a seed the kernel is given (the same every run).
RANDOM = _names("""
    rand randn randint rand4x randn4x randint4x philox uint_to_uniform_float
    pair_uniform_to_normal
""")
# What the compiler is told or checks while it compiles, and what a kernel prints (output
# printed while a hidden case runs is withheld from the student).
COMPILE_TIME = _names("""
    constexpr static_assert static_print device_assert device_print
    multiple_of max_contiguous max_constancy assume
""")
# Types and dtypes, and the language's limits.
TYPES = _names("""
    dtype tensor block_type pointer_type tuple tuple_type constexpr_type slice void
    tensor_descriptor tensor_descriptor_type
    int1 int8 int16 int32 int64 uint8 uint16 uint32 uint64
    float16 bfloat16 float32 float64
    float8e4nv float8e4b8 float8e4b15 float8e5 float8e5b16
    TRITON_MAX_TENSOR_NUMEL
""")
SUBMODULES = _names("math extra")  # tl.math, tl.extra (their lists are below)

LANGUAGE = (PROGRAMS | MEMORY | SHAPES | ELEMENTWISE | REDUCTIONS | PRODUCTS | RANDOM
            | COMPILE_TIME | TYPES | SUBMODULES)

# tl.math: the elementwise functions of tl.*, by another name.
MATH = _names("abs ceil cos div_rn erf exp exp2 fdiv floor fma log log2 rsqrt sin sqrt "
              "sqrt_rn umulhi")

# libdevice (tl.extra.cuda.libdevice, tl.extra.libdevice): CUDA's elementwise math library,
# reviewed as a group. Each function maps numbers to numbers, element by element; none
# reads the clock, the hardware or memory.
LIBDEVICE = _names("""
    abs acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh cospi
    erf erfc erfcinv erfcx erfinv exp exp10 exp2 expm1 fdim floor fma fmod hypot ilogb
    ldexp lgamma log log10 log1p log2 logb nearbyint nextafter norm3d norm4d normcdf
    normcdfinv pow rcbrt remainder rhypot rint rnorm3d rnorm4d round rsqrt scalbn sin sinh
    sinpi sqrt tan tanh tgamma trunc
    cyl_bessel_i0 cyl_bessel_i1 j0 j1 jn y0 y1 yn
    isinf isnan isfinited finitef signbit saturatef
    fast_cosf fast_dividef fast_exp10f fast_expf fast_log10f fast_log2f fast_logf
    fast_powf fast_sinf fast_tanf
    add_rd add_rn add_ru add_rz sub_rd sub_rn sub_ru sub_rz mul_rd mul_rn mul_ru mul_rz
    div_rd div_rn div_ru div_rz fma_rd fma_rn fma_ru fma_rz rcp_rd rcp_rn rcp_ru rcp_rz
    sqrt_rd sqrt_rn sqrt_ru sqrt_rz rsqrt_rn rcp64h
    double2float_rd double2float_rn double2float_ru double2float_rz
    double2int_rd double2int_rn double2int_ru double2int_rz
    double2ll_rd double2ll_rn double2ll_ru double2ll_rz
    double2uint_rd double2uint_rn double2uint_ru double2uint_rz
    double2ull_rd double2ull_rn double2ull_ru double2ull_rz
    float2int_rd float2int_rn float2int_ru float2int_rz
    float2ll_rd float2ll_rn float2ll_ru float2ll_rz
    float2uint_rd float2uint_rn float2uint_ru float2uint_rz
    float2ull_rd float2ull_rn float2ull_ru float2ull_rz
    int2double_rn int2float_rd int2float_rn int2float_ru int2float_rz
    ll2double_rd ll2double_rn ll2double_ru ll2double_rz
    ll2float_rd ll2float_rn ll2float_ru ll2float_rz
    uint2double_rn uint2float_rd uint2float_rn uint2float_ru uint2float_rz
    ull2double_rd ull2double_rn ull2double_ru ull2double_rz
    ull2float_rd ull2float_rn ull2float_ru ull2float_rz
    llrint llround
    double2hiint double2loint hiloint2double double_as_longlong longlong_as_double
    float_as_int float_as_uint int_as_float uint_as_float
    brev byte_perm clz ffs popc hadd rhadd mul24 mulhi sad
""")

API = {
    "triton": _names("language cdiv next_power_of_2"),
    "triton.language": LANGUAGE,
    "triton.language.math": MATH,
    "triton.language.extra": _names("cuda libdevice"),
    "triton.language.extra.cuda": _names("libdevice"),  # the rest of it is left out
    "triton.language.extra.cuda.libdevice": LIBDEVICE,
    "triton.language.extra.libdevice": LIBDEVICE,
}

# --- what each later version changes ------------------------------------------------------

CHANGES = {
    "3.9": Change(
        added={"triton.language": _names("squeeze unsqueeze to_tensor atomic_load "
                                         "atomic_store")},
        removed={"triton.language": _names("advance")},  # no longer exported by tl.*
    ),
}

# --- left out, and why ------------------------------------------------------------------

_CLOCK = ("it reads the GPU's clock, and a kernel's work must not depend on when it runs "
          "(the grader times your kernel: one that does less at some moments would earn "
          "speed it does not have); compute the same result on every run, with tl.* "
          "operations")
_WHERE = ("it reads which {what} a program runs on, which changes from run to run, so a "
          "kernel's work would depend on where it runs; tell programs apart with "
          "tl.program_id(axis)")
_LAUNCH = ("it reads how the kernel was launched, not what it computes; pass what the kernel "
           "needs as a tl.constexpr parameter")
_INTERNAL = ("it is a piece of Triton's own code generator, not a kernel function; use "
             "{instead}")
_HOST = "it belongs to Triton's package loader, not to a kernel"
_PYTHON = "it is Python's own, imported by Triton's code, not a kernel function"

LEFT_OUT = {
    "triton.language.extra.cuda.globaltimer": _CLOCK,
    "triton.language.extra.cuda.smid": _WHERE.format(what="multiprocessor (SM)"),
    "triton.language.extra.cuda.num_warps": _LAUNCH,
    "triton.language.extra.cuda.num_threads": _LAUNCH,
    "triton.language.inline_asm_elementwise":
        "inline assembly runs instructions that neither the grader nor Triton checks (they "
        "could write outside every tensor, or read the GPU's clock); write the computation "
        "with tl.* operations",
    "triton.language.debug_barrier":
        "a barrier makes the threads of a program wait for one another, which Triton already "
        "does wherever a tile program needs it; leave it out",
    "triton.language.atomic_poll":
        "it makes a program wait until another one writes a value, and programs of one "
        "launch may run in any order (one that waits could wait forever); give each program "
        "work that needs no other's result",
    "triton.language.extra.cuda.gdc_wait":
        "it lets one launch overlap the one before it, and the grader runs launches one "
        "after another; leave it out",
    "triton.language.extra.cuda.gdc_launch_dependents":
        "it lets the next launch start before this one ends, and the grader runs launches "
        "one after another; leave it out",
    "triton.language.extra.cuda.convert_custom_float8_sm70":
        "it converts to float8 as older GPUs store it; convert with .to(tl.float8e4nv) or "
        ".to(tl.float8e5)",
    "triton.language.extra.cuda.convert_custom_float8_sm80":
        "it converts to float8 as older GPUs store it; convert with .to(tl.float8e4nv) or "
        ".to(tl.float8e5)",
    "triton.language.extra.libdevice.fast_tanhf":
        "CUDA's libdevice has no such function, so it does not compile for the GPU; use "
        "libdevice.tanh",
    "triton.language.expect_zero":
        "it marks values for Triton's floating-point sanitizer and does nothing in a "
        "kernel's own build; leave it out",
    "triton.language.aggregate_replace":
        "it works on @triton.aggregate classes, and a kernel file's classes are host code "
        "the grader does not run",
    "triton.language.condition": _INTERNAL.format(instead="a `while` loop"),
    "triton.language.const": _INTERNAL.format(instead="a plain pointer parameter"),
    "triton.language.str_to_ty": _INTERNAL.format(instead="the dtype itself (tl.float32)"),
    "triton.language.pi32_t": _INTERNAL.format(instead="tl.pointer_type(tl.int32)"),
    "triton.language.philox_impl": _INTERNAL.format(instead="tl.philox"),
    "triton.language.bitonic_merge": _INTERNAL.format(instead="tl.sort"),
    "triton.language.math.T": _INTERNAL.format(instead="tl.math's functions"),
    **{f"triton.language.extra.{name}": _HOST
       for name in ("is_pkg", "module_name", "module_finder", "module_from_spec", "modules",
                    "spec")},
    "triton.language.math.List": _PYTHON,
    "triton.language.math.wraps": _PYTHON,
}

INSTEAD = ("write it with the tl.* functions the course uses (tl.load, tl.store, tl.where, "
           "tl.sum, tl.max, tl.dot, tl.exp, ...) or math's numbers and functions")

TRITON_API = KernelApi(distribution="triton", title="Triton", base="3.6", names=API,
                       changes=CHANGES, left_out=LEFT_OUT, instead=INSTEAD)
