"""The grader's replay, in this process: kernels rebuilt from source without running the
file's host code, literal constants, proposals checked before they run, and proposals run.

The replay of whole submissions, in its confined process, is graded by every other test;
these are its parts, fast.
"""

import ast
import math
import re

import pytest
import torch
from conftest import ROOT

from grader.replay import kernels, proposal
from grader.replay.execute import Executor
from grader.replay.source import SourceKernels
from grader.replay.kernels import _is_kernel
from grader.replay.literals import NotData, LiteralReader
from grader.replay.spellings import Aliases
from grader.tracks import wing

VECTOR_ADD = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()


def rebuilt(tmp_path, source: str, track: str = "triton"):
    path = tmp_path / "submission.py"
    path.write_text(source)
    return kernels.load(path, track, interpreted=True)


def test_top_level_host_code_never_runs(tmp_path):
    marker = tmp_path / "ran"
    file = rebuilt(tmp_path, VECTOR_ADD + f"\nopen({str(marker)!r}, 'w').write('host code ran')\n"
                                          "add = vector_add_kernel\n")
    assert not marker.exists()
    assert type(file.namespace["vector_add_kernel"]).__name__ == "InterpretedFunction"
    assert file.namespace["add"] is file.namespace["vector_add_kernel"]  # an alias is kept


def test_a_kernel_rebound_by_host_code_is_not_one_the_replay_runs(tmp_path):
    file = rebuilt(tmp_path, VECTOR_ADD + "\nif True:\n    vector_add_kernel = print\n")
    with pytest.raises(kernels.SourceError, match="binds it by code the grader does not run"):
        file.kernel("vector_add_kernel", "triton")


def test_a_constant_a_kernel_uses_that_is_not_data_is_refused_at_its_line(tmp_path):
    source = VECTOR_ADD.replace("import torch\n", "import torch\nimport os\n"
                                "SCALE = float(os.environ.get('S', '2'))\n")
    source = source.replace("tl.store(out_ptr + offsets, x + y", "tl.store(out_ptr + offsets, "
                            "(x + y) * SCALE")
    with pytest.raises(kernels.SourceError) as found:
        rebuilt(tmp_path, source)
    said = str(found.value)
    line = source.splitlines().index("SCALE = float(os.environ.get('S', '2'))") + 1
    assert f"line {line} of submission.py" in said and "`SCALE` is used by a kernel" in said, said
    assert "os.environ.get" in said, said


def test_a_constant_only_the_wrapper_uses_is_host_code_and_left_out(tmp_path):
    source = VECTOR_ADD.replace("import torch\n", "import torch\nimport os\n"
                                "BLOCK = int(os.environ.get('B', '1024'))\n")
    file = rebuilt(tmp_path, source)
    assert "BLOCK" not in file.namespace
    assert file.skipped["BLOCK"] == source.splitlines().index("import os") + 2


def test_an_autotuner_configuration_names_only_parameters_of_the_kernel(tmp_path):
    """A configuration's dict becomes launch keywords: one naming a compile option that
    reads a file (`ir_override`) would compile another program than the source's."""
    source = VECTOR_ADD.replace(
        "@triton.jit\n", "@triton.autotune(configs=[triton.Config({'ir_override': 'x.ttgir'})],"
        " key=[])\n@triton.jit\n", 1)
    with pytest.raises(kernels.SourceError, match="`ir_override` is not one"):
        rebuilt(tmp_path, source)


def test_a_kernels_namespace_holds_nothing_of_the_host(tmp_path):
    source = VECTOR_ADD.replace("import torch\n", "import torch\nimport os\nimport numpy as np\n"
                                "from os import system\nLIMIT = 64\n")
    file = rebuilt(tmp_path, source)
    ns = file.namespace
    assert {"torch", "os", "np", "system", "vector_add"}.isdisjoint(ns)  # vector_add: host code
    assert ns["LIMIT"] == 64 and ns["tl"].__name__ == "triton.language"
    assert set(ns["__builtins__"]) == {"range", "len", "min", "max", "int", "float", "print"}
    kernel = ns["vector_add_kernel"]
    assert kernel.fn.__globals__ is ns


@pytest.mark.parametrize("decorator, said", [
    ("@triton.heuristics(values={'B': lambda args: 4})", "@triton.heuristics takes functions"),
    ("@triton.autotune(configs=[], key=[], do_bench=print)", "`do_bench=` is not an option"),
    ("@triton.autotune(configs=[triton.Config({'B': 1}, pre_hook=print)], key=[])",
     "`pre_hook=` is not an option"),
    ("@triton.autotune(configs=[triton.Config({'B': max(1, 2, key=print)})], key=[])",
     "`max` takes no keywords"),
    ("@triton.jit(launch_metadata=print)", "`launch_metadata=` is not an option"),
    ("@triton.jit(debug=max(0, 1, key=vector_add))", "`max` takes no keywords"),
    ("@triton.constexpr_function", "a constexpr function runs Python while the kernel compiles"),
])
def test_decorators_with_code_in_them_are_refused_at_their_line(tmp_path, decorator, said):
    source = VECTOR_ADD.replace("@triton.jit\n", decorator + "\n@triton.jit\n", 1)
    with pytest.raises(kernels.SourceError, match=re.escape(said)) as found:
        rebuilt(tmp_path, source)
    line = VECTOR_ADD.splitlines().index("@triton.jit") + 1
    assert f"line {line} of submission.py" in str(found.value)


HEADER = "import math\nimport torch\nimport triton\nimport triton.language as tl\n"


def literal(text: str, track: str = "triton", constants=None):
    aliases = Aliases()
    header = HEADER if track == "triton" else "import math\nimport cuda.tile as ct\n"
    for node in ast.parse(header).body:
        aliases.add(node)
    reader = LiteralReader(aliases, dict(constants or {}), wing(track).reader.spellings)
    return reader.constant(ast.parse(text, mode="eval").body)


def test_constants_are_read_as_data():
    import triton
    import triton.language as tl

    assert literal("2 ** 10 + (3 - 1) * 4") == 1032
    assert literal("math.sqrt(2.0 / math.pi)") == pytest.approx(math.sqrt(2 / math.pi))
    assert literal("(1, 'a', [2.5], None, True)") == (1, "a", (2.5,), None, True)  # lists: tuples
    assert literal("B * 2", constants={"B": 64}) == 128
    assert literal("tl.float16") is tl.float16
    assert literal("tl.constexpr(64)") == tl.constexpr(64)
    config = literal("triton.Config({'BLOCK': 128}, num_warps=4, num_stages=2)")
    assert isinstance(config, triton.Config) and config.kwargs == {"BLOCK": 128}
    assert (config.num_warps, config.num_stages) == (4, 2)
    assert literal("max(1, 2.5, -3)") == 2.5


@pytest.mark.parametrize("text, said", [
    ("max(1, 2, key=f)", "takes no keywords"),  # a function of the file, called while reading
    ("min([f, 1])", "`f` is not a constant of this file"),
    ("tl.constexpr(f)", "`f` is not a constant of this file"),
    ("triton.Config({'B': 1}, pre_hook=f)", "`pre_hook=` is not an option"),
    ("sorted((3, 1), key=f)", "which the grader does not run"),
    ("(lambda: 1)()", "which the grader does not run"),
    ("triton.knobs.runtime.interpret", "is not a constant the grader reads"),
    ("tl.core", "is not a constant the grader reads"),
    ("torch.float16", "is not a constant the grader reads"),
    ("math.__dict__", "is not a constant the grader reads"),
    ("print('hi')", "which the grader does not run"),
    ("__import__('os')", "which the grader does not run"),
    ("10 ** 10 ** 10", "too large"),
    ("1 << 100000", "too large"),
    ("'x' * 10 ** 9", "arithmetic in a constant is on numbers only"),
    ("[x for x in (1, 2)]", "is not a constant the grader reads"),
    ("f'{B}'", "is not a constant the grader reads"),
    ("max(*(1, 2))", "`*` and `**` are not read"),
])
def test_what_is_not_data_is_refused_with_what_to_write(text, said):
    with pytest.raises(NotData, match=re.escape(said)):
        literal(text, constants={"B": 64})


@pytest.mark.parametrize("track, named, not_named", [
    ("triton", ["tl.constexpr(...)", "triton.Config(...)", "tl.float16"], ["ct."]),
    ("cutile", ["ct.ByTarget(...)", "ct.float16"], ["tl.", "triton"]),
])
def test_a_refused_constant_says_what_to_write_in_the_files_own_language(track, named,
                                                                         not_named):
    """The calls a constant may hold are the graded language's own constructors (its reader part's),
    each once, as the file spells them; never another language's."""
    for text in ("sorted((3, 1))", "[x for x in (1, 2)]"):
        with pytest.raises(NotData) as refused:
            literal(text, track)
        said = str(refused.value)
        assert all(n in said for n in named if n.endswith("(...)")), said
        assert not any(n in said for n in not_named), said
        assert "min, max, abs, int, float, round" in said
    with pytest.raises(NotData) as refused:
        literal("[x for x in (1, 2)]", track)
    assert named[-1] in str(refused.value)  # a dtype, spelled as the file spells it


def test_cutile_constants_and_annotations_are_read_by_spelling():
    import cuda.tile as ct

    assert literal("ct.float32", "cutile") is ct.float32
    assert literal("ct.PaddingMode.ZERO", "cutile") is ct.PaddingMode.ZERO
    assert literal("ct.ByTarget(sm_90=4, default=2)", "cutile").__class__ is ct.ByTarget


BODY = VECTOR_ADD.split("    # Step 1:")[0]  # the kernel's `def` line and what is above it


@pytest.mark.parametrize("body, said", [
    ("out_ptr.copy_(x_ptr + y_ptr)", None),  # a method of a value: the front end's to refuse
    ("torch.add(x_ptr, y_ptr, out=out_ptr)", "`torch` is a module of the host"),
    ("if triton.knobs.runtime.interpret:\n        pass", "`triton.knobs` is not part of"),
    ("tl.core.tensor", "`triton.language.core` is not a module a kernel may use"),
    ("tl.extra.module_from_spec(None)", "it belongs to Triton's package loader"),
    ("x = tl.load(x_ptr).handle.data", "`.handle` cannot be used in a kernel"),
    ("getattr(tl, 'core')", "`getattr` is not something a kernel may use"),
    ("import os", "an import inside a kernel"),
    ("tl.load = None", "is assigned inside a kernel"),
    ("helper(x_ptr)", "`helper` is a function of this file without @triton.jit"),
    ("__builtins__", "`__builtins__` is not something a kernel may use"),
    ("open('/etc/passwd')", "`open` is not something a kernel may use"),
    ("'{0.__class__}'.format(x_ptr)", "`.format` cannot be used in a kernel"),
    ("vector_add_kernel.fn", "a kernel of this file is called, never read"),
    ("x_ptr.__class__", "`.__class__` cannot be used in a kernel"),
    ("tl.static_print(FOUR)", None),
    ("t = triton\n    if t.knobs.runtime.interpret:\n        pass", "`triton` is a module"),
    ("m = tl.math\n    m.core", "`tl.math` is a module"),
    ("k = vector_add_kernel", "never kept as a value"),
    ("tl.static_print(vector_add_kernel)", None),  # passed to a call, as a combine function is
])
def test_a_kernel_body_may_name_only_the_kernel_language(tmp_path, body, said):
    source = (HEADER + "FOUR = tl.constexpr(4)\n\n\ndef helper(x):\n    return x\n\n\n"
              "@triton.jit\ndef vector_add_kernel(x_ptr, y_ptr, out_ptr):\n    " + body + "\n")
    if said is None:
        rebuilt(tmp_path, source)
        return
    with pytest.raises(kernels.SourceError, match=re.escape(said)) as found:
        rebuilt(tmp_path, source)
    assert "line 14 of submission.py" in str(found.value)


def test_a_name_rebound_after_its_import_is_no_longer_the_module(tmp_path):
    """`tl = 5` after `import triton.language as tl`: a kernel's `tl.core` is then an
    attribute of a constant, and the namespace must not hand it the module instead."""
    source = (HEADER + "tl = 5\n\n\n@triton.jit\ndef k(x_ptr):\n    y = tl.core\n")
    file = rebuilt(tmp_path, source)
    assert file.namespace["tl"] == 5


@pytest.mark.parametrize("body, said", [
    ("ct.static_eval(__import__('os'))", "`__import__` is not something a kernel may use"),
    ("ct.launch(None, (1,), vector_add_kernel, ())", "`ct.launch` cannot be used in a kernel"),
    ("x.data.add_(1)", None),  # an attribute of a value: the front end's, then the simulator's
    ("ct.compilation.export_kernel", "`cuda.tile.compilation` is not a module a kernel may"),
    ("torch.add(x, y)", "`torch` is a module of the host"),
    ("tile_helper(x)", None),  # an undecorated helper is tile code in cuTile: checked too
    ("host_helper(x)", "`torch` is a module of the host"),
])
def test_a_cutile_kernel_and_its_helpers_may_name_only_cutile(tmp_path, body, said):
    source = ("import torch\nimport cuda.tile as ct\n\n\ndef tile_helper(x):\n    return x\n\n\n"
              "def host_helper(x):\n    return torch.zeros(1)\n\n\n"
              "@ct.kernel\ndef vector_add_kernel(x, y, out):\n    " + body + "\n")
    if said is None:
        file = rebuilt(tmp_path, source, "cutile")
        assert "host_helper" not in file.namespace
        return
    with pytest.raises(kernels.SourceError, match=re.escape(said)):
        rebuilt(tmp_path, source, "cutile")


@pytest.mark.parametrize("stage_file", sorted(p.name for p in (ROOT / "solutions/triton").glob("*.py")))
def test_the_references_are_rebuilt_on_both_tracks(tmp_path, stage_file):
    for track in ("triton", "cutile"):
        names = (ROOT / "solutions" / track).glob(stage_file.split("_")[0] + "_*.py")
        for path in names:
            file = kernels.load(path, track, interpreted=True)
            assert any(_is_kernel(v, track) for v in file.namespace.values()), path


def _proposal(**overrides) -> dict:
    ref = {"buffer": "input.0", "offset": 0, "shape": [8], "stride": [1], "dtype": "float32"}
    data = {"steps": [{"op": "alloc", "index": 0, "shape": [8], "stride": [1],
                       "dtype": "float32"},
                      {"op": "copy", "target": {**ref, "buffer": "alloc.0"}, "source": ref}],
            "result": {**ref, "buffer": "alloc.0"}, "returned": None}
    data.update(overrides)
    return data


INPUTS = {"input.0": ((8,), (1,), "float32")}


def test_a_proposal_within_its_buffers_is_accepted():
    parsed = proposal.parse(_proposal(), INPUTS, 1 << 20)
    assert [type(s).__name__ for s in parsed.steps] == ["Alloc", "Copy"]
    assert parsed.result.buffer == "alloc.0"


@pytest.mark.parametrize("change, said", [
    ({"result": {"buffer": "input.0", "offset": 4, "shape": [8], "stride": [1],
                 "dtype": "float32"}}, "reaches outside input.0"),
    ({"result": {"buffer": "alloc.9", "offset": 0, "shape": [1], "stride": [1],
                 "dtype": "float32"}}, "no earlier step made"),
    ({"steps": [{"op": "alloc", "index": 0, "shape": [1 << 40], "stride": [1],
                 "dtype": "float32"}]}, "more than"),
    ({"steps": [{"op": "exec", "code": "print(1)"}]}, "not a step the grader replays"),
    ({"steps": [{"op": "launch", "language": "triton", "kernel": "k", "grid": [1],
                 "grids": None, "args": [{"object": "x"}], "kwargs": {}}]},
     "not an argument the grader replays"),
])
def test_a_proposal_that_breaks_a_rule_is_refused_before_anything_runs(change, said):
    with pytest.raises(proposal.ProposalError, match=said):
        proposal.parse(_proposal(**change), INPUTS, 1 << 20)


def _launch_proposal(n: int, kernel: str = "vector_add_kernel", kwargs=None, grids=None) -> dict:
    def ref(buffer):
        return {"tensor": {"buffer": buffer, "offset": 0, "shape": [n], "stride": [1],
                           "dtype": "float32"}}

    launch = {"op": "launch", "language": "triton", "kernel": kernel,
              "grid": [math.ceil(n / 1024)], "grids": grids,
              "args": [ref("input.0"), ref("input.1"), ref("alloc.0"), {"int": n}],
              "kwargs": kwargs if kwargs is not None else {"BLOCK_SIZE": {"int": 1024}}}
    return {"steps": [{"op": "alloc", "index": 0, "shape": [n], "stride": [1],
                       "dtype": "float32"}, launch],
            "result": ref("alloc.0")["tensor"], "returned": None}


def _run(file, data: dict, n: int):
    x, y = torch.randn(n), torch.randn(n)
    geometry = {"input.0": ((n,), (1,), "float32"), "input.1": ((n,), (1,), "float32")}
    replay = Executor(SourceKernels(file, frontend=False), "cpu")
    return replay.run(proposal.parse(data, geometry, 1 << 30), {"input.0": x, "input.1": y}), x + y


def test_a_proposal_runs_the_files_kernel_on_the_graders_inputs(tmp_path):
    done, expected = _run(rebuilt(tmp_path, VECTOR_ADD), _launch_proposal(3000), 3000)
    assert done.error is None, done.error
    assert torch.equal(done.output, expected)
    assert done.launches[0].constants["BLOCK_SIZE"] == 1024


def test_an_autotuned_kernel_is_tuned_by_the_replay_from_its_literal_configurations(tmp_path):
    source = VECTOR_ADD.replace(
        "@triton.jit\n",
        "@triton.autotune(configs=[triton.Config({'BLOCK_SIZE': 256}), "
        "triton.Config({'BLOCK_SIZE': 1024})], key=['n_elements'])\n@triton.jit\n", 1)
    file = rebuilt(tmp_path, source)
    assert [c.kwargs["BLOCK_SIZE"] for c in file.namespace["vector_add_kernel"].configs] == [256, 1024]
    # the wrapper's grid function, evaluated in the child for each configuration
    data = _launch_proposal(3000, kwargs={}, grids=[[12], [3]])
    done, expected = _run(file, data, 3000)
    assert done.error is None, done.error
    assert torch.equal(done.output, expected)


@pytest.mark.parametrize("hash_, name", [("../../escape", "0/k.json"), ("abc", "0/../k.json"),
                                         ("abc", "/etc/passwd"), ("abc", "0/.hidden")])
def test_a_built_kernels_record_names_no_file_outside_its_folder(tmp_path, hash_, name):
    """The builder's reply is data from another process: the replay writes its files only
    below its own folder."""
    from grader.languages.triton.binary import TritonBinary

    record = {"hash": hash_, "files": [name], "params": [], "signature": {}}
    with pytest.raises(ValueError, match="outside its folder"):
        TritonBinary(record, {name: torch.zeros(1, dtype=torch.uint8)}, tmp_path)
    assert not any(tmp_path.parent.glob("escape*")) and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signature", [{"x": '*fp32"); abort(); //'}, {"x; y": "*fp32"},
                                       {"x": ["*fp32"]}, {"x": "tensordesc<fp16[64]>{}"}])
def test_a_built_kernels_signature_holds_only_parameter_types_triton_spells(tmp_path,
                                                                            signature):
    """Triton makes a compiled kernel's launcher from its signature (in Triton 3.6, C source
    compiled in the replay): what the builder sent is checked before anything is made."""
    from grader.languages.triton.binary import TritonBinary

    record = {"hash": "abc", "files": ["0/k.json"], "params": [], "signature": signature}
    with pytest.raises(ValueError, match="parameter the grader does not launch"):
        TritonBinary(record, {"0/k.json": torch.zeros(1, dtype=torch.uint8)}, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_parameter_named_in_any_python_identifier_passes_the_check(tmp_path):
    """Only the types reach the launcher's C source: a name Python allows (non-ASCII too)
    is no reason to refuse a kernel; the check gets as far as the files."""
    from grader.languages.triton.binary import TritonBinary

    record = {"hash": "../x", "files": ["0/k.json"], "params": [], "signature": {"αβ": "*fp32"}}
    with pytest.raises(ValueError, match="outside its folder"):
        TritonBinary(record, {"0/k.json": torch.zeros(1, dtype=torch.uint8)}, tmp_path)


def test_the_parameter_types_triton_spells_pass_the_check():
    from grader.languages.triton.binary import _SAFE_TYPE

    for kind in ("*fp32", "*kfp16", "i32", "i64", "u1", "fp8e4nv", "constexpr", "nvTmaDesc",
                 "tensordesc<bf16[64, 64]>", "tensordesc<fp16[128, 64],NVMMASharedLayout()>"):
        assert _SAFE_TYPE.fullmatch(kind), kind


class _FakeBinary:
    """Stands in for a loaded cubin on the CPU: it adds, as the kernel it was built from."""

    def __init__(self, record, files, folder):
        assert files[record["files"][0]].numpy().tobytes() == b"cubin"
        self.record = record

    def launch(self, grid, args, kwargs):
        args[2].copy_(args[0] + args[1])


def test_what_the_builder_makes_is_installed_and_launched_by_its_record(tmp_path, monkeypatch):
    """The GPU path's plumbing, on the CPU with a stand-in compiler and loader: the builder's
    reply (JSON records, files as bytes) is all the replay gets, and it launches through it;
    a launch option that would change the program is refused by the builder, at its step."""
    from grader.languages.triton import binary
    from grader.replay import binaries

    built = []

    def fake_build(kernel, args, kwargs, grid):
        built.append(kernel.fn.__name__)
        return [{"files": ["0/k.cubin"], "params": []}], {"0/k.cubin": b"cubin"}

    monkeypatch.setattr(wing("triton").gpu, "build", fake_build)
    monkeypatch.setattr(binary, "TritonBinary", _FakeBinary)
    # The stand-in's cubin is no machine code: its read is tests/replay/test_machine_code.py's.
    monkeypatch.setattr(binaries.machine_code, "check_cubins", lambda files, source, api: None)
    path = tmp_path / "submission.py"
    path.write_text(VECTOR_ADD)
    file = kernels.load(path, "triton")
    n = 3000
    x, y = torch.randn(n), torch.randn(n)
    inputs = {"input.0": x, "input.1": y}
    geometry = {name: ((n,), (1,), "float32") for name in inputs}
    data = _launch_proposal(n)
    parsed = proposal.parse(data, geometry, 1 << 30)
    value, files = binaries.build(file, parsed, inputs)
    assert built == ["vector_add_kernel"] and value["launches"][0]["names"][:3] == \
        ["x_ptr", "y_ptr", "out_ptr"]
    store = binaries.Binaries(tmp_path / "folder")
    key = binaries.proposal_key(data)
    store.install(key, value, files)
    done = Executor(store.kernels(key, parsed), "cpu").run(parsed, inputs)
    assert done.error is None and torch.equal(done.output, x + y)
    assert done.launches[0].constants["BLOCK_SIZE"] == 1024

    data = _launch_proposal(n, kwargs={"BLOCK_SIZE": {"int": 1024},
                                       "ir_override": {"str": "x.ttgir"}})
    value, _ = binaries.build(file, proposal.parse(data, geometry, 1 << 30), inputs)
    assert "`ir_override=` is not a launch option" in value["launches"][0]["error"]
