"""Compiling cuTile kernels without a GPU: the check that a stage builds for each architecture.

cuTile cannot run a kernel without a GPU, but tileiras compiles one anywhere. In the
sandboxed child (grader.sandbox), the stage's host wrapper is called on CPU tensors drawn
from the course's cases, with `ct.launch` captured instead of run; each captured launch
becomes a kernel signature, and a cubin is exported per target architecture
(`build_kernels`). The parent (`compile_stage`) accepts a build only with its cubins, and
only if each is a CUDA ELF file. A kernel that compiles is not a kernel that is correct:
results of this check are reported as COMPILED, never as PASS.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, field

import torch

from grader.course import Course, Stage
from grader.frontends import signatures
from grader.sandbox import Runner
from grader.sandbox.protocol import ProtocolError, check
from grader.screening import describe, screen
from grader.skeletons import todo_state
from grader.submission import SubmissionError

ARCHS = ("sm_80", "sm_90", "sm_100", "sm_120")
_EM_CUDA = 190  # the ELF machine number of CUDA binaries
_BUILD = {"arch": str, "ok": bool, "seconds": float, "error": str, "cubins": int}


@dataclass
class ArchBuild:
    arch: str
    ok: bool
    seconds: float
    error: str = ""


@dataclass
class CompileResult:
    number: int
    id: str
    module: str
    status: str = "ERROR"  # COMPILED, FAILED, NOT STARTED or ERROR
    message: str = ""
    kernels: list[str] = field(default_factory=list)
    signatures: int = 0
    builds: list[ArchBuild] = field(default_factory=list)


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


def compile_stage(course: Course, stage: Stage, solutions: bool,
                  archs: tuple[str, ...] = ARCHS) -> CompileResult:
    path = course.module_path(stage, "cutile", solutions)
    result = CompileResult(stage.number, stage.id, str(path.relative_to(course.root)))
    if not path.is_file():
        result.message = f"{result.module} is missing"
        return result
    if todo_state(path.read_text(encoding="utf-8")).not_started:
        result.status = "NOT STARTED"
        result.message = f"fill in the TODOs in {result.module}"
        return result
    findings = screen(path.read_text(encoding="utf-8"), path.name, course.rules)
    if findings:
        result.message = describe(findings)
        return result
    runner = Runner(path, stage.problem.function, "cpu", hidden=course.private_paths,
                    rules=course.rules, track="cutile")
    cases = [[dict(c.params), c.dtype, c.seed] for c in stage.cases]
    try:
        runner.load()
        reply = runner.compile(stage.problem.id, cases, archs)
        value = check(reply.header["value"], {"kernels": [str], "signatures": int,
                                              "builds": [_BUILD]}, "the compile reply")
        result.builds = [_checked_build(b, reply.tensors) for b in value["builds"]]
    except (SubmissionError, ProtocolError) as exc:
        result.message = str(exc)
        return result
    finally:
        runner.close()
    if not value["kernels"]:
        result.message = f"{result.module} made no ct.launch call"
        return result
    result.kernels, result.signatures = value["kernels"], value["signatures"]
    result.status = "COMPILED" if all(b.ok for b in result.builds) else "FAILED"
    return result


def _checked_build(build: dict, tensors: dict) -> ArchBuild:
    """A build is believed only with its cubins, each a CUDA ELF file."""
    found = [tensors.get(f"cubin.{build['arch']}.{i}") for i in range(build["cubins"])]
    if build["ok"] and (not found or not all(t is not None and _is_cubin(t) for t in found)):
        return ArchBuild(build["arch"], False, build["seconds"],
                         "the build was reported without a CUDA binary to show for it")
    return ArchBuild(build["arch"], build["ok"], build["seconds"], build["error"])


def _is_cubin(data) -> bool:
    head = bytes(data[:20].tolist())
    return len(head) == 20 and head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == _EM_CUDA
