"""The builder's read of the machine code it made (grader.replay.machine_code), without a GPU:
PTX kernels that read each special register, compiled for sm_90 by Triton's own ptxas, and
Triton kernels compiled for sm_90 by Triton (which needs no GPU to compile), disassembled by
nvdisasm and judged. Then the builder's part: a launch whose binary reads the clock is
refused at its step, and one whose binary cannot be read is not graded."""

import math
import subprocess
from pathlib import Path

import pytest
import torch
from conftest import ROOT

from grader.replay import binaries, kernels, machine_code, proposal
from grader.replay.execute import Executor
from grader.tracks import wing

TRITON_BIN = Path(__import__("triton").__file__).parent / "backends" / "nvidia" / "bin"
PTXAS = TRITON_BIN / "ptxas"
needs_toolchain = pytest.mark.skipif(
    not (PTXAS.exists() and machine_code.disassemblers()),
    reason="Triton's ptxas and an nvdisasm are needed to make and read a cubin")

# A PTX kernel that stores one special register to its argument.
PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
  .reg .u64 %rd<3>;
  .reg .u32 %r<2>;
  .reg .b64 %v;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  {read}
  st.global.u64 [%rd2], %v;
  ret;
}}
"""
WIDE = "mov.u64 %v, %{};"
NARROW = "mov.u32 %r1, %{};\n  cvt.u64.u32 %v, %r1;"


def cubin(tmp_path: Path, register: str) -> bytes:
    read = (WIDE if register in ("globaltimer", "clock64", "pm0_64") else NARROW).format(register)
    source = tmp_path / f"{register.replace('.', '_')}.ptx"
    source.write_text(PTX.format(read=read))
    made = source.with_suffix(".cubin")
    subprocess.run([str(PTXAS), "-arch=sm_90", str(source), "-o", str(made)], check=True,
                   capture_output=True)
    return made.read_bytes()


@needs_toolchain
@pytest.mark.parametrize("register, reveals", [
    ("globaltimer", "the GPU's clock"),
    ("globaltimer_lo", "the GPU's clock"),
    ("globaltimer_hi", "the GPU's clock"),
    ("clock", "the GPU's clock"),
    ("clock_hi", "the GPU's clock"),
    ("clock64", "the GPU's clock"),
    ("smid", "which multiprocessor (SM) runs it"),
    ("warpid", "which warp slot of its multiprocessor runs it"),
    ("pm0", "the GPU's performance counters"),
    ("pm0_64", "the GPU's performance counters"),
    ("tid.x", None),  # what every kernel reads: which thread it is
    ("laneid", None),
    ("nwarpid", None),  # how many warp slots there are: the same on every run
])
def test_each_special_register_that_tells_time_or_place_is_found(tmp_path, register, reveals):
    found = machine_code.reads(machine_code.disassemble(cubin(tmp_path, register)))
    if reveals is None:
        assert found == []
        return
    assert found and found[0].reveals.startswith(reveals)
    said = machine_code.check_cubins({"0/k.cubin": cubin(tmp_path, register)}, Path("submission.py"),
                              "tl.*")
    assert said.startswith(f"a kernel reads {reveals}") and found[0].register in said


# Kernels as a student writes them; compiled here by Triton for sm_90, no GPU needed.
KERNELS = '''import triton.language as tl


def timed(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if tl.extra.cuda.globaltimer() // 1000000 % 10 != 3:
        tl.store(out_ptr + offsets, x, mask=mask)


def placed(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if tl.extra.cuda.smid() != 0:
        tl.store(out_ptr + offsets, x, mask=mask)


def honest(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
'''


def triton_cubin(tmp_path: Path, name: str) -> bytes:
    """One kernel of KERNELS, compiled by Triton for sm_90 (as a JIT function, whatever
    TRITON_INTERPRET says: the tests run with the interpreter on)."""
    import importlib.util

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile
    from triton.runtime.jit import JITFunction

    path = tmp_path / "submission.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location(f"submission_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = ASTSource(fn=JITFunction(getattr(module, name)),
                       signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                  "BLOCK": "constexpr"}, constexprs={"BLOCK": 1024})
    return compile(source, target=GPUTarget("cuda", 90, 32)).asm["cubin"]


@needs_toolchain
@pytest.mark.parametrize("name, said", [
    ("timed", "a kernel reads the GPU's clock (line 8 of submission.py): its compiled code "
              "reads the GPU register SR_GLOBALTIMERLO"),
    ("placed", "a kernel reads which multiprocessor (SM) runs it (line 16 of submission.py)"),
    ("honest", None),
])
def test_a_triton_kernel_that_reads_the_clock_or_its_sm_is_refused_at_its_line(tmp_path, name,
                                                                               said):
    found = machine_code.check_cubins({"0/k.json": b"{}", "0/k.cubin": triton_cubin(tmp_path, name)},
                               tmp_path / "submission.py", "tl.*")
    assert found == said if said is None else found.startswith(said)


def test_a_binary_no_disassembler_reads_is_never_passed(monkeypatch):
    monkeypatch.setattr(machine_code, "disassemblers", lambda: [])
    with pytest.raises(machine_code.CubinUnreadable, match="nvdisasm, NVIDIA's disassembler, was "
                                                      "not found"):
        machine_code.check_cubins({"cubin": b"\x7fELF" + bytes(60)}, Path("submission.py"), "ct.*")
    with pytest.raises(machine_code.CubinUnreadable, match="not a cubin"):
        machine_code.check_cubins({"0/k.cubin": b"// PTX text"}, Path("submission.py"), "tl.*")
    assert machine_code.check_cubins({"0/k.json": b"{}"}, Path("submission.py"), "tl.*") is None


@needs_toolchain
def test_a_cubin_nvdisasm_cannot_read_is_not_passed():
    with pytest.raises(machine_code.CubinUnreadable, match="nvdisasm could not read a built binary"):
        machine_code.disassemble(b"\x7fELF" + bytes(60))


# --- the builder -----------------------------------------------------------------------------

VECTOR_ADD = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()


def _launch(n: int) -> dict:
    def ref(buffer):
        return {"tensor": {"buffer": buffer, "offset": 0, "shape": [n], "stride": [1],
                           "dtype": "float32"}}

    launch = {"op": "launch", "language": "triton", "kernel": "vector_add_kernel",
              "grid": [math.ceil(n / 1024)], "grids": None,
              "args": [ref("input.0"), ref("input.1"), ref("alloc.0"), {"int": n}],
              "kwargs": {"BLOCK_SIZE": {"int": 1024}}}
    return {"steps": [{"op": "alloc", "index": 0, "shape": [n], "stride": [1],
                       "dtype": "float32"}, launch],
            "result": ref("alloc.0")["tensor"], "returned": None}


def _build(tmp_path, monkeypatch, made: bytes):
    """The builder's reply for one launch of the solution's vector add, its compiler
    stood in for by one that makes `made`."""
    monkeypatch.setattr(wing("triton").gpu, "build", lambda kernel, args, kwargs, grid: (
        [{"files": ["0/k.cubin"], "params": []}], {"0/k.json": b"{}", "0/k.cubin": made}))
    path = tmp_path / "submission.py"
    path.write_text(VECTOR_ADD)
    n = 1000
    inputs = {"input.0": torch.randn(n), "input.1": torch.randn(n)}
    geometry = {name: ((n,), (1,), "float32") for name in inputs}
    parsed = proposal.parse(_launch(n), geometry, 1 << 30)
    value, files = binaries.build(kernels.load(path, "triton"), parsed, inputs)
    return value, files, parsed, inputs


@needs_toolchain
def test_the_builder_refuses_a_launch_whose_binary_reads_the_clock(tmp_path, monkeypatch):
    value, _, _, _ = _build(tmp_path, monkeypatch, cubin(tmp_path, "globaltimer"))
    [launch] = value["launches"]
    assert "records" not in launch
    assert launch["error"].startswith("a kernel reads the GPU's clock: its compiled code reads "
                                      "the GPU register SR_GLOBALTIMERLO")


def test_a_launch_whose_binary_cannot_be_read_is_not_graded(tmp_path, monkeypatch):
    monkeypatch.setattr(machine_code, "disassemblers", lambda: [])
    value, files, parsed, inputs = _build(tmp_path, monkeypatch, b"\x7fELF" + bytes(60))
    [launch] = value["launches"]
    assert "records" not in launch and "nvdisasm" in launch["unchecked"]
    store = binaries.Binaries(tmp_path / "folder")
    store.install("key", value, files)
    done = Executor(store.kernels("key", parsed), "cpu").run(parsed, inputs)
    assert done.unchecked and "nvdisasm" in done.unchecked and done.output is None
