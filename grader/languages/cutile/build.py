"""Building cuTile kernels to cubins, which needs no GPU: tileiras compiles anywhere.

A launch captured on the host (grader.sandbox.launches) is a kernel and its arguments; each
distinct set of argument constraints becomes a kernel signature (`signatures`), and every
signature is built for each target architecture (`build_kernels`, in the grading child, for
`grade compile`; the toolchain probe builds a tiny kernel the same way).
"""

from __future__ import annotations

import io
import time

import torch


def cutile_parameters(kernel) -> list[tuple[str, bool]]:
    """(name, is it a ct.Constant) for each parameter of a @ct.kernel."""
    function = kernel._annotated_function
    names = list(function.pysig.parameters)
    return [(n, a.constant) for n, a in zip(names, function.parameter_annotations)]


def cutile_name(kernel) -> str:
    return kernel._annotated_function.pyfunc.__name__


def _constraint(value, constant: bool):
    import cuda.tile as ct
    from cuda.tile.compilation import ArrayConstraint, ConstantConstraint, ScalarConstraint

    if constant:
        return ConstantConstraint(value)
    if isinstance(value, torch.Tensor):
        dtypes = {torch.float32: ct.float32, torch.float16: ct.float16,
                  torch.bfloat16: ct.bfloat16, torch.int32: ct.int32, torch.int64: ct.int64}
        return ArrayConstraint(dtypes[value.dtype], value.dim(), index_dtype=ct.int32,
                               stride_lower_bound_incl=0, alias_groups=(),
                               may_alias_internally=False)
    if isinstance(value, bool):
        return ScalarConstraint(ct.bool_)
    if isinstance(value, int):
        return ScalarConstraint(ct.int32 if -(2**31) <= value < 2**31 else ct.int64)
    if isinstance(value, float):
        return ScalarConstraint(ct.float32)
    raise TypeError(f"a kernel argument of type {type(value).__name__} cannot be compile-checked")


def signatures(launches) -> dict[str, tuple[object, list]]:
    """kernel name -> (kernel, [KernelSignature, ...]) without duplicates."""
    from cuda.tile.compilation import CallingConvention, KernelSignature

    found: dict[str, tuple[object, dict]] = {}
    for kernel, args in launches:
        params = cutile_parameters(kernel)
        # Constants are keyed by value: their constraint objects cannot be hashed.
        key = tuple(("const", v) if c else _constraint(v, c) for (_, c), v in zip(params, args))
        name = cutile_name(kernel)
        kernel_entry = found.setdefault(name, (kernel, {}))
        if key not in kernel_entry[1]:
            constraints = [_constraint(v, c) for (_, c), v in zip(params, args)]
            sig = KernelSignature(constraints, CallingConvention.cutile_python_v2())
            kernel_entry[1][key] = sig.with_mangled_symbol(name)
    return {name: (kernel, list(sigs.values())) for name, (kernel, sigs) in found.items()}


# tileiras 13.4 has been seen to abort now and then on a kernel it compiles fine on the
# next try ("double free or corruption", return code -6). A compiler killed by a signal
# says nothing about the source, so such a build is tried again before it counts.
CRASH_RETRIES = 2


def _compiler_crashed(exc: Exception) -> bool:
    """tileiras ended by a signal (cuTile reports a negative return code), not a rejection."""
    return type(exc).__name__ == "CompilerExecutionError" and str(exc).startswith("Return code -")


def build(export_kernel, kernel, sigs, arch: str) -> bytes:
    """Compile one kernel's signatures for `arch`: the cubin, or the compiler's error raised."""
    for attempt in range(CRASH_RETRIES + 1):
        try:
            out = io.BytesIO()
            export_kernel(kernel, sigs, out, gpu_code=arch, output_format="cubin")
            return out.getvalue()
        except Exception as exc:
            if not _compiler_crashed(exc) or attempt == CRASH_RETRIES:
                raise


def build_kernels(launches, archs: tuple[str, ...]) -> tuple[dict, dict]:
    """In the child: build every captured kernel for `archs`; (the reply, its cubins)."""
    from cuda.tile.compilation import export_kernel

    by_kernel = signatures(launches)
    value = {"kernels": sorted(by_kernel), "builds": [],
             "signatures": sum(len(sigs) for _, sigs in by_kernel.values())}
    cubins = {}
    for arch in archs:
        start, errors, made = time.perf_counter(), [], 0
        for name, (kernel, sigs) in by_kernel.items():
            try:
                cubin = build(export_kernel, kernel, sigs, arch)
            except Exception as exc:  # noqa: BLE001 - the compiler's message is the result
                crashed = f" (the compiler crashed on all {CRASH_RETRIES + 1} tries)" if _compiler_crashed(exc) else ""
                errors.append(f"{name}: {type(exc).__name__}: {str(exc).strip()[:2000]}{crashed}")
                continue
            cubins[f"cubin.{arch}.{made}"] = torch.frombuffer(bytearray(cubin), dtype=torch.uint8)
            made += 1
        value["builds"].append({"arch": arch, "ok": not errors, "error": "\n".join(errors),
                                "seconds": round(time.perf_counter() - start, 2), "cubins": made})
    return value, cubins
