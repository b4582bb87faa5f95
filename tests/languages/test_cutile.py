"""The cuTile track on a machine without a GPU: backend selection and its messages, the
tileiras probe (with the stale-CUDA_HOME repair), `grade doctor`, and the compile check."""

import io
import os

import pytest
import torch
from conftest import broken, copy_course
from rich.console import Console

from grader.backends import selection as backends
from grader.course import load_course
from grader.errors import BackendUnavailable
from grader.languages.cutile import build, compile_check, toolchain
from grader.report.scorecard import render_compile


@pytest.fixture(autouse=True)
def fresh_probe(monkeypatch, tmp_path):
    """Each test probes anew, with its own cache file."""
    monkeypatch.setattr(toolchain, "CACHE_FILE", tmp_path / "probe.json")
    real_probe = toolchain.probe
    real_probe.cache_clear()
    yield
    real_probe.cache_clear()


def fake_gpu(monkeypatch, capability=(9, 0), name="NVIDIA H200"):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: name)


def test_cutile_needs_a_gpu_and_says_what_to_do_instead(run_grade, course):
    code, out, err = run_grade("--course", str(course.path), "all", "--backend", "cutile")
    assert code == 2
    assert "cuTile kernels run only on a CUDA GPU" in err
    assert "`grade compile`" in err and "--backend triton-interpret" in err
    assert "Traceback" not in out + err


def test_missing_cuda_tile_names_the_install_command(monkeypatch):
    monkeypatch.setattr(toolchain, "cuda_tile_version", lambda: None)
    with pytest.raises(BackendUnavailable, match=r"cuda-tile is not installed.*pip install"):
        backends.select("cutile")


def test_unsupported_gpu_is_named(monkeypatch):
    fake_gpu(monkeypatch, capability=(7, 5), name="Tesla T4")
    with pytest.raises(BackendUnavailable, match=r"Tesla T4 has compute capability 7.5"):
        backends.select("cutile")


def test_missing_tileiras_is_named(monkeypatch):
    fake_gpu(monkeypatch)
    found = toolchain.inspect_toolchain()
    monkeypatch.setattr(toolchain, "inspect_toolchain", lambda: found.__class__(
        **{**found.__dict__, "tileiras": None}))
    with pytest.raises(BackendUnavailable, match=r"tileiras, the cuTile compiler, was not found"):
        backends.select("cutile")


def broken_with_cuda_home(arch):
    if os.environ.get("CUDA_HOME"):
        raise RuntimeError("TileCompilerExecutionError: failed to compile Tile IR program (5)")


def test_stale_cuda_home_is_detected_and_dropped(monkeypatch):
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda-13.0")
    result = toolchain.probe("sm_90", broken_with_cuda_home)
    assert result.ok and result.drop_cuda_home
    assert "failed to compile Tile IR program" in result.error
    assert os.environ["CUDA_HOME"] == "/usr/local/cuda-13.0"  # the probe itself changes nothing
    toolchain.apply(result)
    assert "CUDA_HOME" not in os.environ


def test_a_broken_tileiras_is_reported_with_the_cuda_home_hint(monkeypatch):
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda-13.0")
    fake_gpu(monkeypatch)

    def always_broken(arch):
        raise RuntimeError("failed to compile Tile IR program")

    result = toolchain.probe("sm_90", always_broken)
    assert not result.ok and not result.drop_cuda_home
    monkeypatch.setattr(toolchain, "probe", lambda arch: result)
    with pytest.raises(BackendUnavailable) as info:
        backends.select("cutile")
    message = str(info.value)
    assert "cannot compile for sm_90" in message and "CUDA_HOME=/usr/local/cuda-13.0" in message
    assert "grade doctor" in message


def test_the_real_tileiras_compiles_here():
    result = toolchain.probe("sm_90")
    assert result.ok, result.error


def test_auto_prefers_cutile_when_it_works(monkeypatch):
    fake_gpu(monkeypatch)
    monkeypatch.setattr(toolchain, "probe", lambda arch: toolchain.Probe(arch, True))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    selection = backends.select("auto")
    assert selection.backend.name == "cutile"
    assert "compiles for sm_90" in selection.reason and "--track triton" in selection.reason
    assert backends.select("auto", track="triton").backend.name == "triton"


def test_auto_takes_triton_on_a_gpu_where_cutile_cannot_compile(monkeypatch):
    fake_gpu(monkeypatch)
    monkeypatch.setattr(toolchain, "probe", lambda arch: toolchain.Probe(arch, False, "broken"))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert backends.select("auto").backend.name == "triton"


def test_doctor_reports_every_backend(run_grade):
    code, out, _ = run_grade("doctor")
    assert code == 0
    for text in ("torch", "triton", "cuda-tile", "tileiras", "CUDA_HOME", "GPU",
                 "Triton interpreter", "tileiras compiles for sm_90"):
        assert text in out
    assert "triton-interpret" in out and "cutile" in out
    assert "`grade` will use triton-interpret" in out


def test_doctor_exits_1_when_nothing_can_grade(run_grade, monkeypatch):
    monkeypatch.setattr(backends, "BACKENDS", {
        name: b.__class__(**{**b.__dict__, "probe": lambda: "not here"})
        for name, b in backends.BACKENDS.items()})
    code, out, _ = run_grade("doctor")
    assert code == 1 and "No backend can grade on this machine" in out


# tileiras takes minutes for the five stages on two cores: stage 1 in the default run, the
# others with `-m slow`.
@pytest.mark.parametrize("stage", [1, *(pytest.param(n, marks=pytest.mark.slow)
                                        for n in (2, 3, 4, 5))])
def test_every_cutile_reference_compiles_for_every_target(course, stage):
    r = compile_check.compile_stage(course, course.select(str(stage)), solutions=True)
    assert r.status == "COMPILED", (r.id, r.message, [b.error for b in r.builds if not b.ok])
    assert [b.arch for b in r.builds] == list(compile_check.ARCHS)
    assert r.kernels and r.signatures >= 1


def test_untouched_cutile_skeletons_are_not_compiled(run_grade, course):
    code, out, _ = run_grade("--course", str(course.path), "compile", "1")
    assert code == 1
    assert "NOT STARTED" in out and "not a correctness pass" in out


def test_a_kernel_that_does_not_compile_fails_with_the_compiler_message(tmp_path):
    course_file = copy_course(tmp_path / "course", parts=("course.toml", "solutions"))
    # Tile dimensions must be powers of two.
    (course_file.parent / "solutions/cutile/stage1_vector_add.py").write_text(
        broken("cutile", "stage1_vector_add.py", "shape=(TILE_SIZE,), padding_mode",
               "shape=(TILE_SIZE - 1,), padding_mode", count=2))
    mini = load_course(course_file)
    result = compile_check.compile_stage(mini, mini.select("vector_add"), True, ("sm_90",))
    assert result.status == "FAILED"
    # the compiler's message, from the submission's process: quoted under the grader's words
    error = result.builds[0].error
    assert error.startswith("the build failed:\n┆ vector_add_kernel:")
    # the file named as the student knows it, not by its path in the sandbox's temporary folder
    assert '"solutions/cutile/stage1_vector_add.py", line ' in error
    assert "tilecourse-sandbox" not in error


def test_a_failure_on_every_architecture_is_shown_once_under_them_all():
    same = "the build failed:\n┆ vector_add_kernel: InternalError: Shapes are not broadcastable"
    result = compile_check.CompileResult(
        1, "vector_add", "exercises/cutile/stage1_vector_add.py", "FAILED",
        builds=[compile_check.ArchBuild("sm_80", False, 0.1, same),
                compile_check.ArchBuild("sm_90", False, 0.1, same),
                compile_check.ArchBuild("sm_100", True, 0.1),
                compile_check.ArchBuild("sm_120", False, 0.1, "the build failed:\n┆ other")])
    out = io.StringIO()
    render_compile([result], compile_check.ARCHS, Console(file=out, width=120))
    shown = out.getvalue()
    assert shown.count("Shapes are not broadcastable") == 1
    assert "sm_80, sm_90: the build failed:" in shown
    assert "sm_120: the build failed:" in shown and "sm_100:" not in shown


class CompilerExecutionError(Exception):
    """Stands in for cuTile's exception of that name (tileiras exited with an error)."""


def fake_compiler(outcomes):
    """An export_kernel that raises the given exceptions in turn, then succeeds."""
    calls = []

    def export_kernel(*args, **kwargs):
        calls.append(args)
        if len(calls) <= len(outcomes):
            raise outcomes[len(calls) - 1]

    return export_kernel, calls


def test_a_compiler_crash_is_tried_again():
    crash = CompilerExecutionError("Return code -6\ndouble free or corruption (!prev)")
    export_kernel, calls = fake_compiler([crash])
    build.build(export_kernel, "kernel", [], "sm_90")
    assert len(calls) == 2


def test_a_compiler_that_keeps_crashing_or_rejects_the_source_fails():
    crash = CompilerExecutionError("Return code -11\nsegmentation fault")
    export_kernel, calls = fake_compiler([crash] * (build.CRASH_RETRIES + 1))
    with pytest.raises(CompilerExecutionError):
        build.build(export_kernel, "kernel", [], "sm_90")
    assert len(calls) == build.CRASH_RETRIES + 1
    # A rejection (positive return code) is the source's fault: reported at once.
    export_kernel, calls = fake_compiler([CompilerExecutionError("Return code 1\nerror: bad tile")])
    with pytest.raises(CompilerExecutionError):
        build.build(export_kernel, "kernel", [], "sm_90")
    assert len(calls) == 1


def test_signatures_are_told_apart_by_integer_width_and_constant_value(course):
    import importlib.util

    import torch

    path = course.module_path(course.select("flash_attention"), "cutile", solutions=True)
    spec = importlib.util.spec_from_file_location("attention", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.flash_attention_kernel
    q = torch.empty(1, 2, 8, 16, dtype=torch.float16)

    def launch(heads, head_dim):
        return kernel, (q, q, q, q, 0.5, heads, head_dim, 64, 64, False)

    found = build.signatures([launch(2, 16), launch(3, 16), launch(2**40, 16), launch(2, 32)])
    # 2 and 3 share an int32 signature; 2**40 needs int64; a new constant is a new kernel.
    assert len(found["flash_attention_kernel"][1]) == 3
