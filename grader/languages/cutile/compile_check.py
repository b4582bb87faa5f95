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

from dataclasses import dataclass, field

from grader.course import Course, Stage
from grader.course.todos import todo_state
from grader.languages.cutile.toolchain import ARCHS
from grader.sandbox import ChildProcess
from grader.protocol import ProtocolError, check_shape
from grader.quoting import said, single_line
from grader.sandbox.screening import describe, screen
from grader.sandbox.submission import SubmissionError

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
    child = ChildProcess(path, stage.problem.function, "cpu", hidden=course.private_paths,
                    rules=course.rules, track="cutile")
    # The course's own cases only: what a call on a hidden case raised, or a build of its
    # shapes reported, would tell its inputs, and this check's messages are the student's.
    cases = [[dict(c.params), c.dtype, c.seed] for c in stage.cases if not c.hidden]
    try:
        child.load()
        reply = child.compile(stage.problem.id, cases, archs)
        value = check_shape(reply.header["value"], {"kernels": [str], "signatures": int,
                                              "builds": [_BUILD]}, "the compile reply")
        # The compiler names the file by its path in the sandbox, a temporary folder the
        # student never saw: shown as the file they wrote.
        renamed = (child.seen_at, result.module)
        result.builds = [_checked_build(b, reply.tensors, renamed) for b in value["builds"]]
    except SubmissionError as exc:  # the grader's words, its process's quoted in them
        result.message = str(exc)
        return result
    except ProtocolError as exc:  # may name what the reply held: one line
        result.message = f"its process sent a reply the grader cannot read: {single_line(exc)}"
        return result
    finally:
        child.close()
    if not value["kernels"]:
        result.message = f"{result.module} made no ct.launch call"
        return result
    result.kernels, result.signatures = value["kernels"], value["signatures"]
    result.status = "COMPILED" if all(b.ok for b in result.builds) else "FAILED"
    return result


def _checked_build(build: dict, tensors: dict, renamed: tuple[str, str]) -> ArchBuild:
    """A build is believed only with its cubins, each a CUDA ELF file. `renamed`: the
    submission's path in the sandbox, and the path to show for it."""
    found = [tensors.get(f"cubin.{build['arch']}.{i}") for i in range(build["cubins"])]
    if build["ok"] and (not found or not all(t is not None and _is_cubin(t) for t in found)):
        return ArchBuild(build["arch"], False, build["seconds"],
                         "the build was reported without a CUDA binary to show for it")
    # The build's error comes from the submission's process: quoted below the grader's words.
    sandboxed, shown = renamed
    error = build["error"].replace(sandboxed, shown) if sandboxed else build["error"]
    error = said("the build failed:", error) if not build["ok"] else ""
    return ArchBuild(build["arch"], build["ok"], build["seconds"], error)


def _is_cubin(data) -> bool:
    head = bytes(data[:20].tolist())
    return len(head) == 20 and head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == _EM_CUDA
