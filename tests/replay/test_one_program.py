"""One program on the CPU: what a kernel sees of a constant cannot change while kernels
run, reading a literal costs little whatever it says, each launch is compiled with its own
options, and every configuration of an autotuned launch is run (grader.replay.literals,
grader.replay.bodies, grader.languages.triton.frontend, grader.replay.variants)."""

from __future__ import annotations

import ast
import dataclasses

import pytest
import torch
from conftest import ROOT

from grader.languages.triton.frontend import front_end_check
from grader.replay import kernels, proposal, variants
from grader.replay.execute import Executor
from grader.replay.literals import LiteralReader, changeable, costly
from grader.replay.source import SourceKernels
from grader.tracks import wing

VECTOR_ADD = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()


def rebuilt(tmp_path, source: str, track: str = "triton"):
    path = tmp_path / "submission.py"
    path.write_text(source)
    return kernels.load(path, track, interpreted=True)


def with_constant(assignment: str, body_line: str) -> str:
    """The reference vector add with a constant above it and one line more in its body."""
    source = VECTOR_ADD.replace("import triton.language as tl\n",
                                f"import triton.language as tl\n\n{assignment}\n", 1)
    return source.replace("    pid = tl.program_id(axis=0)\n",
                          f"    pid = tl.program_id(axis=0)\n    {body_line}\n", 1)


@pytest.mark.parametrize("value, why", [
    ("64", None), ("'name'", None), ("(1, 2.5, None, True)", None), ("tl.float16", None),
    ("tl.constexpr(64)", None), ("tl.constexpr((1, tl.float32))", None), ("[1, 2]", None),
    ("{'a': 1}", "a dict"), ("tl.constexpr({})", "a dict"), ("(1, {'a': 1})", "a dict"),
    ("triton.Config({'B': 64})", "a Config"),
])
def test_what_a_kernel_may_see_of_a_constant_cannot_change(value, why):
    import triton  # noqa: F401 - the spellings below name it

    table = wing("triton").reader.spellings
    aliases = kernels.Aliases({"triton": "triton", "tl": "triton.language"})
    read = LiteralReader(aliases, {}, table).constant(ast.parse(value, mode="eval").body)
    assert changeable(read, table) == why


@pytest.mark.parametrize("assignment, body_line, said", [
    ("S = tl.constexpr({})", "a = S.value", "`S` (line {line}) holds a dict, which a kernel could "
                                            "change while it runs"),
    ("S = {'start': 0}", "a = S", "`S` (line {line}) holds a dict"),
    ("S = (1, 2)", "a = S.count(1)", "`S.count(1)` calls a method of the constant `S`"),
    ("S = tl.constexpr((1, 2))", "a = S.value.index(1)", "calls a method of the constant `S`"),
    ("S = (1, 2)", "S[0] = pid", "`S[0]` is stored into the constant `S`"),
])
def test_a_kernel_never_changes_a_constant(tmp_path, assignment, body_line, said):
    source = with_constant(assignment, body_line)
    line = source.splitlines().index(assignment) + 1
    with pytest.raises(kernels.SourceError, match="refused|holds|calls|stored") as found:
        rebuilt(tmp_path, source)
    assert said.format(line=line) in str(found.value), str(found.value)


def test_a_dict_a_decorator_reads_stays_data(tmp_path):
    """A dict is data where a decorator reads it (triton.Config's values), and a constant a
    kernel never names may hold one: only what a kernel sees is frozen."""
    source = VECTOR_ADD.replace("@triton.jit\n", "@triton.autotune(configs=[triton.Config("
                                "{'BLOCK_SIZE': 256})], key=[])\n@triton.jit\n", 1)
    source = source.replace("import triton.language as tl\n",
                            "import triton.language as tl\nLOOKUP = {'a': 1}\n", 1)
    file = rebuilt(tmp_path, source)
    assert "LOOKUP" not in file.namespace  # never in a kernel's namespace


@pytest.mark.parametrize("decorator, said", [
    ("@triton.autotune(configs=[triton.Config({'BLOCK_SIZE': {}})], key=[])",
     "triton.Config's value of `BLOCK_SIZE` is a dict"),
])
def test_a_configuration_a_kernel_sees_is_frozen(tmp_path, decorator, said):
    source = VECTOR_ADD.replace("@triton.jit\n", f"{decorator}\n@triton.jit\n", 1)
    with pytest.raises(kernels.SourceError, match=said):
        rebuilt(tmp_path, source)


def test_a_default_a_kernel_sees_is_frozen(tmp_path):
    source = VECTOR_ADD.replace("BLOCK_SIZE: tl.constexpr)", "BLOCK_SIZE: tl.constexpr, "
                                "STATE: tl.constexpr = tl.constexpr({}))", 1)
    with pytest.raises(kernels.SourceError, match=r"`tl.constexpr\(\{\}\)` holds a dict"):
        rebuilt(tmp_path, source)


@pytest.mark.parametrize("text, costs", [
    ("round(1, -(1 << 4000))", "round's digits are at most 1300"),
    ("x = round(10 ** 100, -50)", None),
    ("y = 2 ** 5000", "this power is too large"),
    ("z = 1 << 5000", "this shift is too large"),
    ("n = 2 ** 40; m = n ** n", None),  # names: Python computes it, under the time limit
    ("print(round(1.5, 10 ** 30))", None),  # a float rounds at once (an error, at once)
])
def test_literals_that_would_compute_without_end_are_found_before_anything_runs(text, costs):
    found = costly(ast.parse(text))
    assert bool(found) == bool(costs), found and found.why
    if costs:
        assert costs in found.why and found.line == 1


def test_the_compiler_is_given_the_launchs_own_options(tmp_path):
    fn = rebuilt(tmp_path, VECTOR_ADD).namespace["vector_add_kernel"].fn
    x = torch.zeros(16)
    names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    bound = dict(zip(names, [x, x, x, 16, 16]))
    sub = tmp_path / "submission.py"
    assert front_end_check("vector_add_kernel", fn, bound, sub, options={"num_warps": 4}) is None
    refused = front_end_check("vector_add_kernel", fn, bound, sub, options={"num_warps": 3})
    launch = next(n for n, text in enumerate(VECTOR_ADD.splitlines(), 1)
                  if "vector_add_kernel[" in text)
    assert refused.startswith(f"line {launch} (")
    assert "num_warps=3" in refused and "num_warps must be a power of 2" in refused


AUTOTUNED = VECTOR_ADD.replace(
    "@triton.jit\n", "@triton.autotune(configs=[triton.Config({'BLOCK_SIZE': 1024}),\n"
    "                          triton.Config({'BLOCK_SIZE': 256}, num_warps=2)],\n"
    "                 key=['n_elements'])\n@triton.jit\n", 1)


def _autotuned_proposal(n: int, grids) -> dict:
    def ref(buffer):
        return {"tensor": {"buffer": buffer, "offset": 0, "shape": [n], "stride": [1],
                           "dtype": "float32"}}

    launch = {"op": "launch", "language": "triton", "kernel": "vector_add_kernel",
              "grid": grids[0], "grids": grids,
              "args": [ref("input.0"), ref("input.1"), ref("alloc.0"), {"int": n}], "kwargs": {}}
    return {"steps": [{"op": "alloc", "index": 0, "shape": [n], "stride": [1],
                       "dtype": "float32"}, launch],
            "result": ref("alloc.0")["tensor"], "returned": None}


@pytest.mark.parametrize("grids, right", [
    ([[1], [4]], (True, True)),  # a grid per configuration: right under each
    ([[1], [1]], (True, False)),  # fixed for BLOCK_SIZE 1024: 256 leaves 768 unwritten
])
def test_each_configuration_runs_with_its_own_grid(tmp_path, grids, right):
    file = rebuilt(tmp_path, AUTOTUNED)
    data = _autotuned_proposal(1000, grids)
    assert variants.count(data) == 2 and variants.autotuned(data) == ["vector_add_kernel"]
    geometry = {"input.0": ((1000,), (1,), "float32"), "input.1": ((1000,), (1,), "float32")}
    parsed = proposal.parse(data, geometry, 1 << 30)
    x, y = torch.randn(1000), torch.randn(1000)
    replay = Executor(SourceKernels(file, frontend=False), "cpu")
    for index, expected in enumerate(right):
        chosen = variants.variant(parsed, index)
        assert [s.configuration for s in chosen.launches] == [index]
        done = replay.run(chosen, {"input.0": x, "input.1": y})
        assert done.error is None, done.error
        assert torch.equal(done.output, x + y) == expected


def test_a_configuration_is_named_with_its_line(tmp_path):
    path = tmp_path / "submission.py"
    path.write_text(AUTOTUNED)
    line = next(n for n, text in enumerate(AUTOTUNED.splitlines(), 1) if "256" in text)
    said = variants.described(path, ["vector_add_kernel"], 1, 2)
    assert said == (f"configuration 2 of 2 of vector_add_kernel, line {line}: "
                    "`triton.Config({'BLOCK_SIZE': 256}, num_warps=2)`")
    assert variants.variant(dataclasses.replace(proposal.Proposal()), None).steps == []



def test_a_long_chain_of_literals_is_read_once_without_deep_recursion():
    """Each node read once, the deepest first: a 900-term sum (past Python's recursion limit
    for a reader that recurses from the top) is read at once, and a costly literal at its
    end is still found."""
    import time

    start = time.perf_counter()
    assert costly(ast.parse("x = " + " + ".join(["1"] * 900))) is None
    found = costly(ast.parse("x = " + " + ".join(["1"] * 900) + " + 2 ** 5000"))
    assert found is not None and "this power is too large" in found.why
    assert time.perf_counter() - start < 5


def test_an_autotuned_launch_gives_one_grid_per_configuration(tmp_path):
    """A proposal made otherwise than by the child's recorder may give fewer grids than the
    autotuner has configurations, or grids to a plain kernel: refused, on the CPU as by the
    GPU's builder (grader.replay.variants.grids_given)."""
    from grader.replay.proposal import Launch

    launch = Launch("triton", "k", (1,), grids=((1,),))
    assert variants.grids_given(launch, 1) is None
    assert "gives grids for 1 configurations; its @triton.autotune has 2" in \
        variants.grids_given(launch, 2)
    assert "it is not autotuned" in variants.grids_given(launch, 0)
    assert variants.grids_given(Launch("triton", "k", (1,)), 0) is None
