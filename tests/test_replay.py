"""The grader's replay, in this process: kernels rebuilt from source without running the
file's host code, literal constants, proposals checked before they run, and proposals run.

The replay of whole submissions, in its confined process, is graded by every other test;
these are its parts, fast.
"""

import ast
import math

import pytest
import torch
from conftest import ROOT

from grader.replay import kernels, proposal
from grader.replay.execute import Replay
from grader.replay.literals import Literal, NotLiteral

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


def test_a_name_bound_by_skipped_code_is_explained(tmp_path):
    source = VECTOR_ADD.replace("import torch\n", "import torch\nimport os\nSCALE = float(os.environ.get('S', '2'))\n")
    file = rebuilt(tmp_path, source)
    explained = file.explain("NameError: name 'SCALE' is not defined")
    assert explained and "`SCALE` is bound at line" in explained and "plain literals" in explained
    assert file.explain("NameError: name 'other' is not defined") is None


def test_a_kernel_that_is_not_a_top_level_kernel_is_refused_by_name(tmp_path):
    file = rebuilt(tmp_path, VECTOR_ADD)
    with pytest.raises(kernels.SourceError, match="not a kernel defined at the top level"):
        file.kernel("vector_add", "triton")  # the wrapper, not a kernel


@pytest.mark.parametrize("decorator, said", [
    ("@triton.heuristics(values={'B': lambda args: 4})", "@triton.heuristics takes functions"),
    ("@triton.autotune(configs=[], key=[], do_bench=print)", "`do_bench=` is not an option"),
    ("@triton.jit(launch_metadata=print)", "`launch_metadata=` is not an option"),
])
def test_decorators_with_code_in_them_are_refused_at_their_line(tmp_path, decorator, said):
    source = VECTOR_ADD.replace("@triton.jit\n", decorator + "\n@triton.jit\n", 1)
    with pytest.raises(kernels.SourceError, match=said) as found:
        rebuilt(tmp_path, source)
    assert "line " in str(found.value)


def literal(text: str, ns=None):
    return Literal({"math": math, **(ns or {})}).value(ast.parse(text, mode="eval").body)


def test_literals_are_evaluated_without_eval():
    assert literal("2 ** 10 + (3 - 1) * 4") == 1032
    assert literal("math.sqrt(2.0 / math.pi)") == pytest.approx(math.sqrt(2 / math.pi))
    assert literal("(1, 'a', [2.5])") == (1, "a", [2.5])
    assert literal("B * 2", {"B": 64}) == 128


@pytest.mark.parametrize("text", ["10 ** 10 ** 10", "1 << 100000", "'x' * 10 ** 9",
                                  "print('hi')", "__import__('os')", "math.__dict__", "f(1)"])
def test_what_is_not_a_small_literal_is_refused(text):
    with pytest.raises(NotLiteral):
        literal(text, {"f": lambda x: x})


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
    replay = Replay(file, "cpu", frontend=False)
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
